"""An eval set's YAML file, read into the library's entries.

A set file is ``eval``'s command line in another syntax: a ``runs:`` list of mappings
whose keys are ``eval``'s option names (``model``, ``protocol``, ``split``, ``domains``,
``modes``, ``k``, ``params``, ``agent-tools`` ...; ``-`` or ``_`` alike), with
``defaults:`` applied to every run, and ``name:`` (the run's folder in the set).  Each
entry is parsed by ``eval``'s own options, so a key means what its flag means, with its
default, its type and its check, and nothing is restated here.  ``${VAR}`` in a value is
read from the environment (a server's address; keys are never written in the file).
"""

from __future__ import annotations

import os
import re
from collections.abc import Mapping
from pathlib import Path
from typing import Any

import click
import yaml

from .._paths import EVAL
from ..errors import ConfigError, DeonticBenchError
from ..eval_sets import SetEntry
from ..evaluation.run_options import EvalOptions

SET_KEYS = frozenset({"defaults", "runs", "description"})
NAME_KEY = "name"
SET_LEVEL = {
    "out": "--out",
    "fresh": "--out of a new set folder",
    "dry-run": "--dry-run",
    "json": "--json",
    "score": "the set's own comparison",
    "assume-output-tokens": "--assume-output-tokens",
}
"""eval's options that belong to the whole set (``eval-set``'s own flags), not a run."""
ALIASES = {"params": "param", "sample-ids": "sample-id", "program-timeout": "timeout"}
_VAR = re.compile(r"\$\{([A-Za-z_][A-Za-z0-9_]*)\}")

__all__ = ["SHIPPED_SETS", "find_set_file", "read_set_file"]

SHIPPED_SETS = EVAL / "sets"
"""The sets that ship with the package (``eval/sets``): a shipped set is named by its
file's stem (``smoke``, ``table2``, ``dar``) or its path under the repository."""


def find_set_file(given: str) -> Path:
    """The set file ``given`` names: a file at that path, else a shipped set by name or
    by its repository path (``eval/sets/smoke.yaml`` from any folder)."""
    path = Path(given)
    candidates = [path, SHIPPED_SETS / f"{given}.yaml", EVAL.parent / given]
    found = next((c for c in candidates if c.is_file()), None)
    if found is None:
        shipped = ", ".join(sorted(p.stem for p in SHIPPED_SETS.glob("*.yaml")))
        raise ConfigError(f"no set file {given}; the shipped sets are {shipped}.")
    return found


def read_set_file(path: Path, eval_command: click.Command) -> list[SetEntry]:
    """The entries of the set file at ``path``, each parsed by ``eval_command``'s
    options; one sentence naming the entry for anything it would refuse."""
    try:
        doc = yaml.safe_load(path.read_text(encoding="utf-8"))
    except yaml.YAMLError as exc:
        raise ConfigError(f"{path} is not YAML: {str(exc).splitlines()[0]}") from None
    if not isinstance(doc, Mapping) or not isinstance(doc.get("runs"), list):
        raise ConfigError(f"{path} should be a mapping with a runs: list.")
    unknown = sorted(set(doc) - SET_KEYS)
    if unknown:
        raise ConfigError(
            f"{path}: unknown top-level key {unknown[0]!r}; a set has "
            f"{', '.join(sorted(SET_KEYS))}."
        )
    defaults = doc.get("defaults") or {}
    if not isinstance(defaults, Mapping):
        raise ConfigError(f"{path}: defaults: should be a mapping of eval's options.")
    options = _options_by_name(eval_command)
    entries = []
    for number, raw in enumerate(doc["runs"], start=1):
        model = raw.get("model") if isinstance(raw, Mapping) else None
        where = f"{path}, run {number}" + (f" ({model})" if model else "")
        if not isinstance(raw, Mapping):
            raise ConfigError(f"{where} should be a mapping of eval's options.")
        merged = {**_keys(defaults, options, f"{path}, defaults"), **_keys(raw, options, where)}
        name = merged.pop(NAME_KEY, None)
        if name is not None and (not isinstance(name, str) or not _safe_name(name)):
            raise ConfigError(
                f"{where}: name should be a folder name (letters, digits, . _ -), not {name!r}."
            )
        argv = _argv(merged, options, where)
        entries.append(_entry(eval_command, argv, name, where))
    return entries


def _safe_name(name: str) -> bool:
    return bool(re.fullmatch(r"[A-Za-z0-9][A-Za-z0-9._-]*", name))


def _options_by_name(command: click.Command) -> dict[str, click.Option]:
    """eval's options by the names a set file uses: each long flag without its dashes,
    and a short-only flag (``-k``) by its letter."""
    out = {}
    for param in command.params:
        if isinstance(param, click.Option):
            for opt in param.opts:
                out[opt.lstrip("-")] = param
    return out


def _keys(
    raw: Mapping[str, Any], options: Mapping[str, click.Option], where: str
) -> dict[str, Any]:
    """``raw`` with every key in eval's spelling; an unknown key or one of the set's own
    options is refused."""
    out: dict[str, Any] = {}
    for key, value in raw.items():
        spelt = ALIASES.get(str(key).replace("_", "-"), str(key).replace("_", "-"))
        if spelt in SET_LEVEL:
            raise ConfigError(
                f"{where}: {key} is for the whole set ({SET_LEVEL[spelt]} of eval-set), not a run."
            )
        if spelt != NAME_KEY and spelt not in options:
            raise ConfigError(
                f"{where}: unknown key {key!r}; a run takes eval's options "
                "(deonticbench eval --help) and name."
            )
        out[spelt] = _expand(value, where)
    return out


def _expand(value: Any, where: str) -> Any:
    """``${VAR}`` in strings (also inside lists and mappings) from the environment."""
    if isinstance(value, str):

        def var(match: re.Match[str]) -> str:
            found = os.environ.get(match.group(1))
            if not found:
                raise ConfigError(
                    f"{where}: {match.group(1)} is not set (the set file reads this run's "
                    f"{match.group(0)} from the environment)."
                )
            return found

        return _VAR.sub(var, value)
    if isinstance(value, list):
        return [_expand(v, where) for v in value]
    if isinstance(value, Mapping):
        return {k: _expand(v, where) for k, v in value.items()}
    return value


def _argv(merged: Mapping[str, Any], options: Mapping[str, click.Option], where: str) -> list[str]:
    """The entry as eval's command line."""
    argv: list[str] = []
    for key, value in merged.items():
        option = options[key]
        flag = f"--{key}" if f"--{key}" in option.opts else f"-{key}"
        if option.is_flag:
            if not isinstance(value, bool):
                raise ConfigError(f"{where}: {key} should be true or false, not {value!r}.")
            argv += [flag] if value else []
            continue
        if option.multiple:
            items = (
                [f"{k}={_scalar(v)}" for k, v in value.items()]
                if isinstance(value, Mapping)
                else value
                if isinstance(value, list)
                else [value]
            )
            for item in items:
                argv += [flag, _scalar(item)]
            continue
        if isinstance(value, list):
            value = ",".join(_scalar(v) for v in value)
        argv += [flag, _scalar(value)]
    return argv


def _scalar(value: Any) -> str:
    if isinstance(value, bool):
        return "true" if value else "false"
    return str(value)


def _entry(command: click.Command, argv: list[str], name: str | None, where: str) -> SetEntry:
    try:
        ctx = command.make_context("eval", list(argv), resilient_parsing=False)
    except click.ClickException as exc:
        raise ConfigError(f"{where}: {exc.format_message()}") from None
    try:
        args = EvalOptions(**ctx.params)
        return SetEntry(args.spec(), args.run_options(), name, where)
    except DeonticBenchError as exc:
        raise type(exc)(f"{where}: {exc}") from None
