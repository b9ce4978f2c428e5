"""The package's layout is its pipeline, and lint-imports holds the flow.

The root holds only the public API files and one package per stage; every stage package
has a place in the layers (a package missing from them would be free to import anything),
introduces itself in its ``__init__`` docstring and lists its public names in ``__all__``;
the later stages never import the runner (docs/architecture.md)."""

from __future__ import annotations

import re
import subprocess
import sys
import tomllib
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parent.parent
PACKAGE = ROOT / "deonticbench"


def _contracts() -> list[dict[str, object]]:
    config = tomllib.loads((ROOT / "pyproject.toml").read_text(encoding="utf-8"))
    contracts: list[dict[str, object]] = config["tool"]["importlinter"]["contracts"]
    return contracts


def _top_level_modules() -> set[str]:
    names = {p.stem for p in PACKAGE.glob("*.py") if p.name != "__init__.py"}
    names |= {p.parent.name for p in PACKAGE.glob("*/__init__.py")}
    return {f"deonticbench.{name}" for name in names}


ROOT_FILES = {"__init__.py", "__main__.py", "api.py", "errors.py", "_paths.py", "py.typed"}
NOT_STAGES = {"cli", "resources", "_share"}


def test_the_root_holds_only_the_api_files_and_stage_packages() -> None:
    files = {p.name for p in PACKAGE.iterdir() if p.is_file()}
    assert files <= ROOT_FILES, f"modules at the package root: {sorted(files - ROOT_FILES)}"
    folders = {p.name for p in PACKAGE.iterdir() if p.is_dir() and p.name != "__pycache__"}
    assert not {f for f in folders - NOT_STAGES if not (PACKAGE / f / "__init__.py").exists()}


def _stage_packages() -> list[Path]:
    return sorted(
        p.parent for p in PACKAGE.glob("*/__init__.py") if p.parent.name not in NOT_STAGES
    )


def test_each_stage_introduces_itself_and_lists_its_public_names() -> None:
    import ast

    for package in _stage_packages():
        tree = ast.parse((package / "__init__.py").read_text(encoding="utf-8"))
        doc = ast.get_docstring(tree) or ""
        assert len(doc.split()) >= 20, f"{package.name}/__init__.py: say the stage's job"
        names = [
            node
            for node in tree.body
            if (
                isinstance(node, ast.Assign)
                and any(isinstance(t, ast.Name) and t.id == "__all__" for t in node.targets)
            )
            or (
                isinstance(node, ast.AnnAssign)
                and isinstance(node.target, ast.Name)
                and node.target.id == "__all__"
            )
        ]
        assert names, f"{package.name}/__init__.py has no __all__"


FACE_LINES = 200
"""A package's ``__init__`` (its face) stays under this many lines: it introduces the
package and hands its names on, and what grows past that is a module's work."""


def test_every_package_face_stays_under_200_lines() -> None:
    long = {
        str(face.relative_to(ROOT)): lines
        for face in PACKAGE.rglob("__init__.py")
        if (lines := len(face.read_text(encoding="utf-8").splitlines())) >= FACE_LINES
    }
    assert not long, (
        f"package faces of {FACE_LINES} lines or more (move what is not face into a module "
        f"of the package): {long}"
    )


APP_NAMES = {
    ("reading/dar_verifier.py", "DAR_MOUNT"),
    ("integrations/harbor/verifier.py", "TASK_WORKDIR"),
    ("integrations/harbor/environment.py", "FALLBACK_WORKDIR"),
}
"""``/app`` means three things, each with one name: where DAR's tasks mount the agent's
workspace, the harness's own Harbor tasks' working directory, and where a Harbor task
that names none works."""
_APP = re.compile(r"(?<![\w.-])/app(?![\w-])")


@pytest.mark.slow
def test_app_has_one_name_per_meaning_and_is_imported_where_used() -> None:
    """Code (docstrings aside) spells ``/app`` only where one of ``APP_NAMES`` is
    defined; everywhere else it imports the name that says which ``/app`` it means."""
    import ast

    defined: set[tuple[str, str]] = set()
    strays: list[str] = []
    for path in sorted(PACKAGE.rglob("*.py")):
        module = path.relative_to(PACKAGE).as_posix()
        tree = ast.parse(path.read_text(encoding="utf-8"))
        docs = {
            id(node.value)
            for node in ast.walk(tree)
            if isinstance(node, ast.Expr) and isinstance(node.value, ast.Constant)
        }
        named = {
            id(node.value): target.id
            for node in ast.walk(tree)
            if isinstance(node, ast.Assign)
            for target in node.targets
            if isinstance(target, ast.Name)
        }
        for node in ast.walk(tree):
            if not isinstance(node, ast.Constant) or not isinstance(node.value, str):
                continue
            if id(node) in docs or not _APP.search(node.value):
                continue
            if node.value == "/app" and id(node) in named:
                defined.add((module, named[id(node)]))
            else:
                strays.append(f"{module}:{node.lineno}: {node.value[:60]!r}")
    assert not strays, f"/app spelled out instead of named: {strays}"
    assert defined == APP_NAMES


def test_no_output_stage_imports_the_runner() -> None:
    contracts = {c["name"]: c for c in _contracts()}
    (guard,) = [
        c
        for c in contracts.values()
        if "deonticbench.evaluation" in c.get("source_modules", [])  # type: ignore[operator]
    ]
    assert "deonticbench.agents" in guard["source_modules"]  # type: ignore[operator]
    assert guard["type"] == "forbidden"
    (layers,) = [c for c in _contracts() if c["type"] == "layers"]
    order = [str(layer) for layer in layers["layers"]]  # type: ignore[attr-defined]
    position = {part.strip(): i for i, layer in enumerate(order) for part in layer.split("|")}
    for later in ("scoring", "analysis", "report", "rewards", "export"):
        assert position[f"deonticbench.{later}"] > position["deonticbench.evaluation"], later
        assert position[f"deonticbench.{later}"] > position["deonticbench.agents"], later


def test_the_store_and_every_stage_below_prompting_are_forbidden_to_import_it() -> None:
    """The layers put the store above prompting, so only a forbidden contract keeps it
    from importing prompting (a function-level import too: lint-imports reads those);
    the contract names the store and every stage the layers put below prompting."""
    (layers,) = [c for c in _contracts() if c["type"] == "layers"]
    order = [str(layer) for layer in layers["layers"]]  # type: ignore[attr-defined]
    position = {part.strip(): i for i, layer in enumerate(order) for part in layer.split("|")}
    below = {m for m, i in position.items() if i > position["deonticbench.prompting"]}
    guards = [
        c
        for c in _contracts()
        if c["type"] == "forbidden" and c["forbidden_modules"] == ["deonticbench.prompting"]
    ]
    assert guards, "no contract forbids prompting to the store and the stages below it"
    (guard,) = guards
    assert set(guard["source_modules"]) == {"deonticbench.store", *below}  # type: ignore[arg-type]


def test_every_module_has_a_layer() -> None:
    (layers,) = [c for c in _contracts() if c["type"] == "layers"]
    listed: set[str] = set()
    for layer in layers["layers"]:  # type: ignore[attr-defined]
        for part in str(layer).replace(":", "|").split("|"):
            listed.add(part.strip())
    missing = _top_level_modules() - listed
    assert not missing, f"modules without a layer in pyproject.toml: {sorted(missing)}"


def test_the_supervisor_may_import_no_module_of_the_package() -> None:
    (forbidden,) = [
        c
        for c in _contracts()
        if "deonticbench.solver.supervisor" in c.get("source_modules", [])  # type: ignore[operator]
    ]
    # Every module of the supervisor's package is a source of the contract...
    own = {"deonticbench.solver.supervisor"} | {
        f"deonticbench.solver.supervisor.{p.stem}"
        for p in (PACKAGE / "solver" / "supervisor").glob("*.py")
        if p.stem != "__init__"
    }
    assert set(forbidden["source_modules"]) == own  # type: ignore[arg-type]
    # ...and every other module of the package is forbidden to it.
    solver = {f"deonticbench.solver.{p.stem}" for p in (PACKAGE / "solver").glob("*.py")}
    expected = (_top_level_modules() - {"deonticbench.solver"}) | (
        solver - {"deonticbench.solver.__init__"}
    )
    listed = set(forbidden["forbidden_modules"])  # type: ignore[arg-type]
    assert listed == expected, (
        "the supervisor's forbidden list in pyproject.toml must name every module of the "
        f"package: add {sorted(expected - listed)}, drop {sorted(listed - expected)}"
    )


def test_lint_imports_keeps_every_contract() -> None:
    lint = Path(sys.executable).with_name("lint-imports")
    done = subprocess.run(
        [str(lint), "--no-cache"], cwd=ROOT, capture_output=True, text=True, timeout=120
    )
    assert done.returncode == 0, done.stdout[-3000:] + done.stderr[-2000:]
    assert "0 broken" in done.stdout


def test_validate_starts_without_the_runner_the_agents_or_the_dry_run() -> None:
    """``evaluation`` imports its heavier modules on first use: validate's start-up is
    part of what benchmarks/executor.py compares with a plain swipl loop."""
    heavy = ("deonticbench.evaluation.runner", "deonticbench.evaluation.dryrun",
             "deonticbench.agents", "deonticbench.models")  # fmt: skip
    code = (
        "import sys, deonticbench.cli.validate_cmd\n"
        f"print(sorted(m for m in sys.modules if m.startswith({heavy!r})))"
    )
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=60)
    assert done.returncode == 0, done.stderr
    assert done.stdout.strip() == "[]"


def test_every_public_name_of_a_lazy_stage_resolves() -> None:
    import types

    from deonticbench import evaluation

    for name in evaluation.__all__:
        assert not isinstance(getattr(evaluation, name), types.ModuleType), name


def _import_graph() -> dict[str, set[str]]:
    """Module -> the package's modules it imports, read from the source with ``ast``:
    every ``import`` and ``from ... import`` anywhere in the module (inside functions
    too, where a cycle hides from a reader and from start-up), except under ``if
    TYPE_CHECKING:`` (never run).  Relative imports are resolved, and ``from package
    import name`` is an edge to the submodule when ``name`` is one.  An edge goes to the
    module named, not to its parent packages: Python runs a parent's ``__init__`` first,
    but a package re-exporting its own modules is not a cycle."""
    import ast

    def name_of(path: Path) -> str:
        parts = path.relative_to(ROOT).with_suffix("").parts
        return ".".join(parts[:-1] if parts[-1] == "__init__" else parts)

    modules = {name_of(p): p for p in PACKAGE.rglob("*.py")}

    def type_checking(test: ast.expr) -> bool:
        return (isinstance(test, ast.Name) and test.id == "TYPE_CHECKING") or (
            isinstance(test, ast.Attribute) and test.attr == "TYPE_CHECKING"
        )

    def imports(tree: ast.AST) -> list[ast.Import | ast.ImportFrom]:
        found: list[ast.Import | ast.ImportFrom] = []
        stack: list[ast.AST] = [tree]
        while stack:
            node = stack.pop()
            if isinstance(node, ast.If) and type_checking(node.test):
                stack.extend(node.orelse)
                continue
            if isinstance(node, ast.Import | ast.ImportFrom):
                found.append(node)
            stack.extend(ast.iter_child_nodes(node))
        return found

    graph: dict[str, set[str]] = {}
    for module, path in modules.items():
        package = module if path.name == "__init__.py" else module.rpartition(".")[0]
        edges: set[str] = set()
        for node in imports(ast.parse(path.read_text(encoding="utf-8"))):
            if isinstance(node, ast.Import):
                targets = [alias.name for alias in node.names]
            else:
                if node.level:
                    parts = package.split(".")
                    base = ".".join(parts[: len(parts) - node.level + 1])
                    base = f"{base}.{node.module}" if node.module else base
                else:
                    base = node.module or ""
                targets = [
                    f"{base}.{alias.name}" if f"{base}.{alias.name}" in modules else base
                    for alias in node.names
                ]
            for target in targets:
                while target and target not in modules:  # a name inside a module
                    target = target.rpartition(".")[0]
                if target and target != module:
                    edges.add(target)
        graph[module] = edges
    return graph


def _strongly_connected(graph: dict[str, set[str]]) -> list[list[str]]:
    """Tarjan's strongly connected components, iteratively (no recursion limit)."""
    index: dict[str, int] = {}
    low: dict[str, int] = {}
    stack: list[str] = []
    on_stack: set[str] = set()
    components: list[list[str]] = []
    for root in sorted(graph):
        if root in index:
            continue
        work = [(root, iter(sorted(graph[root])))]
        index[root] = low[root] = len(index)
        stack.append(root)
        on_stack.add(root)
        while work:
            node, successors = work[-1]
            step = next(successors, None)
            if step is not None:
                if step not in index:
                    index[step] = low[step] = len(index)
                    stack.append(step)
                    on_stack.add(step)
                    work.append((step, iter(sorted(graph[step]))))
                elif step in on_stack:
                    low[node] = min(low[node], index[step])
                continue
            work.pop()
            if work:
                low[work[-1][0]] = min(low[work[-1][0]], low[node])
            if low[node] == index[node]:
                component = []
                while True:
                    member = stack.pop()
                    on_stack.discard(member)
                    component.append(member)
                    if member == node:
                        break
                components.append(sorted(component))
    return components


@pytest.mark.slow
def test_no_module_imports_itself_back_even_from_inside_a_function() -> None:
    graph = _import_graph()
    assert "deonticbench.reliability.signals" in graph  # the graph did read the package
    cycles = [c for c in _strongly_connected(graph) if len(c) > 1]
    assert not cycles, "import cycles (imports inside functions count): " + "; ".join(
        " <-> ".join(c) for c in cycles
    )


def _unexplained_function_imports() -> list[str]:
    """Each ``import`` inside a function of the package with no ``#`` comment on its
    lines or on the line just above, as ``path:line``: an import left inside a function
    must say why (start-up time, an optional extra), since a cycle can hide there too.
    One comment may explain a block: an import right below an explained one is
    explained."""
    import ast
    import io
    import tokenize

    found = []
    for path in sorted(PACKAGE.rglob("*.py")):
        source = path.read_text(encoding="utf-8")
        comments = {
            token.start[0]
            for token in tokenize.generate_tokens(io.StringIO(source).readline)
            if token.type == tokenize.COMMENT
        }
        tree = ast.parse(source)
        for function in ast.walk(tree):
            if not isinstance(function, ast.FunctionDef | ast.AsyncFunctionDef):
                continue
            explained_up_to = -1  # the last line of the latest explained import
            for node in sorted(
                (n for n in ast.walk(function) if isinstance(n, ast.Import | ast.ImportFrom)),
                key=lambda n: n.lineno,
            ):
                end = node.end_lineno or node.lineno
                if comments & set(range(node.lineno - 1, end + 1)) or (
                    explained_up_to == node.lineno - 1
                ):
                    explained_up_to = end
                else:
                    found.append(f"{path.relative_to(ROOT)}:{node.lineno}")
    return sorted(set(found), key=lambda s: (s.rpartition(":")[0], int(s.rpartition(":")[2])))


@pytest.mark.slow
def test_every_import_inside_a_function_says_why() -> None:
    unexplained = _unexplained_function_imports()
    assert not unexplained, (
        "imports inside functions without a one-line reason (a `#` comment on the line or "
        "just above: start-up time, an optional extra; an import that only avoids a cycle "
        "should instead remove the cycle):\n" + "\n".join(unexplained)
    )


CONFIG_READERS = {"CONFIG_NAME", "read_config", "read_config_forgiving"}
"""What opening a run folder's config.json takes: its file name or the store's readers."""


def _opens_config(source: str) -> list[int]:
    """Lines of ``source`` that name config.json's file (a string literal, not prose in a
    docstring or comment) or the store's config readers."""
    import ast

    lines = []
    tree = ast.parse(source)
    # Harbor's job and trial folders hold a settings file of the same name; the one
    # constant naming it is not a run folder's config.json.
    foreign = {
        id(node.value)
        for node in ast.walk(tree)
        if isinstance(node, ast.Assign)
        and [getattr(t, "id", None) for t in node.targets] == ["HARBOR_CONFIG"]
    }
    for node in ast.walk(tree):
        if (
            isinstance(node, ast.Constant)
            and node.value == "config.json"
            and id(node) not in foreign
        ):
            lines.append(node.lineno)
        elif isinstance(node, ast.Name | ast.alias) and (
            getattr(node, "id", None) in CONFIG_READERS
            or getattr(node, "name", None) in CONFIG_READERS
        ):
            lines.append(getattr(node, "lineno", 0))
    return lines


@pytest.mark.slow
def test_only_the_store_opens_a_run_folders_config() -> None:
    # One way to open a run folder: every later stage takes the loaded run
    # (``store.read_run``) or asks the store, never reads config.json itself.
    found = []
    for path in sorted(PACKAGE.rglob("*.py")):
        if path.relative_to(PACKAGE).parts[0] == "store":
            continue
        found += [f"{path.relative_to(ROOT)}:{n}" for n in _opens_config(path.read_text())]
    assert not found, f"modules outside store/ that open config.json: {found}"
    # The check itself can fail: it sees a module that reads the file by name.
    assert _opens_config('import json\njson.loads(open(folder / "config.json").read())\n')
    assert _opens_config("from ..store.config import CONFIG_NAME\n")
    assert not _opens_config('HARBOR_CONFIG = "config.json"\n')
    assert _opens_config('HARBOR = "config.json"\n')


JUDGING_PATH_EXEMPT = {"deonticbench/prompting/render.py"}
"""The few-shot exemplar renderer shows a reference program in the shape reading gives a
model's program, before any model replied: it prepares, it does not judge."""


def _extraction_names() -> set[str]:
    """What extracting or preparing a program takes: every public name of
    ``reading.programs`` (the harness's rules) and the paper reader's extraction and
    repair, read from their source."""
    import ast

    names: set[str] = set()
    paper = {"extract_prolog_block", "repair_entrypoint"}
    for module, only in (("programs", None), ("paper", paper)):
        tree = ast.parse((PACKAGE / "reading" / f"{module}.py").read_text(encoding="utf-8"))
        names.update(
            node.name
            for node in tree.body
            if isinstance(node, ast.FunctionDef | ast.ClassDef)
            and not node.name.startswith("_")
            and (only is None or node.name in only)
        )
    return names


def _imports_of_extraction(source: str, forbidden: set[str]) -> list[str]:
    """``name (line)`` for each extraction or preparation name ``source`` imports from
    reading (its package face or its modules), and each import of ``reading.programs``."""
    import ast

    found = []
    for node in ast.walk(ast.parse(source)):
        if isinstance(node, ast.ImportFrom):
            parts = (node.module or "").split(".")
            if "reading" not in parts:
                continue
            whole_module = parts[-2:] == ["reading", "programs"]
            found += [
                f"{alias.name} ({node.lineno})"
                for alias in node.names
                if whole_module or alias.name in forbidden or alias.name == "programs"
            ]
        elif isinstance(node, ast.Import):
            found += [
                f"{alias.name} ({node.lineno})"
                for alias in node.names
                if alias.name.endswith("reading.programs")
            ]
    return found


@pytest.mark.slow
def test_only_reading_extracts_or_prepares_a_program() -> None:
    # One judging path: every front door judges through
    # ``reading.judging``; no other stage extracts or prepares a program itself.
    forbidden = _extraction_names()
    assert {"extract_program", "prepare_program", "unwrap_fenced"} <= forbidden
    found = []
    for path in sorted(PACKAGE.rglob("*.py")):
        relative = path.relative_to(ROOT).as_posix()
        if path.relative_to(PACKAGE).parts[0] == "reading" or relative in JUDGING_PATH_EXEMPT:
            continue
        source = path.read_text(encoding="utf-8")
        found += [f"{relative}: {hit}" for hit in _imports_of_extraction(source, forbidden)]
    assert not found, "modules outside reading/ that extract or prepare a program:\n" + (
        "\n".join(found)
    )
    # The check itself can fail: it sees each way of importing the rules.
    assert _imports_of_extraction("from ..reading.programs import has_fence\n", forbidden)
    assert _imports_of_extraction("from deonticbench.reading import extract_program\n", forbidden)
    assert _imports_of_extraction("from ...reading import programs\n", forbidden)
    assert not _imports_of_extraction("from ..reading.judging import judge_attempt\n", forbidden)
