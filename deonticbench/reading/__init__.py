"""Reading, after the solver: from a model's response to a judged answer.

Reasoning blocks are removed (``reasoning``), the program is found and prepared for
SWI-Prolog (``programs``), text is made encodable (``utf8``); after the solver has run
the program, the answer is read from its output or from a direct response (``answers``)
and judged against the gold label by the paper's rules (``outcomes.judge_answer``); the verbal
``Confidence: NN%`` line and the answer's token probability are read too
(``confidence``).  A ``Reader`` (``reader_for(name)``) bundles one protocol's rules:
the harness's (``harness``) or upstream's (``paper``).  ``judging`` is the one path
every front door judges through (``judge_attempt``/``ajudge_attempt``: a reply or a
program, a domain and gold label, the protocol's reader, the caller's way to run a
program) and hands back a ``JudgedAttempt``: no other stage extracts or prepares a
program (the few-shot exemplar renderer aside).  It sits above the solver in the layers
because it reads the solver's ``Execution``; the solver runs plain program text.
"""

from __future__ import annotations

from .answers import (
    Answer,
    answer_from_execution,
    parse_number,
    read_direct_answer,
    read_program_answer,
)
from .confidence import answer_probability, read_verbal_confidence, without_confidence
from .dar_verifier import DAR_MOUNT, RunsPrograms, ajudge_dar_app
from .feedback_retry import calls_for_retry
from .harness import HARNESS_READER
from .judging import (
    NO_PROGRAM,
    JudgedAttempt,
    Program,
    ReadAttempt,
    Reply,
    ajudge_attempt,
    judge_attempt,
    read_attempt,
    read_references,
    reference_as_run,
    reference_code,
    start_preparing,
)
from .outcomes import OUTCOMES, Outcome, judge_answer, within_tolerance
from .paper import is_pl_path, is_upstream_prefix
from .programs import (
    defines_main,
    ensure_entrypoint,
    extract_program,
    prepare_program,
    strip_label_directives,
    unwrap_fenced,
)
from .reader import Reader, reader_for
from .utf8 import utf8_encodable

__all__ = [
    "DAR_MOUNT",
    "HARNESS_READER",
    "NO_PROGRAM",
    "OUTCOMES",
    "Answer",
    "JudgedAttempt",
    "Outcome",
    "Program",
    "ReadAttempt",
    "Reader",
    "Reply",
    "RunsPrograms",
    "ajudge_attempt",
    "ajudge_dar_app",
    "answer_from_execution",
    "answer_probability",
    "calls_for_retry",
    "defines_main",
    "ensure_entrypoint",
    "extract_program",
    "is_pl_path",
    "is_upstream_prefix",
    "judge_answer",
    "judge_attempt",
    "parse_number",
    "prepare_program",
    "read_attempt",
    "read_direct_answer",
    "read_program_answer",
    "read_references",
    "read_verbal_confidence",
    "reader_for",
    "reference_as_run",
    "reference_code",
    "start_preparing",
    "strip_label_directives",
    "unwrap_fenced",
    "utf8_encodable",
    "within_tolerance",
    "without_confidence",
]
