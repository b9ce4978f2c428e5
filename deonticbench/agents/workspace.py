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
Harbor's task export (``integrations.harbor``) writes the same text as its instruction.md.

Under the dar protocol (``build_dar_workspace``, ``dar_instruction_text``) the workspace
is what DAR's container has under ``/app`` (``prompting.dar_task.DarTask.app_files``:
statute.txt, and examples.txt in few-shot; an empty output/), shown to the agent where
DAR's tasks mount it (``reading.dar_verifier.DAR_MOUNT``: the shell's sandbox, the absolute paths
of the file tools), and the instruction is DAR's instruction.md followed by the
harness's tools section.  The expected label stays with the verifier, never in the
workspace.
"""

from __future__ import annotations

import os
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING

from ..data.cases import Case
from ..data.domains import Domain, get_domain
from ..prompting.exemplars import problem_key
from ..prompting.render import demonstration
from ..prompting.templates import AGENT_DIR as AGENT_PROMPTS
from ..prompting.templates import fill, hash_template_files, prompts_root, read_template
from ..reading.dar_verifier import DAR_MOUNT
from ..solver import DEFAULT_TIMEOUT_S
from ..vocabulary.modes import Mode, is_agentic, prompted_counterpart

if TYPE_CHECKING:
    # Annotations only: Harbor's verifier imports this module in a bare interpreter.
    from ..prompting.dar_task import DarTask

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
    root = _empty_root(root)
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
    return _finish_workspace(root, mode, files)


def _empty_root(root: Path) -> Path:
    root = Path(root)
    root.mkdir(parents=True, exist_ok=True)
    if any(root.iterdir()):
        raise ValueError(f"the workspace {root} is not empty")
    return root


def _finish_workspace(root: Path, mode: Mode, files: dict[str, str]) -> Workspace:
    """Write ``files`` and the empty ``output/``, open to every uid."""
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


def build_dar_workspace(task: DarTask, mode: Mode, root: Path) -> Workspace:
    """Write a dar-protocol trial's workspace under ``root``: DAR's /app, byte for byte
    (``task.app_files``) with an empty output/, and nothing else."""
    if not is_agentic(mode):
        raise ValueError(f"{mode} is not an agentic mode")
    return _finish_workspace(_empty_root(root), mode, dict(task.app_files))


# --- the instruction -------------------------------------------------------------------


def _template_names(mode: Mode, tool_set: str) -> tuple[str, ...]:
    body = "direct.txt" if prompted_counterpart(mode) == "direct" else "program.txt"
    names = [f"{AGENT_PROMPTS}/{body}", _tools_template(tool_set)]
    if mode == "agent-few-shot":
        names.append(f"{AGENT_PROMPTS}/examples.txt")
    if prompted_counterpart(mode) != "direct":
        names.append(f"{AGENT_PROMPTS}/entrypoint.txt")
    return tuple(names)


def _tools_template(tool_set: str) -> str:
    """The template of the instruction's section on ``tool_set``, under prompts/."""
    return f"{AGENT_PROMPTS}/tools-{tool_set}.txt"


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
    tools = tools_text(tool_set, workspace=workspace, timeout_s=timeout_s, prompts_dir=root)
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


def tools_text(
    tool_set: str,
    *,
    workspace: str = "your workspace",
    timeout_s: float = DEFAULT_TIMEOUT_S,
    prompts_dir: Path | None = None,
) -> str:
    """The instruction's section on the tool set (``prompts/agent/tools-<set>.txt``)."""
    root = prompts_root(prompts_dir)
    name = _tools_template(tool_set)
    values = {
        "timeout": f"{timeout_s:g}",
        "output_chars": str(OBSERVATION_CHARS),
        "workspace": workspace,
    }
    return fill(read_template(root, name), values, name=str(root / name))


def dar_instruction_text(
    task: DarTask,
    tool_set: str,
    *,
    timeout_s: float = DEFAULT_TIMEOUT_S,
    prompts_dir: Path | None = None,
) -> str:
    """A dar-protocol trial's instruction: DAR's instruction.md as DAR's adapter renders
    it, then the harness's tools section (DAR's agents bring their own tools; here the
    harness's are the agent's, and it must be told them)."""
    tools = tools_text(tool_set, workspace=DAR_MOUNT, timeout_s=timeout_s, prompts_dir=prompts_dir)
    return f"{task.instruction.rstrip()}\n\n{tools}"


def instruction_hash(mode: Mode, tool_set: str, *, prompts_dir: Path | None = None) -> str:
    """sha256 over the templates an instruction is made of (for config.json)."""
    return hash_template_files(prompts_root(prompts_dir), _template_names(mode, tool_set))
