"""The workspace of one agentic trial, and the instruction that sends an agent into it.

A workspace holds what the prompted modes put in the prompt, as files (docs/agents.md):

    statute.txt          the statutes, exactly as the prompted modes show them
    case.txt             the facts of the case and the question
    examples/<n>/        agent-few-shot only: a leak-free exemplar's case.txt, its
                         solution.pl (prepared as the few-shot prompt shows it) and answer.txt
    output/              empty: direct mode leaves output/answer.txt here

One ``statute.txt`` rather than one file per section: it is the very text the prompted
counterpart sees, so the pairing of an agentic mode with its prompted one compares the
way of working and nothing else, and ``search``/``read_file`` with offsets reach any
section of it.  Never the gold label, never the case's own reference program.

The instruction (``instruction_text``) comes from the templates of ``prompts/agent/``;
Harbor's task export (issue 20) writes the same text as its instruction.md.
"""

from __future__ import annotations

import os
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path

from ..data.cases import Case
from ..data.domains import Domain, get_domain
from ..prompting.exemplars import problem_key
from ..prompting.render import demonstration
from ..prompting.templates import AGENT_DIR as AGENT_PROMPTS
from ..prompting.templates import fill, hash_template_files, prompts_root, read_template
from ..solver import DEFAULT_TIMEOUT_S
from ..vocabulary.modes import Mode, is_agentic, prompted_counterpart

STATUTE_FILE = "statute.txt"
CASE_FILE = "case.txt"
SOLUTION_FILE = "solution.pl"
OUTPUT_DIR = "output"
ANSWER_FILE = "output/answer.txt"
EXAMPLES_DIR = "examples"
OBSERVATION_CHARS = 8000
"""Characters of a tool's output an observation shows (head and tail kept)."""


@dataclass(frozen=True)
class Workspace:
    root: Path
    """The folder the agent sees as its whole world."""
    mode: Mode
    files: tuple[str, ...]
    """The files written, relative to ``root``."""


def case_text(case: Case) -> str:
    """``case.txt``: the facts (and housing's state) and the question, as the prompts
    give them; nothing else of the case."""
    parts = []
    state = str(case.extra.get("state", "")).strip()
    if state:
        parts.append(f"State: {state}")
    if case.text.strip():
        parts.append(f"Facts of the case:\n{case.text.strip()}")
    parts.append(f"Question:\n{case.question.strip()}")
    return "\n\n".join(parts) + "\n"


def _write(root: Path, relative: str, text: str) -> None:
    path = root / relative
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(text, encoding="utf-8", errors="surrogatepass")


def build_workspace(
    case: Case, mode: Mode, root: Path, exemplars: Sequence[Case] = ()
) -> Workspace:
    """Write one trial's workspace under ``root`` (created; it must be empty or absent)."""
    if not is_agentic(mode):
        raise ValueError(f"{mode} is not an agentic mode")
    domain = get_domain(case.domain)
    root = Path(root)
    root.mkdir(parents=True, exist_ok=True)
    if any(root.iterdir()):
        raise ValueError(f"the workspace {root} is not empty")
    files = {STATUTE_FILE: case.statutes.strip() + "\n", CASE_FILE: case_text(case)}
    if mode == "agent-few-shot":
        if not exemplars:
            raise ValueError(f"an agent-few-shot workspace for case {case.id} needs exemplars")
        for number, exemplar in enumerate(exemplars, start=1):
            if exemplar.id == case.id or problem_key(exemplar) == problem_key(case):
                raise ValueError(f"case {case.id} cannot be its own exemplar")
            folder = f"{EXAMPLES_DIR}/{number}"
            files[f"{folder}/{CASE_FILE}"] = case_text(exemplar)
            files[f"{folder}/{SOLUTION_FILE}"] = demonstration(domain, exemplar) + "\n"
            files[f"{folder}/answer.txt"] = f"{exemplar.gold}\n"
    elif exemplars:
        raise ValueError(f"exemplars are only used in agent-few-shot mode, not {mode}")
    for relative, text in files.items():
        _write(root, relative, text)
    (root / OUTPUT_DIR).mkdir()
    # Everyone may read and write: the shell tool runs as another uid when we are root.
    for folder, dirs, names in os.walk(root):
        os.chmod(folder, 0o777)
        for name in names:
            os.chmod(os.path.join(folder, name), 0o666)
        del dirs
    return Workspace(root=root, mode=mode, files=tuple(sorted(files)))


# --- the instruction -------------------------------------------------------------------


def _template_names(mode: Mode, tool_set: str) -> tuple[str, ...]:
    body = "direct.txt" if prompted_counterpart(mode) == "direct" else "program.txt"
    names = [f"{AGENT_PROMPTS}/{body}", f"{AGENT_PROMPTS}/tools-{tool_set}.txt"]
    if mode == "agent-few-shot":
        names.append(f"{AGENT_PROMPTS}/examples.txt")
    if prompted_counterpart(mode) != "direct":
        names.append(f"{AGENT_PROMPTS}/entrypoint.txt")
    return tuple(names)


def answer_line(domain: Domain, mode: Mode) -> str:
    """The line the agent must leave: the program's answer line, or the direct answer."""
    if prompted_counterpart(mode) != "direct":
        return domain.answer_line
    if domain.label_kind == "numeric":
        return "Answer: <amount in dollars>"
    return " or ".join(f"Answer: {c}" for c in domain.classes)


def _finish(mode: Mode, tool_set: str) -> str:
    if tool_set == "prolog":
        if prompted_counterpart(mode) == "direct":
            return "call submit (you may pass the answer to submit instead of writing the file)."
        return "call submit."
    if tool_set == "shell":
        return "reply without calling a tool."
    return "stop."


def instruction_text(
    case: Case,
    mode: Mode,
    tool_set: str,
    *,
    workspace: str = "your workspace",
    timeout_s: float = DEFAULT_TIMEOUT_S,
    prompts_dir: Path | None = None,
) -> str:
    """The instruction of a trial: the same for every case of a domain and mode, since the
    case itself is in the files.  ``tool_set`` is ``prolog``, ``shell`` or ``terminal``
    (Harbor's tasks, which have no tools of ours); ``workspace`` names the folder."""
    if not is_agentic(mode):
        raise ValueError(f"{mode} is not an agentic mode")
    domain = get_domain(case.domain)
    root = prompts_root(prompts_dir)
    names = _template_names(mode, tool_set)
    timeout = f"{timeout_s:g}"
    tools = fill(
        read_template(root, names[1]),
        {"timeout": timeout, "output_chars": str(OBSERVATION_CHARS), "workspace": workspace},
        name=str(root / names[1]),
    )
    values = {
        "domain": domain.display_name,
        "workspace": workspace,
        "answer_line": answer_line(domain, mode),
        "finish": _finish(mode, tool_set),
        "timeout": timeout,
        "tools": tools,
        "examples": "",
        "entrypoint": "",
    }
    if mode == "agent-few-shot":
        values["examples"] = read_template(root, f"{AGENT_PROMPTS}/examples.txt") + "\n"
    if domain.entrypoint is not None and prompted_counterpart(mode) != "direct":
        name = f"{AGENT_PROMPTS}/entrypoint.txt"
        values["entrypoint"] = fill(
            read_template(root, name),
            {
                "predicate": domain.entrypoint.answer_predicate,
                "print_format": domain.entrypoint.print_format,
            },
            name=str(root / name),
        )
    return fill(read_template(root, names[0]), values, name=str(root / names[0]))


def instruction_hash(mode: Mode, tool_set: str, *, prompts_dir: Path | None = None) -> str:
    """sha256 over the templates an instruction is made of (for config.json)."""
    return hash_template_files(prompts_root(prompts_dir), _template_names(mode, tool_set))
