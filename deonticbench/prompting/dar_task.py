"""DAR's task for one case: what DAR's Harbor adapters put in a task folder.

DAR (*Deontic Reasoning with Agentic Harnesses*) ran the hard split of four domains as
Harbor tasks made by its three adapters (direct, zero-shot and few-shot).  ``dar_task``
renders the same task for one case, from DAR's own files read at run time
(``data.dar_files``): the per-domain settings and answer-format lines are read from the
syntax tree of DAR's ``adapter.py`` (never run), and ``instruction.md`` and ``task.toml``
are rendered from its templates with jinja2 exactly as its adapter renders them.  Both the
Harbor export (``export --format harbor --protocol dar``) and the container-free
``eval --protocol dar`` take their instruction and files from here, so the two show an
agent the same task.

Where the task's text comes from in DAR's adapter, and here:

* ``/app/statute.txt``: SARA's section files in sorted name order joined by
  ``STATUTE_SEPARATOR``; airline's one file; USCIS's own statutes from the case.
* ``/app/examples.txt`` (few-shot): upstream's fixed exemplar text for the domain, the
  constant DAR's few-shot adapter names, read as the paper protocol reads upstream's
  exemplars (``prompting.paper``).
* ``tests/expected_label.txt``: the gold label as DAR writes it (a whole number, or the
  class name); only the verifier sees it.

Housing is not in DAR's task set: ``dar_task`` refuses it (``check_dar_domain``), rather
than offer a task DAR never ran under DAR's name.
"""

from __future__ import annotations

import ast
import os
from collections.abc import Mapping
from dataclasses import dataclass
from functools import lru_cache
from typing import Any, Literal

from ..data.cases import Case
from ..data.dar_files import dar_root, dar_text
from ..data.domains import DAR_DOMAINS, UnknownDomainError, get_domain
from ..data.sources import DataSource, resolve_source
from ..data.statutes import statute_files
from ..errors import ConfigError, DataError
from .paper import load_paper_texts

DarPromptMode = Literal["direct", "zero-shot", "few-shot"]
DAR_PROMPT_MODES: tuple[DarPromptMode, ...] = ("direct", "zero-shot", "few-shot")

ADAPTERS: Mapping[DarPromptMode, str] = {
    "direct": "adapters/deonticbench_direct",
    "zero-shot": "adapters/deonticbench_zeroshot",
    "few-shot": "adapters/deonticbench_fewshot",
}
"""Each prompt mode's adapter folder in DAR's repository."""
BASE_ADAPTER = "adapters/deonticbench_direct/adapter.py"
"""Holds the base class and its per-subdomain settings (``SUBDOMAINS``)."""
FEWSHOT_ADAPTER = "adapters/deonticbench_fewshot/adapter.py"
"""Names the exemplar constant of each subdomain (``_EXEMPLAR_VAR``)."""

STATUTE_SEPARATOR = "\n\n---\n\n"
"""Between SARA's section files in DAR's statute.txt."""
STATUTE_FILE = "statute.txt"
EXAMPLES_FILE = "examples.txt"
DIRECT_ANSWER_PATH = "output/answer.txt"
"""Where a direct-mode agent writes its ``Answer:`` line, under /app (DAR's test.sh)."""
PROGRAM_PATH = "solution.pl"
"""Where a Prolog-mode agent leaves its program, under /app (DAR's test.sh)."""


@dataclass(frozen=True)
class DarTask:
    """One case's task as DAR's adapter writes it for one prompt mode."""

    instruction: str
    """``instruction.md``, rendered as DAR's adapter renders it."""
    app_files: Mapping[str, str]
    """What the agent finds under /app, by path relative to /app (``statute.txt``, and
    ``examples.txt`` in few-shot); DAR's Dockerfile copies them from ``environment/``."""
    expected_label: str
    """``tests/expected_label.txt``: for the verifier only, never shown to the agent."""
    answer_path: str | None
    """Direct mode's answer file under /app; None in the Prolog modes."""
    task_toml: str
    test_sh: str
    dockerfile: str
    program_path: str | None = None
    """The Prolog modes' program under /app (``solution.pl``); None in direct mode."""


def check_dar_domain(domain: str) -> str:
    """DAR's subdomain name for our domain ``domain``, or one sentence refusing it."""
    try:
        name = get_domain(domain).name
    except UnknownDomainError as exc:
        raise ConfigError(f"{exc}.") from None
    if name not in DAR_DOMAINS:
        raise ConfigError(
            f"{name} is not in DAR's task set ({', '.join(DAR_DOMAINS.values())}), so the "
            "dar protocol refuses it; run it under --protocol harness."
        )
    return DAR_DOMAINS[name]


def dar_task(
    case: Case,
    prompt_mode: DarPromptMode,
    *,
    root: str | os.PathLike[str] | None = None,
    source: DataSource | None = None,
) -> DarTask:
    """DAR's task for ``case`` in ``prompt_mode``.

    ``root`` is a local copy of DAR's repository (default ``DEONTICBENCH_DAR``, else the
    pinned download); ``source`` the data source the case came from, for the shared
    statutes and upstream's exemplar texts (default: ``resolve_source()``)."""
    if prompt_mode not in ADAPTERS:
        raise ConfigError(
            f"unknown prompt mode {prompt_mode!r} for DAR's tasks; "
            f"choose from {', '.join(DAR_PROMPT_MODES)}."
        )
    subdomain = check_dar_domain(case.domain)
    folder = str(dar_root(root) or "")
    settings = _settings(folder)[subdomain]
    src = source or resolve_source()
    app_files = {STATUTE_FILE: _statute_text(case, settings, src)}
    if prompt_mode == "few-shot":
        app_files[EXAMPLES_FILE] = _exemplar_text(subdomain, folder, src)
    record = {
        "subdomain": subdomain.replace("_", "-"),
        "text": case.text,
        "question": case.question,
        "answer_format_instruction": settings["answer_format_instruction"],
    }
    template = f"{ADAPTERS[prompt_mode]}/template"
    direct = prompt_mode == "direct"
    return DarTask(
        instruction=_render(_template_text(f"{template}/instruction.md", folder), record),
        app_files=app_files,
        expected_label=_expected_label(case, str(settings["label_type"])),
        answer_path=DIRECT_ANSWER_PATH if direct else None,
        task_toml=_render(_template_text(f"{template}/task.toml", folder), record),
        test_sh=dar_text(f"{template}/tests/test.sh", folder or None),
        dockerfile=dar_text(f"{template}/environment/Dockerfile", folder or None),
        program_path=None if direct else PROGRAM_PATH,
    )


def _expected_label(case: Case, label_type: str) -> str:
    # DAR writes a numeric label as a whole number and a class by its name; our gold is
    # already the whole number (numeric) or the canonical class name.
    if label_type == "numeric":
        return str(int(case.gold))
    return str(case.gold)


def _statute_text(case: Case, settings: Mapping[str, Any], source: DataSource) -> str:
    kind = settings["statute_type"]
    if kind == "embedded":
        return case.statutes
    domain = get_domain(case.domain)
    files = statute_files(domain, source, by_name=True)
    if kind == "shared_dir":
        _check_folder(str(settings["statute_dir"]), domain.statute_dir)
        return STATUTE_SEPARATOR.join(text for _, text in files)
    folder, _, name = str(settings["statute_file"]).rpartition("/")
    _check_folder(folder, domain.statute_dir)
    for file_name, text in files:
        if file_name == name:
            return text
    raise DataError(f"DAR's statute file statutes/{folder}/{name} is not in the data.")


def _check_folder(dar_folder: str, ours: str) -> None:
    if dar_folder != ours:
        raise DataError(
            f"DAR reads statutes/{dar_folder}/ where this project reads statutes/{ours}/."
        )


def _exemplar_text(subdomain: str, folder: str, source: DataSource) -> str:
    names = _literal(FEWSHOT_ADAPTER, "_EXEMPLAR_VAR", folder)
    return str(load_paper_texts(source).constant(str(names[subdomain])))


def _template_text(path: str, folder: str) -> str:
    # DAR's adapter reads a template with Path.read_text: universal newlines.
    text = dar_text(path, folder or None)
    return text.replace("\r\n", "\n").replace("\r", "\n")


@lru_cache(maxsize=16)
def _compiled(source: str) -> Any:
    # Only the DAR protocol needs jinja2: imported on first use.
    from jinja2 import StrictUndefined, Template

    return Template(source, undefined=StrictUndefined)


def _render(source: str, record: Mapping[str, Any]) -> str:
    return str(_compiled(source).render(record))


@lru_cache(maxsize=4)
def _settings(folder: str) -> Mapping[str, Mapping[str, Any]]:
    settings = _literal(BASE_ADAPTER, "SUBDOMAINS", folder)
    if set(settings) != set(DAR_DOMAINS.values()):
        raise DataError(
            f"DAR's {BASE_ADAPTER} sets up subdomains {', '.join(sorted(settings))}, not "
            f"{', '.join(DAR_DOMAINS.values())}."
        )
    return settings


@lru_cache(maxsize=8)
def _literal(path: str, name: str, folder: str) -> dict[str, Any]:
    """The literal dict assigned to ``name`` at the top of DAR's file ``path``, read from
    its syntax tree: DAR's adapter imports jinja2 and is never run here."""
    try:
        module = ast.parse(dar_text(path, folder or None), filename=path)
    except SyntaxError as exc:
        raise DataError(f"DAR's file {path} does not parse ({exc.msg}).") from None
    for node in module.body:
        target: ast.expr | None = node.target if isinstance(node, ast.AnnAssign) else None
        if isinstance(node, ast.Assign) and len(node.targets) == 1:
            target = node.targets[0]
        value = getattr(node, "value", None)
        if isinstance(target, ast.Name) and target.id == name and value is not None:
            try:
                found = ast.literal_eval(value)
            except ValueError:
                break
            if isinstance(found, dict):
                return found
            break
    raise DataError(f"DAR's file {path} no longer assigns a literal dict to {name}.")


__all__ = [
    "DAR_PROMPT_MODES",
    "DIRECT_ANSWER_PATH",
    "EXAMPLES_FILE",
    "PROGRAM_PATH",
    "STATUTE_FILE",
    "DarPromptMode",
    "DarTask",
    "check_dar_domain",
    "dar_task",
]
