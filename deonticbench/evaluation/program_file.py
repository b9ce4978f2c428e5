"""One program file run in the sandbox and read, for someone debugging it (``deonticbench
exec``): the file may be a bare program or a saved model response, whose fenced Prolog is
run; with a domain, its answer is read as that domain's, else as the one domain whose
answer line the output holds."""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path
from typing import Any

from ..data.cases import Case, load_cases
from ..data.domains import DOMAINS, Domain, get_domain
from ..errors import ConfigError, DataError
from ..reading.answers import Answer, answer_from_execution
from ..reading.judging import Program, read_attempt
from ..solver import Execution, ExecutorKind, Limits, run_program


@dataclass(frozen=True)
class ProgramRun:
    """What running one file did: the program as run, the repairs made to it, the
    execution, and the answer read (with the domain it was read as)."""

    program: str
    notes: tuple[str, ...]
    execution: Execution
    domain: Domain | None
    answer: Answer | None

    def to_json(self) -> dict[str, Any]:
        """The execution as the sandbox reports it, with the answer read from it."""
        payload = self.execution.to_dict()
        payload["answer"] = self.answer.value if self.answer else None
        payload["answer_domain"] = self.domain.name if self.domain else None
        payload["abstain_reason"] = self.answer.reason if self.answer else None
        payload["repairs"] = list(self.notes)
        return payload

    def lines(self) -> list[str]:
        """The status, the repairs, the answer and what the program printed, as text."""
        execution, answer = self.execution, self.answer
        limit = f" ({execution.limit})" if execution.limit else ""
        out = [
            f"status:   {execution.status}" + limit,
            f"exit:     {execution.exit_code}   wall: {execution.wall_s:.3f} s   "
            f"warnings: {execution.warnings}   sandbox: {execution.sandbox}",
        ]
        out += [f"repair:   {note}" for note in self.notes]
        if answer is None:
            out.append("answer:   none (no domain's answer line found; pass --domain to see why)")
        elif answer.value is None:
            out.append(f"answer:   none ({answer.reason})")
        else:
            found = f"  [{self.domain.name}]" if self.domain else ""
            out.append(f"answer:   {answer.value}" + found)
        if execution.stdout:
            out += ["--- stdout ---", execution.stdout.rstrip("\n")]
        if execution.stderr:
            out += ["--- stderr ---", execution.stderr.rstrip("\n")]
        return out


def run_program_file(
    file: str, domain: str | None, limits: Limits, executor: ExecutorKind
) -> ProgramRun:
    """Run the program in ``file`` (a saved response: its fenced program) and read its
    answer as ``domain``'s, or, without one, as the one domain whose answer line appears."""
    try:
        text = Path(file).read_text(encoding="utf-8")
    except OSError as exc:
        raise ConfigError(f"cannot read {file}: {exc.strerror}.") from None
    except UnicodeDecodeError:
        raise ConfigError(f"{file} is not UTF-8 text.") from None
    if not text.strip():
        # An empty file runs and prints nothing: say so rather than report "no output".
        raise ConfigError(f"{file} is empty: there is no program to run.")
    dom = get_domain(domain) if domain else None
    # A saved model response (or a fenced reference program): what it holds runs.
    read = read_attempt(Program(text, published=True), dom)
    if read.fenced_without_program or read.program is None:
        raise ConfigError(f"{file} has fenced blocks but no Prolog program in them.")
    execution = run_program(read.program, limits, executor=executor)
    judged = read.judged(execution, None)  # the domain's reading, when one was given
    found, answer = (dom, judged.answer) if dom is not None else _answer(execution)
    return ProgramRun(read.program, read.notes, execution, found, answer)


def _answer(execution: Execution) -> tuple[Domain | None, Answer | None]:
    """Without a domain: the one domain whose answer line appears (or none when zero or
    several do)."""
    hits = [
        (d, a) for d in DOMAINS.values() if not (a := answer_from_execution(d, execution)).abstained
    ]
    return hits[0] if len(hits) == 1 else (None, None)


def find_case(domain: Domain | None, case_id: str) -> Case:
    """The case ``exec --case`` compares with: from the hard split, else the whole."""
    if domain is None:
        raise ConfigError("--case needs --domain.")
    found: list[Case] = []
    for split in ("hard", "whole"):
        try:
            found += [c for c in load_cases(domain, split) if c.id == case_id]
        except DataError:
            continue  # a split this source lacks (housing's whole split offline)
        if found:
            break
    if not found:
        raise ConfigError(f"no case {case_id!r} in {domain.name}'s hard or whole split.")
    return found[0]
