"""Programs out of text: extraction from a model response, and preparation for running.

Extraction rule (``extract_program``), applied to the response with its reasoning blocks
(``<think>...</think>`` and the like, see ``reasoning``) removed, as before a direct
answer is read:

1. Fenced blocks are collected (```` ``` ```` or ``~~~``; an unterminated last fence runs
   to the end of the text, as happens when a response is cut off).  Blocks labelled
   ``prolog``, ``pl``, ``swipl`` or ``swi-prolog`` are used when there are any; otherwise
   unlabelled blocks that look like Prolog; otherwise blocks with another label that
   look like Prolog.
2. Several blocks form one program, concatenated in order, because the protocol asks for
   rules, then facts, then the query, and models often put each in its own block.  But a
   block that is a *complete* program (it has a directive that runs something:
   ``:- initialization(...)``, ``:- halt``, or a directive that prints) ends a draft: when
   a later block is complete too, everything up to and including the earlier complete
   block is a superseded draft and is dropped.
3. Without fences, the whole text is taken when it reads as bare Prolog; otherwise there
   is no program.

"Looks like Prolog" (for unfenced text and for blocks without a Prolog label) is decided
by SWI-Prolog's own reader first (``prolog/read_program.pl``: a text that ``read_term/3``
reads to the end, with at least one rule, directive or compound fact, is a program);
when the reader stops at a syntax error, or ``swipl`` cannot be run, a line rule decides:
at least 80% of the non-blank lines, block comments removed and clause continuation
lines counted as part of their clause, read as Prolog.

Preparation (``prepare_program``) removes upstream's injected directives that print
``Label: ...`` (found by SWI-Prolog's reader, ``prolog/label_directives.pl``), so the gold
label never reaches a program the harness runs, and adds the
domain's entrypoint when it is missing (paper B.4; see ``ensure_entrypoint``).
"""

from __future__ import annotations

import os
import re
import shutil
import subprocess
import threading
from collections import OrderedDict
from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from typing import IO

from .._paths import PROLOG
from ..data.domains import Domain
from .reasoning import strip_reasoning
from .utf8 import utf8_encodable

_FENCE_OPEN = re.compile(r"^[ \t]*(```+|~~~+)[ \t]*([\w+.#-]*)[^\n]*$", re.MULTILINE)
_PROLOG_LABELS = {"prolog", "pl", "swipl", "swi-prolog", "swiprolog", "pro"}
_RUNNING_DIRECTIVE = re.compile(
    r"^\s*:-\s*(initialization\s*\(|halt\b|.*\b(format|write|writeln|print|print_message)\s*\()",
    re.MULTILINE,
)
_COMMENT_OR_DIRECTIVE = re.compile(r"^\s*(%|/\*|\*|:-)")
_ATOM_FACT = re.compile(r"^\s*[a-z][A-Za-z0-9_]*\s*\.\s*$")


@dataclass(frozen=True)
class _Block:
    label: str
    body: str


def extract_program(text: str | None) -> str | None:
    """Return the Prolog program in a model response, or None when there is none."""
    if not text:
        return None
    text = strip_reasoning(text)
    blocks = _fenced_blocks(text)
    if blocks:
        chosen = _choose_blocks(blocks)
        if not chosen:
            return None
        program = "\n\n".join(b.body.strip("\n") for b in _drop_drafts(chosen)).strip()
        return program + "\n" if program else None
    if _looks_like_prolog(text):
        return text.strip() + "\n"
    return None


_FENCE_LINE = re.compile(r"^[ \t]*(```|~~~)", re.MULTILINE)


def has_fence(text: str) -> bool:
    """Whether the text holds a fenced block (a response rather than bare code)."""
    return bool(_FENCE_LINE.search(text))


def unwrap_fenced(text: str) -> str:
    """The code of a text that may be a raw response in a fence, as the published whole
    splits store their reference programs; bare code is returned as it is."""
    if has_fence(text):
        return extract_program(text) or text
    return text


def _fenced_blocks(text: str) -> list[_Block]:
    blocks: list[_Block] = []
    pos = 0
    while True:
        opening = _FENCE_OPEN.search(text, pos)
        if opening is None:
            return blocks
        fence, label = opening.group(1), opening.group(2).lower()
        start = opening.end() + 1
        closing = re.compile(
            r"^[ \t]*" + re.escape(fence[0]) + "{" + str(len(fence)) + r",}[ \t]*$", re.MULTILINE
        ).search(text, start)
        end = closing.start() if closing else len(text)
        blocks.append(_Block(label=label, body=text[start:end] if start <= end else ""))
        if closing is None:
            return blocks
        pos = closing.end()


def _choose_blocks(blocks: list[_Block]) -> list[_Block]:
    labelled = [b for b in blocks if b.label in _PROLOG_LABELS]
    if labelled:
        return labelled
    unlabelled = [b for b in blocks if not b.label and _looks_like_prolog(b.body)]
    if unlabelled:
        return unlabelled
    return [b for b in blocks if _looks_like_prolog(b.body)]


def _drop_drafts(blocks: list[_Block]) -> list[_Block]:
    complete = [i for i, b in enumerate(blocks) if _RUNNING_DIRECTIVE.search(b.body)]
    if len(complete) < 2:
        return blocks
    return blocks[complete[-2] + 1 :]


def _looks_like_prolog(text: str) -> bool:
    read = read_by_swipl(text)
    if read is not None and read > 0:
        return True
    return _lines_look_like_prolog(text)


_READER = PROLOG / "read_program.pl"
_READER_TIMEOUT_S = 10.0


def read_by_swipl(text: str) -> int | None:
    """How many rules, directives and compound facts SWI-Prolog's reader reads from the
    whole text; None when the reader stops (a syntax error, a variable as a clause) or
    swipl cannot be run.  Nothing in the text is executed (see the script's header)."""
    swipl = shutil.which("swipl")
    if swipl is None or not text.strip():
        return None
    try:
        done = subprocess.run(
            [swipl, "--no-tty", "-q", "-f", "none", str(_READER)],
            input=text.encode("utf-8", errors="replace"),
            capture_output=True,
            timeout=_READER_TIMEOUT_S,
            check=False,
        )
    except (OSError, subprocess.TimeoutExpired):
        return None
    words = done.stdout.decode("utf-8", errors="replace").split()
    if len(words) == 2 and words[0] == "program" and words[1].isdigit():
        return int(words[1])
    return None


_BLOCK_COMMENT = re.compile(r"/\*.*?(\*/|\Z)", re.DOTALL)
_LINE_COMMENT = re.compile(r"%.*$")


def _lines_look_like_prolog(text: str) -> bool:
    """The line rule: comments are Prolog, and every line of a clause that has not ended
    yet (the previous Prolog line did not end with a full stop) is a continuation."""
    # A block comment keeps its line breaks, so a line count stays a line count.
    without_blocks = _BLOCK_COMMENT.sub(lambda m: "\n" * m.group(0).count("\n"), text)
    lines = [ln for ln in without_blocks.splitlines() if ln.strip()]
    if not lines:
        return False
    clause_like = 0
    has_clause_end = False
    in_clause = False
    for line in lines:
        code = _LINE_COMMENT.sub("", line).rstrip()
        if not code.strip():
            clause_like += 1  # a comment line
            continue
        if in_clause or _prolog_line(line):
            clause_like += 1
            ends = code.endswith(".")
            has_clause_end = has_clause_end or ends
            in_clause = not ends
        else:
            in_clause = False
    return has_clause_end and clause_like / len(lines) >= 0.8


def _prolog_line(line: str) -> bool:
    """A line that reads as Prolog rather than prose: a comment or directive, a line with
    a term or an operator, or a clause continuation."""
    stripped = line.strip()
    return bool(
        _COMMENT_OR_DIRECTIVE.match(line)
        or _ATOM_FACT.match(line)
        or "(" in stripped
        or ":-" in stripped
        or stripped.endswith((",", ";", "->", "[", "|"))
        or stripped in (")", ").", "]", "].", ")),", "))")
    )


# --- preparation -------------------------------------------------------------------

# Upstream injected the gold label into some reference programs as directives that print
# it: ``:- format("~w~n", ["Label: 1166"]).``, over two lines, ``writeln/print`` variants,
# ``format/3``.  SWI-Prolog's reader finds them (``prolog/label_directives.pl``, a server
# started once per process, so preparing many programs costs one start of swipl).
_LABEL_READER = PROLOG / "label_directives.pl"
_LABEL_MARK = "Label:"


class _LabelReader:
    """The long-lived ``label_directives.pl`` process of this process (a forked child
    starts its own), one request at a time."""

    def __init__(self) -> None:
        self._lock = threading.Lock()
        self._process: subprocess.Popen[str] | None = None
        self._pid = 0

    def spans(self, texts: Sequence[str]) -> list[list[tuple[int, int]]] | None:
        """Character spans of each text's label directives; None when swipl cannot
        answer.  The requests are written one after another and the replies read after
        (the replies are a few bytes: no pipe fills), so a batch costs no round trip per
        program."""
        with self._lock:
            for _ in range(2):  # one restart when the process died
                process = self._running()
                if process is None:
                    return None
                try:
                    assert process.stdin is not None and process.stdout is not None
                    process.stdin.write("".join(f"{len(t)}\n{t}" for t in texts))
                    process.stdin.flush()
                    return [self._reply(process.stdout) for _ in texts]
                except (OSError, ValueError):
                    self._stop()
            return None

    @staticmethod
    def _reply(stdout: IO[str]) -> list[tuple[int, int]]:
        spans: list[tuple[int, int]] = []
        while True:
            line = stdout.readline()
            if not line:
                raise OSError("the label reader ended")
            words = line.split()
            if words == ["done"]:
                return spans
            if len(words) == 3 and words[0] == "remove":
                spans.append((int(words[1]), int(words[2])))

    def start(self) -> None:
        """Start the process if it is not running, without waiting for it."""
        with self._lock:
            self._running()

    def _running(self) -> subprocess.Popen[str] | None:
        alive = self._process is not None and self._process.poll() is None
        if alive and self._pid == os.getpid():
            return self._process
        self._process = None
        swipl = shutil.which("swipl")
        if swipl is None:
            return None
        self._process = subprocess.Popen(
            [swipl, "--no-tty", "-q", "-f", "none", str(_LABEL_READER)],
            stdin=subprocess.PIPE,
            stdout=subprocess.PIPE,
            stderr=subprocess.DEVNULL,
            text=True,
            encoding="utf-8",
        )
        self._pid = os.getpid()
        return self._process

    def _stop(self) -> None:
        if self._process is not None and self._pid == os.getpid():
            self._process.kill()
            self._process.wait()
        self._process = None


_LABELS = _LabelReader()


_FOUND: OrderedDict[str, list[tuple[int, int]]] = OrderedDict()
_FOUND_SIZE = 4096


def start_label_reader() -> None:
    """Start the label reader now, without waiting for it (it boots while the caller
    loads its data; the first ``find_label_directives`` then finds it up)."""
    _LABELS.start()


def may_hold_label_directives(program: str) -> bool:
    """Whether the reader must look at this program (no ``Label:`` anywhere in the text,
    no label directive: such programs are prepared without a reader call)."""
    return _LABEL_MARK in program


def find_label_directives(programs: Iterable[str]) -> None:
    """Read the label directives of many programs in one batch, kept for
    ``strip_label_directives`` (``validate`` prepares every reference program at once).
    Kept per text: several stages of one process prepare the same reference program."""
    wanted = list(
        dict.fromkeys(p for p in programs if may_hold_label_directives(p) and p not in _FOUND)
    )
    if not wanted:
        return
    found = _LABELS.spans(wanted)
    if found is None:
        return
    for text, spans in zip(wanted, found, strict=True):
        _FOUND[text] = spans
    while len(_FOUND) > _FOUND_SIZE:
        _FOUND.popitem(last=False)


def strip_label_directives(program: str) -> str:
    """Remove upstream's directives that print ``Label: ...`` from a program (each with
    the line break that ends it), as SWI-Prolog's reader finds them."""
    if not may_hold_label_directives(program):
        return program  # nothing to find: no reader call
    find_label_directives([program])
    spans = _FOUND.get(program)
    if not spans:
        return program
    out: list[str] = []
    pos = 0
    for start, end in sorted(spans):
        out.append(program[pos:start])
        if program.startswith("\r\n", end):
            end += 2
        elif program.startswith("\n", end):
            end += 1
        pos = end
    out.append(program[pos:])
    return "".join(out)


@dataclass(frozen=True)
class PreparedProgram:
    text: str
    repaired: bool
    notes: tuple[str, ...] = ()


_MAIN_DEFINED = re.compile(r"^main\s*(:-|-->|\.)", re.MULTILINE)


def defines_main(program: str) -> bool:
    return bool(_MAIN_DEFINED.search(program))


_INIT_MAIN = re.compile(
    r"^\s*:-\s*initialization\s*\(\s*main\s*(,\s*main\s*)?\)\s*\.", re.MULTILINE
)


def ensure_entrypoint(domain: Domain, program: str) -> PreparedProgram:
    """Give housing and uscis programs their ``main/0`` and initialization directive.

    The one repair (paper B.4 requires both): when ``main/0`` is missing, add
    ``main :- <answer_predicate>(R), format(<print_format>, [R]).``; when no
    ``:- initialization(main...)`` directive is present, append
    ``:- initialization(main, main).``.  Domains without an entrypoint rule are untouched.
    """
    entry = domain.entrypoint
    if entry is None:
        return PreparedProgram(text=program, repaired=False)
    notes: list[str] = []
    text = program.rstrip("\n") + "\n"
    if not defines_main(text):
        text += (
            f"\n% added by deonticbench: the domain's entrypoint (paper B.4)\n"
            f"main :- {entry.answer_predicate}(Result), format('{entry.print_format}', [Result]).\n"
        )
        notes.append(f"added main/0 calling {entry.answer_predicate}/1")
    if not _INIT_MAIN.search(text):
        text += "\n:- initialization(main, main).\n"
        notes.append("added :- initialization(main, main).")
    return PreparedProgram(text=text, repaired=bool(notes), notes=tuple(notes))


def prepare_program(domain: Domain, program: str) -> PreparedProgram:
    """Strip label directives, then ensure the entrypoint: the program the harness runs.

    A program holding characters UTF-8 cannot encode (lone surrogates) cannot be written
    for SWI-Prolog; each is replaced by U+FFFD and a note says how many were."""
    encodable, replaced = utf8_encodable(program)
    stripped = strip_label_directives(encodable)
    prepared = ensure_entrypoint(domain, stripped)
    notes: list[str] = []
    if replaced:
        notes.append(f"replaced {replaced} character(s) UTF-8 cannot encode with U+FFFD")
    if stripped != encodable:
        notes.append("removed upstream Label directive")
    if not notes:
        return prepared
    # Removing the label directive changes the program run: it is a repair too.
    return PreparedProgram(
        text=prepared.text,
        repaired=prepared.repaired or stripped != encodable,
        notes=(*notes, *prepared.notes),
    )
