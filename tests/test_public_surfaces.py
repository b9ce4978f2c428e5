"""Each stage's public surface is true: a name another stage imports is in its ``__all__``.

A stage is a first-level package of ``deonticbench`` (``data``, ``prompting``, ...) or a
root module (``api``, ``errors``, ``_paths``).  The import graph is read from the source
with ``ast``: imports inside functions count (they are imports all the same), imports
under ``if TYPE_CHECKING:`` do not (they never run).  A name one stage takes from another
must be listed in the target stage's ``__all__`` (its ``__init__``'s, for a package), so a
stage's ``__all__`` says what the rest of the package relies on and everything else is
free to change."""

from __future__ import annotations

import ast
import importlib
import re
import types
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parent.parent
PACKAGE = ROOT / "deonticbench"


def _module_name(path: Path) -> str:
    parts = list(path.relative_to(ROOT).with_suffix("").parts)
    if parts[-1] == "__init__":
        parts.pop()
    return ".".join(parts)


def _modules() -> dict[str, Path]:
    return {
        _module_name(p): p
        for p in PACKAGE.rglob("*.py")
        if "_share" not in p.relative_to(PACKAGE).parts
    }


MODULES = _modules()


def _stage(module: str) -> str:
    return ".".join(module.split(".")[:2])


def _declared_all(path: Path) -> set[str] | None:
    """The literal ``__all__`` at a module's top level, or None when it has none."""
    for node in ast.parse(path.read_text(encoding="utf-8")).body:
        targets = (
            node.targets
            if isinstance(node, ast.Assign)
            else [node.target]
            if isinstance(node, ast.AnnAssign) and node.value is not None
            else []
        )
        if any(isinstance(t, ast.Name) and t.id == "__all__" for t in targets):
            assert isinstance(node, (ast.Assign, ast.AnnAssign)) and node.value is not None
            return set(ast.literal_eval(node.value))
    return None


def _type_checking_only(tree: ast.Module) -> set[int]:
    """Ids of the nodes inside ``if TYPE_CHECKING:`` blocks (never run, so not edges)."""
    hidden: set[int] = set()
    for node in ast.walk(tree):
        if isinstance(node, ast.If) and "TYPE_CHECKING" in ast.unparse(node.test):
            hidden.update(id(inner) for stmt in node.body for inner in ast.walk(stmt))
    return hidden


@dataclass(frozen=True)
class NameImport:
    importer: str
    source: str
    """The module the name is taken from."""
    name: str
    line: int


def _name_imports() -> Iterator[NameImport]:
    """Every ``from X import name`` of the package whose ``name`` is not a submodule."""
    for module, path in sorted(MODULES.items()):
        tree = ast.parse(path.read_text(encoding="utf-8"))
        hidden = _type_checking_only(tree)
        package = module if path.name == "__init__.py" else module.rsplit(".", 1)[0]
        for node in ast.walk(tree):
            if not isinstance(node, ast.ImportFrom) or id(node) in hidden:
                continue
            if node.level:
                base = package.split(".")[: len(package.split(".")) - (node.level - 1)]
                source = ".".join(base + ([node.module] if node.module else []))
            else:
                source = node.module or ""
            if source != "deonticbench" and not source.startswith("deonticbench."):
                continue
            for alias in node.names:
                if f"{source}.{alias.name}" not in MODULES:
                    yield NameImport(module, source, alias.name, node.lineno)


def _surface(stage: str) -> set[str] | None:
    path = MODULES.get(stage)
    return None if path is None else _declared_all(path)


def test_the_root_modules_declare_their_public_names() -> None:
    for name in ("api", "errors", "_paths"):
        assert _surface(f"deonticbench.{name}"), f"deonticbench/{name}.py has no __all__"


@pytest.mark.slow
def test_every_name_one_stage_imports_from_another_is_in_its_all() -> None:
    imports = list(_name_imports())
    found = {(i.importer, i.source, i.name) for i in imports}
    # The reader itself: an import inside a function counts (``cache_root`` imports
    # ConfigError for its error path), one under TYPE_CHECKING does not (the root
    # package imports ``evaluate`` for the type checker only).
    assert ("deonticbench._paths", "deonticbench.errors", "ConfigError") in found
    assert ("deonticbench", "deonticbench.api", "evaluate") not in found
    missing: list[str] = []
    for imp in imports:
        target = _stage(imp.source)
        if _stage(imp.importer) == target:
            continue
        surface = _surface(target) or set()
        if imp.name in surface:
            continue
        missing.append(
            f"{imp.importer}:{imp.line} imports {imp.name} from {imp.source}, "
            f"not in {target}.__all__"
        )
    assert not missing, (
        "names imported across stages but missing from the stage's __all__ (add the name "
        "there, re-exported by the __init__, or stop importing it):\n" + "\n".join(missing)
    )
    # ``__all__`` lists what the stage offers, so each name must resolve on the stage
    # (lazily loaded ones included) and be no submodule that happens to share its name.
    for stage in sorted({_stage(m) for m in MODULES if m != "deonticbench"}):
        offered = _surface(stage)
        if not offered or stage == "deonticbench.__main__":
            continue
        loaded = importlib.import_module(stage)
        for name in sorted(offered):
            value = getattr(loaded, name)
            assert not isinstance(value, types.ModuleType), f"{stage}.{name} is a module"


def test_the_harbor_package_offers_the_names_its_docstring_advertises() -> None:
    """``export_tasks``, ``import_jobs`` and ``dar_rules`` are loaded on first use, like
    ``BwrapEnvironment``; none of them needs Harbor."""
    from deonticbench.integrations import harbor
    from deonticbench.integrations.harbor import dar_rules, importer, tasks

    assert harbor.export_tasks is tasks.export_tasks
    assert harbor.import_jobs is importer.import_jobs
    assert harbor.dar_rules is dar_rules
    assert set(harbor.__all__) == {"BwrapEnvironment", "dar_rules", "export_tasks", "import_jobs"}


def test_the_agents_offer_the_loop_lazily_so_a_bare_interpreter_can_import_them() -> None:
    """Harbor's shipped verifier imports ``deonticbench.agents`` in ``python -I -S`` (no
    third-party package): the package loads only its workspace and judge there, and the
    loop's names (which need ``jsonschema``'s tool table) resolve on first use."""
    import subprocess
    import sys

    from deonticbench import agents
    from deonticbench.agents import loop, tool_table, trial_record

    assert agents.run_trial is loop.run_trial
    assert agents.tools_of is tool_table.tools_of
    assert agents.trial_attempt is trial_record.trial_attempt
    probe = (
        "import sys; sys.path.insert(0, sys.argv[1]); import deonticbench.agents; "
        "print(sorted(m for m in sys.modules if m.startswith(('jsonschema', "
        "'deonticbench.agents.'))))"
    )
    done = subprocess.run(
        [sys.executable, "-I", "-S", "-c", probe, str(ROOT)],
        capture_output=True,
        text=True,
        check=True,
    )
    assert done.stdout.strip() == "['deonticbench.agents.judge', 'deonticbench.agents.workspace']"


# --- each face carries what is used outside its package, and nothing else ----------------

FACE_USERS = ("benchmarks", "scripts")
"""Folders of code outside the package whose imports count as uses of a face."""
DOCS = (ROOT / "README.md", *sorted((ROOT / "docs").glob("*.md")))
STAGE_FACES = {
    path.parent.name: _declared_all(path) or set() for path in sorted(PACKAGE.glob("*/__init__.py"))
}
"""Each first-level package's ``__all__``: its face."""
CITED = re.compile(r"(?<![\w.])(?:deonticbench\.)?(\w+)[.:](\w+)")
"""``stage.name``, ``deonticbench.stage.name`` or ``deonticbench.stage:name`` (an entry
point): a name cited on its stage's face.  ``stage.module.name`` cites a module's name,
not the face's."""
IMPORTED = re.compile(r"from\s+deonticbench\.(\w+)\s+import\s+(\([^)]*\)|[^\n]*)")


FROM_IMPORT = re.compile(
    r"^[ \t]*from[ \t]+(\.*)([\w.]*)[ \t]+import[ \t]+(\([^)]*\)|[^\n]*)", re.M
)
DOTTED = re.compile(r"(?<![\w.])deonticbench\.(\w+)[.:](\w+)")
BINDS_A_PACKAGE = re.compile(
    r"^[ \t]*(from[ \t]+(\.\.+|deonticbench)[ \t]+import|import[ \t]+deonticbench)\b", re.M
)


def _imported_names(names: str) -> list[str]:
    """The names of ``from X import <names>``, as the module spells them."""
    names = re.sub(r"#[^\n]*", "", names).strip("()")
    return [part.split()[0] for part in names.split(",") if part.strip()]


def _faces_taken(path: Path, module: str) -> Iterator[tuple[str, str]]:
    """(stage, name) for each name a file takes from a stage: imported from the stage or
    one of its modules (what another stage imports must be on the face), a string or
    docstring citing ``deonticbench.stage.name``, an attribute of the stage's package
    (``scoring.compare`` after ``from deonticbench import scoring``) and the root
    package's lazily loaded names (its ``_PUBLIC``).  Imports are read from the text, and
    only a file that binds a package to a name is parsed (reading every module with
    ``ast`` takes seconds)."""
    text = path.read_text(encoding="utf-8")
    package = module if path.name == "__init__.py" else module.rsplit(".", 1)[0]
    for found in FROM_IMPORT.finditer(text):
        dots, named, names = found.groups()
        if dots:
            parts = package.split(".")
            source = ".".join(parts[: len(parts) - len(dots) + 1] + ([named] if named else []))
        else:
            source = named
        if source.split(".")[0] != "deonticbench" or "." not in source:
            continue
        stage = source.split(".")[1]
        for name in _imported_names(names):
            # A name on the face that shadows the module of the same name (the function
            # ``render`` of ``render.py``) is the face's, imported from the package.
            face_name = source.count(".") == 1 and name in STAGE_FACES.get(stage, ())
            if f"{source}.{name}" not in MODULES or face_name:
                yield stage, name
    for cited in DOTTED.finditer(text):
        yield cited.group(1), cited.group(2)
    if module == "deonticbench" or BINDS_A_PACKAGE.search(text):
        yield from _attributes_taken(ast.parse(text), package, module)


def _attributes_taken(tree: ast.Module, package: str, module: str) -> Iterator[tuple[str, str]]:
    """(stage, name) for ``stage.name`` where ``stage`` is bound to a stage's package,
    and for the root package's ``_PUBLIC`` (name -> stage)."""
    bound: dict[str, str] = {}
    for node in ast.walk(tree):
        if isinstance(node, ast.ImportFrom) and node.module in (None, "deonticbench"):
            source = "deonticbench" if node.module else package.rsplit(".", node.level - 1)[0]
            for alias in node.names:
                if f"{source}.{alias.name}" in MODULES:
                    bound[alias.asname or alias.name] = f"{source}.{alias.name}"
        elif isinstance(node, ast.Import):
            for alias in node.names:
                if alias.asname and alias.name in MODULES:
                    bound[alias.asname] = alias.name
        elif (
            isinstance(node, ast.Assign) and module == "deonticbench" and _assigns(node, "_PUBLIC")
        ):
            yield from ((stage, name) for name, stage in ast.literal_eval(node.value).items())
    for node in ast.walk(tree):
        if isinstance(node, ast.Attribute) and isinstance(node.value, ast.Name):
            home = bound.get(node.value.id, "")
            if home.count(".") == 1:
                yield home.split(".")[1], node.attr


def _assigns(node: ast.Assign, name: str) -> bool:
    return any(isinstance(t, ast.Name) and t.id == name for t in node.targets)


def _faces_cited(text: str) -> Iterator[tuple[str, str]]:
    for cited in CITED.finditer(text):
        yield cited.group(1), cited.group(2)
    for imported in IMPORTED.finditer(text):
        yield from ((imported.group(1), name) for name in re.findall(r"\w+", imported.group(2)))


def _used_outside() -> dict[str, set[str]]:
    """Each stage's names used outside it: by another stage or a root module, the
    benchmarks and scripts, the README and docs, and the install's entry points."""
    used: dict[str, set[str]] = {stage: set() for stage in STAGE_FACES}

    def take(pairs: Iterator[tuple[str, str]], inside: str | None) -> None:
        for stage, name in pairs:
            if stage in used and stage != inside:
                used[stage].add(name)

    for module, path in MODULES.items():
        take(_faces_taken(path, module), module.split(".")[1] if "." in module else None)
    for folder in FACE_USERS:
        for path in sorted((ROOT / folder).rglob("*.py")):
            take(_faces_taken(path, f"{folder}.{path.stem}"), None)
    for doc in (*DOCS, ROOT / "pyproject.toml"):
        take(_faces_cited(doc.read_text(encoding="utf-8")), None)
    return used


def test_each_face_holds_only_names_used_outside_its_package() -> None:
    """A name on a stage's ``__all__`` is there because something outside the stage takes
    it: another stage or a root module, ``benchmarks/``, ``scripts/``, the README or a
    doc (``stage.name``, ``deonticbench.stage.name`` or ``from deonticbench.stage import
    name``).  The tests do not count: they import what they test from its module.  Code
    inside a stage imports its own names from their modules too."""
    used = _used_outside()
    # The reader itself: a name another stage imports, an attribute of a stage's package,
    # the root's lazily loaded names and a doc's citation each count.
    assert {"Case", "load_cases"} <= used["data"]
    assert "read_run" in used["store"]
    assert "write_report" in used["report"]  # README: `report.write_report`
    assert "analyse_static" in used["analysis"]  # docs/analysis.md imports it
    unused = [
        f"deonticbench.{stage}.{name}"
        for stage, face in sorted(STAGE_FACES.items())
        for name in sorted(face - used[stage])
    ]
    assert not unused, (
        "names on a face that nothing outside its package uses (take them off __all__ and "
        "the face's imports, and import them from their module inside the package):\n"
        + "\n".join(unused)
    )


def _taught_at_the_top() -> set[str]:
    """Names the README and docs teach from the top level: imported from ``deonticbench``
    in an example, cited as ``deonticbench.name``, or shown in code in the README's
    "Library use" section (which says what the top level holds)."""
    taught: set[str] = set()
    for doc in DOCS:
        text = doc.read_text(encoding="utf-8")
        for imported in re.finditer(r"from\s+deonticbench\s+import\s+(\([^)]*\)|[^\n]*)", text):
            taught.update(_imported_names(imported.group(1)))
        taught.update(re.findall(r"(?<![\w.])deonticbench\.(\w+)", text))
    readme = (ROOT / "README.md").read_text(encoding="utf-8")
    library_use = readme.split("\n## Library use\n", 1)[1].split("\n## ", 1)[0]
    for code in re.findall(r"```.*?```|`[^`\n]+`", library_use, re.DOTALL):
        taught.update(re.findall(r"\w+", code))
    return taught


def test_the_top_level_holds_only_what_the_readme_and_docs_teach() -> None:
    """``deonticbench.__all__`` is the library user's API: every name on it is one the
    README or a doc teaches (``__version__`` aside); the rest is each stage's."""
    top = (_declared_all(PACKAGE / "__init__.py") or set()) - {"__version__"}
    taught = _taught_at_the_top()
    assert {"RunSpec", "evaluate", "score", "read_run", "Run"} <= taught  # the reader itself
    untaught = sorted(top - taught)
    assert not untaught, (
        "top-level names the README and docs do not teach (teach them, or leave them to "
        "their stage's face):\n" + "\n".join(untaught)
    )
