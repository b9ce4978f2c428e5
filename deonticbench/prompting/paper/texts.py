"""Upstream's prompt texts, composers and model lists, read from its files without running them.

``scripts/generate_e2e.py`` imports openai, httpx, yaml and tqdm and reads files at import
time; ``prompts/*.py`` import each other.  None of that is wanted here.  So the files are
parsed with ``ast`` and only what the paper protocol needs is compiled: the composer
function definitions, the exemplar string constants, the literal model sets and the
cabin classes.  They run in a namespace holding only ``re``, ``str`` and each other (no
other builtins: no ``open``, no ``__import__``), so reading them cannot import upstream's
dependencies or have side effects.  Facts upstream states as code rather than as a
definition (the system message, argparse defaults, the per-model request fields, the
hosts that get ``n`` = 1) are read from the syntax tree as literals.

The texts stay upstream's: nothing of them is copied into this repository.
"""

from __future__ import annotations

import ast
import re
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from functools import lru_cache
from typing import Any

from ...data.sources import DataSource
from ...data.upstream import (
    CASE_EXEMPLARS,
    DATASET_PROMPTS,
    GENERATE_SCRIPT,
    MODEL_CONFIG,
    UpstreamFiles,
    upstream_files,
)
from ...errors import DataError

GENERATE_FUNCTIONS = (
    "compose_prompt_source",
    "compose_prompt_source_binary",
    "compose_prompt_standalone_prolog_sara",
    "compose_prompt_standalone_prolog_binary",
    "compose_prompt_prolog_binary",
    "compose_prompt_standalone_prolog_airline",
    "compose_prompt_prolog_sara",
    "compose_prompt_prolog_airline",
    "extract_cabin_class",
    "format_airline_exemplar",
    "retrieve_airline_exemplar",
)
DATASET_FUNCTIONS = (
    "compose_prompt_source_legal_ir",
    "compose_prompt_source_uscis",
    "compose_prompt_standalone_prolog_legal_ir",
    "_extract_uscis_facts_rules",
    "compose_prompt_standalone_prolog_uscis",
    "compose_prompt_prolog_legal_ir",
    "compose_prompt_prolog_uscis",
)
GENERATE_CONSTANTS = (
    "max_n_1_models",
    "deepseek_models",
    "gpt4_models",
    "codex_models",
    "CABIN_CLASSES",
    "FALLBACK_CABIN",
)
_SAFE_BUILTINS: dict[str, Any] = {"str": str}
"""All the composers call: ``str`` (``_extract_uscis_facts_rules``)."""
_LITERAL_NODES = (
    ast.Constant,
    ast.BinOp,
    ast.Add,
    ast.Name,
    ast.Load,
    ast.Set,
    ast.List,
    ast.Tuple,
    ast.Dict,
)


@dataclass(frozen=True, eq=False)
class PaperTexts:
    """What the paper protocol takes from upstream's files (compared by identity)."""

    files: UpstreamFiles
    namespace: Mapping[str, Any]
    """The compiled composers and constants, by upstream's names."""
    system_message: str
    default_temperature: float
    default_reasoning_effort: str
    set_fields: tuple[tuple[str, tuple[tuple[str, Any], ...]], ...]
    """In upstream's order: (model set name, request fields a model in it gets)."""
    single_hosts: tuple[str, ...]
    """Base-URL substrings whose requests upstream sends with ``n`` = 1, K times."""
    reasoning_models: frozenset[str]
    model_params: Mapping[str, Mapping[str, Any]]

    def function(self, name: str) -> Callable[..., Any]:
        found = self.namespace.get(name)
        if not callable(found):
            raise DataError(f"upstream's files define no function {name}.")
        return found

    def constant(self, name: str) -> Any:
        if name not in self.namespace:
            raise DataError(f"upstream's files define no constant {name}.")
        return self.namespace[name]

    def model_set(self, name: str) -> frozenset[str]:
        return frozenset(self.constant(name))


def load_paper_texts(source: DataSource | None) -> PaperTexts:
    """Upstream's texts from ``source``'s folder or the pinned download (verified)."""
    return _compile(upstream_files(source))


@lru_cache(maxsize=4)
def _compile(files: UpstreamFiles) -> PaperTexts:
    exemplars = _parse(files, CASE_EXEMPLARS)
    namespace: dict[str, Any] = {"__builtins__": _SAFE_BUILTINS, "re": re}
    # every constant of case_exemplars.py: string literals and their concatenations
    _run(
        [n for n in exemplars.body if _assigns_name(n) and _is_literal(n)],
        namespace,
        CASE_EXEMPLARS,
    )
    dataset = _parse(files, DATASET_PROMPTS)
    _run(_functions(dataset, DATASET_FUNCTIONS, DATASET_PROMPTS), namespace, DATASET_PROMPTS)
    script = _parse(files, GENERATE_SCRIPT)
    constants = [n for n in script.body if _assigns_name(n, GENERATE_CONSTANTS)]
    for node in constants:
        if not _is_literal(node):
            raise DataError(f"upstream's {GENERATE_SCRIPT} no longer defines a literal here.")
    _run(constants, namespace, GENERATE_SCRIPT)
    _run(_functions(script, GENERATE_FUNCTIONS, GENERATE_SCRIPT), namespace, GENERATE_SCRIPT)
    config = _model_config(files)
    run_inference = _function_node(script, "run_inference")
    parse_args = _function_node(script, "parse_args")
    return PaperTexts(
        files=files,
        namespace=namespace,
        system_message=_system_message(run_inference),
        default_temperature=float(_argparse_default(parse_args, "--temperature")),
        default_reasoning_effort=str(_argparse_default(parse_args, "--reasoning-effort")),
        set_fields=_set_fields(run_inference),
        single_hosts=_single_hosts(run_inference),
        reasoning_models=frozenset(str(m) for m in config.get("reasoning_models") or ()),
        model_params={str(k): dict(v or {}) for k, v in (config.get("model_params") or {}).items()},
    )


def _parse(files: UpstreamFiles, path: str) -> ast.Module:
    try:
        return ast.parse(files.text(path), filename=path)
    except SyntaxError as exc:
        raise DataError(f"upstream file {path} does not parse ({exc.msg}).") from None


def _model_config(files: UpstreamFiles) -> dict[str, Any]:
    # Only when upstream's texts are read: prompting is imported by the Harbor verifier in
    # a bare interpreter (no site-packages), where yaml is not there.
    import yaml

    try:
        loaded = yaml.safe_load(files.text(MODEL_CONFIG))
    except yaml.YAMLError as exc:
        raise DataError(f"upstream file {MODEL_CONFIG} is not YAML ({exc}).") from None
    return loaded if isinstance(loaded, dict) else {}


def _assigns_name(node: ast.stmt, names: tuple[str, ...] | None = None) -> bool:
    if not isinstance(node, ast.Assign) or len(node.targets) != 1:
        return False
    target = node.targets[0]
    return isinstance(target, ast.Name) and (names is None or target.id in names)


def _is_literal(node: ast.stmt) -> bool:
    return isinstance(node, ast.Assign) and all(
        isinstance(n, _LITERAL_NODES) for n in ast.walk(node.value)
    )


def _function_node(module: ast.Module, name: str) -> ast.FunctionDef:
    for node in module.body:
        if isinstance(node, ast.FunctionDef) and node.name == name:
            return node
    raise DataError(f"upstream's files define no function {name}.")


def _functions(module: ast.Module, names: tuple[str, ...], path: str) -> list[ast.stmt]:
    out: list[ast.stmt] = []
    for name in names:
        node = _function_node(module, name)
        if node.decorator_list:
            raise DataError(f"upstream's {name} in {path} is decorated; it is not read.")
        # Annotations name typing imports that are not in the namespace: drop them.
        for arg in (*node.args.posonlyargs, *node.args.args, *node.args.kwonlyargs):
            arg.annotation = None
        node.returns = None
        out.append(node)
    return out


def _run(nodes: list[ast.stmt], namespace: dict[str, Any], path: str) -> None:
    module = ast.fix_missing_locations(ast.Module(body=nodes, type_ignores=[]))
    # The namespace is the restriction (module docstring): no builtins but ``str``.
    exec(compile(module, path, "exec"), namespace)


def _system_message(run_inference: ast.FunctionDef) -> str:
    """The content of the ``{"role": "system", ...}`` message upstream sends."""
    for node in ast.walk(run_inference):
        if not isinstance(node, ast.Dict):
            continue
        pairs = {
            k.value: v.value
            for k, v in zip(node.keys, node.values, strict=True)
            if isinstance(k, ast.Constant) and isinstance(v, ast.Constant)
        }
        if pairs.get("role") == "system" and isinstance(pairs.get("content"), str):
            return str(pairs["content"])
    raise DataError(f"upstream's {GENERATE_SCRIPT} sends no system message it can be read from.")


def _argparse_default(parse_args: ast.FunctionDef, option: str) -> Any:
    for node in ast.walk(parse_args):
        if (
            isinstance(node, ast.Call)
            and isinstance(node.func, ast.Attribute)
            and node.func.attr == "add_argument"
            and node.args
            and isinstance(node.args[0], ast.Constant)
            and node.args[0].value == option
        ):
            for keyword in node.keywords:
                if keyword.arg == "default":
                    return ast.literal_eval(keyword.value)
    raise DataError(f"upstream's {GENERATE_SCRIPT} has no default for {option}.")


def _set_fields(
    run_inference: ast.FunctionDef,
) -> tuple[tuple[str, tuple[tuple[str, Any], ...]], ...]:
    """``if config.model_name in <set>: request_args[<field>] = <literal>`` blocks, in order."""
    out: list[tuple[int, str, tuple[tuple[str, Any], ...]]] = []
    for node in ast.walk(run_inference):
        if not (isinstance(node, ast.If) and isinstance(node.test, ast.Compare)):
            continue
        test = node.test
        if not (
            isinstance(test.left, ast.Attribute)
            and test.left.attr == "model_name"
            and len(test.ops) == 1
            and isinstance(test.ops[0], ast.In)
            and isinstance(test.comparators[0], ast.Name)
        ):
            continue
        fields: list[tuple[str, Any]] = []
        for statement in node.body:
            if not (
                isinstance(statement, ast.Assign)
                and isinstance(statement.targets[0], ast.Subscript)
                and isinstance(statement.targets[0].slice, ast.Constant)
                and isinstance(statement.value, ast.Constant)
            ):
                fields = []
                break
            fields.append((str(statement.targets[0].slice.value), statement.value.value))
        if fields:
            out.append((node.lineno, test.comparators[0].id, tuple(fields)))
    # ast.walk is breadth-first: upstream applies the blocks in source order.
    return tuple((name, fields) for _, name, fields in sorted(out))


def _single_hosts(run_inference: ast.FunctionDef) -> tuple[str, ...]:
    """Every ``"<host>" in config.api_base_url`` test: upstream sends n = 1 K times there."""
    hosts: list[str] = []
    for node in ast.walk(run_inference):
        if (
            isinstance(node, ast.Compare)
            and isinstance(node.left, ast.Constant)
            and isinstance(node.left.value, str)
            and len(node.ops) == 1
            and isinstance(node.ops[0], ast.In)
            and isinstance(node.comparators[0], ast.Attribute)
            and node.comparators[0].attr == "api_base_url"
        ):
            hosts.append(node.left.value)
    return tuple(hosts)
