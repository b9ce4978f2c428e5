"""The paper's reader: how upstream's released scripts read a reply, quirks included.

Written from the scripts at the pinned commit (``process_generated_prolog.py``,
``run_swipl.sh``, ``bootstrap_outputs.py``), never importing them; the parity test
(tests/reading/test_paper_reading_parity.py) runs the scripts themselves beside this module on
every hard case and compares every sample's outcome.

Programs (``extract``, ``prepare``):

* the first ```` ```prolog ```` block, else the first fenced block (any or no language
  word), else the whole reply, stripped; no reasoning block is removed first;
* an empty reply becomes upstream's ``EMPTY_PROLOG_EXTRACT`` program (comments only: it
  runs and prints nothing, so the sample abstains);
* housing and uscis programs without both ``:- initialization(main, main).`` and a
  ``main`` definition get upstream's ``main/0`` and directive appended, found by
  upstream's regular expressions (their ``main`` test reads ``\\\\.`` as a backslash
  and any character, so a fact ``main.`` does not count as a definition: reproduced);
* no gold-label directive is written into the program.  Upstream writes
  ``:- format("Label: ~w~n", [Gold])`` at the top of every housing and uscis program,
  and its reader skips every line that starts with ``Label:`` when it looks for the
  verdict (``_extract_outcome_from_swipl``), using the first such line only as the gold
  label; the directive runs at load time, before any program output, and prints one
  line: the verdict read from the remaining lines is the same without it, and no
  program run here ever sees the gold label.  Its one other effect is that the
  program starts on line 2, where a script line (``#!/usr/bin/env swipl``), which
  SWI-Prolog skips on line 1 only, is a syntax error that swallows the clause after it:
  housing and uscis programs get a neutral first line instead (``NEUTRAL_FIRST_LINE``,
  a directive that prints nothing), so they load as upstream's do.

Running: as ``swipl -q -f FILE < /dev/null`` (the reader's ``toplevel`` is ``"eof"``):
after loading, SWI-Prolog's interactive toplevel reads end-of-file and ends the output
with a line break, unless the program halted first.  stdout only (upstream discards
stderr).  The sandbox runs such a job with SWI-Prolog's default 1 GiB stack, its stdout
spooled to a file under a 16 MiB cap and its stderr never a limit
(``solver.execution``): only the machine's safety limits (memory, processes, files,
network, time) still differ from upstream's bare run.

Reading one run's stdout (``read_execution``), as ``bootstrap_outputs.py`` reads the
block of the ``swipl`` output file that follows the program's path line:

* a program stopped at the time limit abstains ("Result: timeout"), whatever it
  printed before, when it ended on ``timeout``'s SIGTERM; one that outlived it and was
  killed 2 s later (SWI-Prolog defers SIGTERM while it loads the file: a loop in a
  directive or ``initialization/1``) has no such line upstream, and what it printed is
  read (the solver's ``TIMEOUT_TERM_IGNORED``); any other limit of our sandbox that
  stopped the program (output, memory, CPU) abstains.  A program that ended by itself
  after a resource error (a stack overflow in one goal, reported on stderr) was not
  stopped: its stdout is read, as upstream reads it;
* ``run_swipl.sh`` echoes the next program's path right after the output: an
  unterminated last line is glued to that path line, which then reads as a path, so the
  line is lost (a program that prints ``Tax result: 5`` without a line break and halts
  abstains; through the toplevel the line break is there).  Upstream's last program of a
  folder has no next path: the one position-dependent quirk not reproduced here;
* a line that ends in ``.pl`` and holds a ``/`` or ``\\`` starts a new block
  (``is_pl_path``): the lines after it are not this program's;
* lines are split as Python's universal newlines split them (``\\r`` too);
* numeric domains: the first line holding ``Tax result`` or ``Total cost``, then ``:`` or
  spaces, then a number (sign, digits and commas, decimals) gives the answer, a later
  line is not read; sara_binary: the first ``Result: Entailment|Contradiction``;
  uscis and housing: the last non-empty line that does not start with ``Label:`` must
  hold ``accepted``/``dismissed`` (in that order of test) or ``housing_answer(yes|no)``,
  else the sample abstains.

Direct replies (``read_direct``), as ``_parse_direct_answer``: an empty reply abstains;
numeric domains: ``\\boxed{...}``, else the last ``$`` amount, else the last positive
bare number (signs are not read); sara_binary and uscis: the boxed label, else the label
mentioned last (a substring: "not Contradiction" reads Contradiction, "Sustained" is no
label); housing: the first token ``yes``/``y``/``no``/``n``, else the later of the last
``yes`` and the last ``no`` if it stands as a word.

Judging (``judge_answer``, ``_is_correct``): numeric ``|round(x) - int(gold)| <= 1``,
categorical exact: the paper's B.3 rule, ``outcomes.judge_answer``.
"""

from __future__ import annotations

import math
import re
from dataclasses import replace

from ..data.cases import Gold
from ..data.domains import Domain
from ..solver.execution import TIMEOUT_TERM_IGNORED, Execution, Toplevel
from ..vocabulary.protocols import ReaderName
from .answers import Answer
from .outcomes import Outcome, judge_answer
from .programs import PreparedProgram, strip_label_directives
from .utf8 import utf8_encodable

# --- extraction and repair (process_generated_prolog.py) ------------------------------

_PROLOG_BLOCK = re.compile(r"```prolog\s*(.*?)```", re.IGNORECASE | re.DOTALL)
_ANY_BLOCK = re.compile(r"```(?:\w+)?\s*(.*?)```", re.IGNORECASE | re.DOTALL)
_INITIALIZATION = re.compile(
    r":-\s*initialization\s*\(\s*main\s*,\s*main\s*\)\s*\.", flags=re.IGNORECASE
)
# Upstream's pattern as written (a raw string holding ``\\.``): see the module docstring.
_MAIN_DEFINITION = re.compile(r"(^|\n)\s*main\s*(?::-|-->|\\.)", flags=re.IGNORECASE)

NEUTRAL_FIRST_LINE = ":- true.\n"
"""What stands on line 1 of a housing or uscis program in place of upstream's gold-label
directive: a directive that prints nothing, so the program's own text starts on line 2
as upstream's does (see the module docstring)."""
_LABEL_LINE_DOMAINS = frozenset({"housing", "uscis"})
"""The domains whose programs upstream starts with its ``Label:`` directive."""

EMPTY_PROLOG_EXTRACT = (
    "% EMPTY_PROLOG_EXTRACT: the reply held no text (upstream's stand-in program)\n"
)
"""What upstream writes for an empty reply: comments only, so it runs and abstains."""

# What upstream appends to a housing or uscis program without an entry point.
_ENTRY_MAIN: dict[str, str] = {
    "uscis": "main :-\n    decision(Result),\n    writeln(Result).\n",
    "housing": (
        "main :-\n    housing_answer(Result),\n    format('housing_answer(~w).~n', [Result]).\n"
    ),
}
_ENTRY_DIRECTIVE = ":- initialization(main, main).\n"


def is_upstream_prefix(prefix: str) -> bool:
    """Whether ``prefix`` (whole lines) holds only what this reader's preparation keeps or
    puts before a program that the harness's preparation leaves bare: the neutral first
    line and upstream's label directives, as SWI-Prolog's reader finds them (analysis
    derives one program's report from the other's when it does)."""
    rest = prefix.removeprefix(NEUTRAL_FIRST_LINE)
    return not rest or strip_label_directives(rest) == ""


def extract_prolog_block(text: str | None) -> str:
    """The program upstream runs for a reply ("" for an empty one)."""
    if not isinstance(text, str):
        return ""
    stripped = text.strip()
    if not stripped:
        return ""
    for pattern in (_PROLOG_BLOCK, _ANY_BLOCK):
        match = pattern.search(stripped)
        if match:
            block = match.group(1).strip()
            if block:
                return block
    return stripped


def repair_entrypoint(domain: Domain, program: str) -> PreparedProgram:
    """Upstream's ``_repair_missing_entrypoint`` for the domains that need one."""
    main = _ENTRY_MAIN.get(domain.name)
    if main is None:
        return PreparedProgram(text=program, repaired=False)
    has_init = bool(_INITIALIZATION.search(program))
    has_main = bool(_MAIN_DEFINITION.search(program))
    if has_init and has_main:
        return PreparedProgram(text=program, repaired=False)
    additions = ([] if has_main else [main]) + ([] if has_init else [_ENTRY_DIRECTIVE])
    notes = (["added upstream's main/0"] if not has_main else []) + (
        ["added :- initialization(main, main)."] if not has_init else []
    )
    return PreparedProgram(
        text=program.rstrip() + "\n\n" + "".join(additions), repaired=True, notes=tuple(notes)
    )


# --- reading a run (run_swipl.sh + bootstrap_outputs.py) ------------------------------

TIMEOUT_LINE = "Result: timeout"
_NUMERIC_LINE = re.compile(
    r"(?:Tax result|Total cost)[:\s]+([+-]?\d[\d,]*(?:\.\d+)?)", re.IGNORECASE
)
_BINARY_LINE = re.compile(r"Result:\s*(Entailment|Contradiction)", re.IGNORECASE)
_HOUSING_LINE = re.compile(r"housing_answer\((yes|no)\)")


def is_pl_path(line: str) -> bool:
    """``_is_pl_path``: a line that upstream reads as the path of the next program."""
    s = line.strip()
    return s.endswith(".pl") and ("/" in s or "\\" in s)


def block_lines(stdout: str) -> list[str]:
    """The lines of a program's block in upstream's output file (see the docstring):
    universal newlines, an unterminated last line lost to the next path line, and the
    block ended by a line that reads as a path."""
    text = stdout.replace("\r\n", "\n").replace("\r", "\n")
    lines = text.split("\n")
    # The element after the last "\n" is "" for terminated output; otherwise it is the
    # line the next path is glued to.
    lines.pop()
    for index, line in enumerate(lines):
        if is_pl_path(line):
            return lines[:index]
    return lines


_Value = float | int | None
"""Upstream's outcome: a float (numeric), 1/0 (sara_binary), 1/-1 (uscis, housing), or
None for its NaN (abstain)."""


def _outcome_from_lines(domain: Domain, lines: list[str]) -> tuple[_Value, str]:
    """``_extract_outcome_from_swipl``: the outcome, and what was read (for a reason)."""
    nonempty = [line for line in lines if line.strip()]
    if any(TIMEOUT_LINE in line for line in nonempty):
        return None, f"the output holds {TIMEOUT_LINE!r}"
    if domain.label_kind == "numeric":
        for line in nonempty:
            match = _NUMERIC_LINE.search(line)
            if match:
                return float(match.group(1).replace(",", "")), line
        return None, "no line with 'Tax result' or 'Total cost' and a number"
    if domain.name == "sara_binary":
        for line in nonempty:
            match = _BINARY_LINE.search(line)
            if match:
                return (1 if match.group(1).lower() == "entailment" else 0), line
        return None, "no 'Result: Entailment|Contradiction' line"
    for line in reversed(nonempty):
        s = line.strip().lower()
        if s.startswith("label:"):
            continue
        if domain.name == "uscis":
            if "accepted" in s:
                return 1, line
            if "dismissed" in s:
                return -1, line
        elif domain.name == "housing":
            match = _HOUSING_LINE.search(s)
            if match:
                return (1 if match.group(1) == "yes" else -1), line
        return None, f"the last line {line.strip()[:80]!r} is not a verdict"
    return None, "no output"


# --- direct replies (bootstrap_outputs._parse_direct_answer) --------------------------

_BOXED_NUMBER = re.compile(r"\\boxed\{([^}]+)\}")
_DOLLARS = re.compile(r"\$\s*([\d,]+(?:\.\d+)?)")
_BARE_NUMBER = re.compile(r"\b([\d,]+(?:\.\d+)?)\b")
_BOXED_BINARY = re.compile(r"\\boxed\{(Entailment|Contradiction)\}", re.IGNORECASE)
_BOXED_USCIS = re.compile(r"\\boxed\{(Accepted|Dismissed)\}", re.IGNORECASE)


def _extract_number(text: str) -> _Value:
    match = _BOXED_NUMBER.search(text)
    if match:
        raw = match.group(1).replace(",", "").replace("$", "").replace(" ", "")
        try:
            return float(raw)
        except ValueError:
            pass
    dollars = _DOLLARS.findall(text)
    if dollars:
        try:
            return float(dollars[-1].replace(",", ""))
        except ValueError:
            pass
    for raw in reversed(_BARE_NUMBER.findall(text)):
        try:
            value = float(raw.replace(",", ""))
        except ValueError:
            continue
        if value > 0:
            return value
    return None


def _last_mention(text: str, words: tuple[tuple[str, int], ...]) -> _Value:
    positions = [(text.lower().rfind(w), v) for w, v in words]
    found = [(i, v) for i, v in positions if i >= 0]
    return max(found, key=lambda p: p[0])[1] if found else None


def _housing_direct(text: str) -> _Value:
    first = text.strip().split()[0].lower().rstrip(".,;:") if text.strip() else ""
    if first in ("yes", "y"):
        return 1
    if first in ("no", "n"):
        return -1
    positions = [(text.lower().rfind(w), v) for w, v in (("yes", 1), ("no", -1))]
    found = [(i, v) for i, v in positions if i >= 0]
    if not found:
        return None
    index, value = max(found, key=lambda p: p[0])
    # Upstream's boundary test, on the original text at the lower-cased text's index.
    end = index + (3 if value == 1 else 2)
    before = text[index - 1] if index > 0 else " "
    after = text[end] if end < len(text) else " "
    return value if not before.isalpha() and not after.isalpha() else None


def _direct_value(domain: Domain, text: str) -> _Value:
    if not text or not text.strip():
        return None
    if domain.label_kind == "numeric":
        return _extract_number(text)
    if domain.name == "sara_binary":
        match = _BOXED_BINARY.search(text)
        if match:
            return 1 if match.group(1).lower() == "entailment" else 0
        return _last_mention(text, (("entailment", 1), ("contradiction", 0)))
    if domain.name == "uscis":
        match = _BOXED_USCIS.search(text)
        if match:
            return 1 if "accept" in match.group(1).lower() else -1
        return _last_mention(text, (("accepted", 1), ("dismissed", -1)))
    if domain.name == "housing":
        return _housing_direct(text)
    return None


# --- upstream's values as answers ----------------------------------------------------


def _answer(domain: Domain, value: _Value, why: str) -> Answer:
    """An upstream outcome as an ``Answer``: a float for numeric domains, the domain's
    canonical class for binary ones (1 is the positive class)."""
    if value is None:
        return Answer.abstain(why)
    if domain.label_kind == "numeric":
        number = float(value)
        if not math.isfinite(number):
            # Upstream's round() would raise here and stop its script.
            return Answer.abstain(f"a number too large to round: {why}")
        return Answer(value=number)
    return Answer(value=domain.positive if value == 1 else domain.negative)


def _stopped(execution: Execution) -> bool:
    """Whether the sandbox stopped the program, so that upstream's output file would
    hold no answer of it: not for a program that outlived SIGTERM (upstream reads what
    it printed), nor for one that ended by itself with a resource error on stderr
    (``classify`` calls it a memory limit; upstream never reads stderr)."""
    if not execution.killed or execution.limit == TIMEOUT_TERM_IGNORED:
        return False
    ended_by_itself = execution.exit_code is not None and execution.signal is None
    return not (
        ended_by_itself and execution.status == "resource_limit" and execution.limit == "memory"
    )


class PaperReader:
    name: ReaderName = "paper"
    toplevel: Toplevel = "eof"

    def read_direct(self, domain: Domain, text: str) -> Answer:
        if not text or not text.strip():
            return Answer.abstain("empty response")
        kind = "a number" if domain.label_kind == "numeric" else "a label"
        return _answer(domain, _direct_value(domain, text), f"no {kind} upstream reads")

    def extract(self, text: str) -> str | None:
        # Never None: upstream runs something for every reply (the empty stand-in).
        return extract_prolog_block(text)

    def prepare(self, domain: Domain, program: str) -> PreparedProgram:
        prepared = self._prepare(domain, program)
        if domain.name not in _LABEL_LINE_DOMAINS:
            return prepared
        return replace(prepared, text=NEUTRAL_FIRST_LINE + prepared.text)

    def _prepare(self, domain: Domain, program: str) -> PreparedProgram:
        text, replaced = utf8_encodable(program)
        notes = [f"replaced {replaced} character(s) UTF-8 cannot encode"] if replaced else []
        if not text.strip():
            return PreparedProgram(
                text=EMPTY_PROLOG_EXTRACT,
                repaired=True,
                notes=(*notes, "empty reply: upstream's EMPTY_PROLOG_EXTRACT program"),
            )
        prepared = repair_entrypoint(domain, text)
        if not notes:
            return prepared
        return PreparedProgram(text=prepared.text, repaired=True, notes=(*notes, *prepared.notes))

    def read_execution(self, domain: Domain, execution: Execution) -> Answer:
        if _stopped(execution):
            limit = f" ({execution.limit})" if execution.limit else ""
            return Answer.abstain(f"{TIMEOUT_LINE}: stopped, {execution.status}{limit}")
        # A program that outlived SIGTERM was killed: timeout's status is then 137, not
        # 124, and run_swipl.sh writes no "Result: timeout": its output is read.
        value, why = _outcome_from_lines(domain, block_lines(execution.stdout))
        return _answer(domain, value, why)

    def judge_answer(self, domain: Domain, answer: Answer, gold: Gold) -> Outcome:
        return judge_answer(domain, answer, gold)


PAPER_READER = PaperReader()
