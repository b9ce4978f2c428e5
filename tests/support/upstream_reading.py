"""Upstream's reading pipeline, run as released, and a reply set that exercises it.

``process_generated_prolog.py`` and ``run_swipl.sh`` run in subprocesses from the shared
mirror (never copied here) over upstream's JSON layout (``prolog.json`` with ``answers``);
``bootstrap_outputs.py`` is imported by path for its parsers (``parse_swipl_txt``,
``parse_source_json``, ``_is_correct``).  Its numpy and pandas come from the dev venv.

One arrangement beside upstream's own flow: an empty ``zzzz_end.pl`` is added to every
program folder, so that no sample's program is the folder's last.  ``run_swipl.sh``
echoes the next program's path right after a program's output, and an unterminated last
line of output is glued to it and lost; the last program of a folder has no next path.
The paper reader reproduces the position every other program is in.

``program_replies`` and ``direct_replies`` build the reply set: every wrapping
(```` ```prolog ````, ```` ```pl ````, bare fence, none, two blocks, empty), answer-line
variants, broken and looping programs, housing/uscis programs without an entry point, and
direct-answer shapes, mostly from each case's reference program.
"""

from __future__ import annotations

import importlib.util
import json
import os
import re
import subprocess
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from types import ModuleType
from typing import Any

from upstream_scripts import DATASET_DIRS, MIRROR

SCRIPTS = MIRROR / "scripts"
PROCESS = SCRIPTS / "process_generated_prolog.py"
RUN_SWIPL = SCRIPTS / "run_swipl.sh"
BOOTSTRAP = SCRIPTS / "bootstrap_outputs.py"
LAST_FILE = "zzzz_end.pl"
DOMAINS = ("sara_numeric", "sara_binary", "airline", "housing", "uscis")


def available() -> bool:
    return PROCESS.is_file() and RUN_SWIPL.is_file() and BOOTSTRAP.is_file()


_BOOTSTRAP: ModuleType | None = None


def bootstrap_module() -> ModuleType:
    """``bootstrap_outputs.py`` imported by path (its main is not run)."""
    global _BOOTSTRAP
    if _BOOTSTRAP is None:
        spec = importlib.util.spec_from_file_location("upstream_bootstrap_outputs", BOOTSTRAP)
        assert spec is not None and spec.loader is not None
        module = importlib.util.module_from_spec(spec)
        spec.loader.exec_module(module)
        _BOOTSTRAP = module
    return _BOOTSTRAP


def hard_rows(domain: str) -> list[dict[str, Any]]:
    path = MIRROR / "data" / DATASET_DIRS[domain] / "hard.json"
    rows: list[dict[str, Any]] = json.loads(path.read_text(encoding="utf-8"))
    return rows


def upstream_label(domain: str, raw: object) -> int:
    """The label as generate_e2e.py stores it (and bootstrap_outputs.py loads it)."""
    module = bootstrap_module()
    if domain == "housing":
        return int(module._norm_housing(raw))
    if domain == "uscis":
        return int(module._norm_uscis(raw))
    return int(raw)  # type: ignore[call-overload]


def outcome_class(domain: str, outcome: Any, label: Any) -> str:
    module = bootstrap_module()
    if module._is_abstain(outcome):
        return "abstain"
    return "correct" if module._is_correct(outcome, label, domain) else "wrong"


def run_programs(
    domain: str, answers: list[list[str]], labels: list[int], folder: Path, timeout_s: int
) -> subprocess.Popen[str]:
    """Start process_generated_prolog.py then run_swipl.sh over one domain's replies
    (one list of answers per case, as prolog.json holds them); the swipl output file is
    ``folder / "swipl.txt"``.  Returns the running shell."""
    folder.mkdir(parents=True, exist_ok=True)
    source = folder / "prolog.json"
    rows = [{"answers": a, "label": lbl} for a, lbl in zip(answers, labels, strict=True)]
    source.write_text(json.dumps(rows), encoding="utf-8")
    programs = folder / "programs"
    script = (
        f'"$PYTHON" "$PROCESS" --llm-output "$SOURCE" --save-dir "$PROGRAMS" --dataset "$DATASET"'
        f' > "$FOLDER/process.log" && : > "$PROGRAMS/{LAST_FILE}"'
        ' && bash "$RUN_SWIPL" "$PROGRAMS" > "$FOLDER/swipl.txt"'
    )
    env = {
        **{k: v for k, v in os.environ.items() if not k.startswith(("OPENAI_", "HTTP"))},
        "PYTHON": os.environ.get("PYTHON_FOR_UPSTREAM", _python()),
        "PROCESS": str(PROCESS),
        "RUN_SWIPL": str(RUN_SWIPL),
        "SOURCE": str(source),
        "PROGRAMS": str(programs),
        "DATASET": domain,
        "FOLDER": str(folder),
        "TIMEOUT_DURATION": str(timeout_s),
        "LC_ALL": "C",
    }
    return subprocess.Popen(
        ["bash", "-c", script], cwd=SCRIPTS, env=env, stderr=subprocess.PIPE, text=True
    )


def _python() -> str:
    import sys

    return sys.executable


def read_programs(domain: str, folder: Path, labels: list[int]) -> list[list[str]]:
    """Every sample's outcome class as bootstrap_outputs.py reads the swipl file."""
    module = bootstrap_module()
    combined = module.parse_swipl_txt(str(folder / "swipl.txt"), domain, labels)
    out: list[list[str]] = []
    for position in range(len(labels)):
        item = combined[position]
        out.append([outcome_class(domain, o, item["label"]) for o in item["outcomes"]])
    return out


def read_direct(
    domain: str, answers: list[list[str]], labels: list[int], folder: Path
) -> list[list[str]]:
    """Every direct sample's outcome class as bootstrap_outputs.py reads a source.json
    (an empty reply has generate_e2e.py's status ``empty_output``)."""
    module = bootstrap_module()
    folder.mkdir(parents=True, exist_ok=True)
    rows = [
        {
            "answers": a,
            "label": lbl,
            "generation_statuses": ["ok" if t.strip() else "empty_output" for t in a],
        }
        for a, lbl in zip(answers, labels, strict=True)
    ]
    path = folder / "source.json"
    path.write_text(json.dumps(rows), encoding="utf-8")
    combined = module.parse_source_json(str(path), domain)
    return [
        [outcome_class(domain, o, combined[p]["label"]) for o in combined[p]["outcomes"]]
        for p in range(len(labels))
    ]


# --- the reply set ---------------------------------------------------------------------

_LABEL_DIRECTIVE = re.compile(r'^:- format\("[^"\n]*", \["?Label: [^\n]*\]\)\.\n', re.MULTILINE)


def reference(row: dict[str, Any]) -> str:
    """A case's reference program without upstream's ``Label:`` directive (a model's
    reply never holds the gold label)."""
    return _LABEL_DIRECTIVE.sub("", str(row["reference_prolog"]))


def _atom(text: str) -> str:
    return "'" + text.replace("\\", "\\\\").replace("'", "\\'") + "'"


def printing(
    lines: list[str], *, newline: bool = True, halt: bool = False, init: str = "main"
) -> str:
    """A program printing ``lines`` from main/0 (run by ``initialization(main)`` or
    ``initialization(main, main)``), the last line with or without a line break."""
    calls = [f"format('~w~n', [{_atom(line)}])" for line in lines[:-1]]
    if lines:
        calls.append(f"format('~w{'~n' if newline else ''}', [{_atom(lines[-1])}])")
    if halt:
        calls.append("halt")
    body = ",\n    ".join(calls) or "true"
    directive = ":- initialization(main)." if init == "main" else ":- initialization(main, main)."
    return f"main :-\n    {body}.\n{directive}\n"


def _verdict_lines(domain: str, gold: Any, *, right: bool) -> str:
    """The line a program of the domain prints for the gold answer (or the other one)."""
    if domain in ("sara_numeric", "airline"):
        name = "Tax result" if domain == "sara_numeric" else "Total cost"
        return f"{name}: {int(gold) if right else int(gold) + 500}"
    if domain == "sara_binary":
        positive = int(gold) == 1
        return f"Result: {'Entailment' if positive == right else 'Contradiction'}"
    if domain == "uscis":
        positive = str(gold).lower() == "accepted"
        return "Accepted" if positive == right else "Dismissed"
    positive = str(gold).lower() == "yes"
    return f"housing_answer({'yes' if positive == right else 'no'})."


ProgramVariant = Callable[[str, dict[str, Any]], str]

_SKETCH = "% outline first\nanswer(X) :- compute(X).\n"
_LOOP = "loop :- sleep(0.05), loop.\n"
"""A loop that never ends and waits rather than spins: under the 2 s clock the looping
programs run at (``LOOP_TIMEOUT_S``), no CPU limit can end one first on either side
(upstream's ``timeout`` has none; ours is far above 2 s), so spinning would only take
CPU from the rest of the suite (40 runs of 2 s).  Spinning loops against CPU limits are
the sandbox's tests' (``tests/solver``) and DAR's (``test_dar_verifier_parity``)."""


def _common_programs() -> dict[str, ProgramVariant]:
    return {
        "prolog_fence": lambda d, r: (
            f"Here is the program.\n\n```prolog\n{reference(r)}\n```\n\nIt prints the answer."
        ),
        "pl_fence": lambda d, r: f"```pl\n{reference(r)}\n```",
        "bare_fence": lambda d, r: f"```\n{reference(r)}\n```",
        "no_fence": lambda d, r: reference(r),
        "prose_no_fence": lambda d, r: f"Here is my program:\n{reference(r)}\nDone.",
        "two_blocks_sketch_first": lambda d, r: (
            f"Sketch:\n```prolog\n{_SKETCH}```\nComplete program:\n```prolog\n{reference(r)}\n```"
        ),
        "two_blocks_full_first": lambda d, r: (
            f"```prolog\n{reference(r)}\n```\nA helper:\n```prolog\n{_SKETCH}```"
        ),
        "other_language_then_prolog": lambda d, r: (
            f"```python\nprint('hi')\n```\n```prolog\n{reference(r)}\n```"
        ),
        "bare_then_prolog": lambda d, r: f"```\n{_SKETCH}```\n```prolog\n{reference(r)}\n```",
        "empty": lambda d, r: "",
        "whitespace": lambda d, r: "  \n\n",
        "empty_prolog_fence": lambda d, r: "```prolog\n```",
        "cut_off": lambda d, r: f"```prolog\n{reference(r)[: len(reference(r)) // 2]}",
        "syntax_error_end": lambda d, r: f"```prolog\n{reference(r)}\nbroken(:- x.\n```",
        "syntax_error_start": lambda d, r: f"```prolog\nfoo(.\n{reference(r)}\n```",
        "undefined_predicate": lambda d, r: _undefined(d),
        "runtime_error": lambda d, r: (
            ":- initialization(main).\nmain :- X is foo + 1, format('~w~n', [X]).\n"
        ),
        "right_answer": lambda d, r: printing([_verdict_lines(d, r["label"], right=True)]),
        "wrong_answer": lambda d, r: printing([_verdict_lines(d, r["label"], right=False)]),
        "right_then_wrong": lambda d, r: printing(
            [_verdict_lines(d, r["label"], right=True), _verdict_lines(d, r["label"], right=False)]
        ),
        "wrong_then_right": lambda d, r: printing(
            [_verdict_lines(d, r["label"], right=False), _verdict_lines(d, r["label"], right=True)]
        ),
        "no_newline_halt": lambda d, r: printing(
            [_verdict_lines(d, r["label"], right=True)], newline=False, halt=True
        ),
        "no_newline_toplevel": lambda d, r: printing(
            [_verdict_lines(d, r["label"], right=True)], newline=False
        ),
        "no_newline_main_main": lambda d, r: printing(
            [_verdict_lines(d, r["label"], right=True)], newline=False, init="main_main"
        ),
        "path_line_first": lambda d, r: printing(
            ["% loaded /tmp/rules.pl", _verdict_lines(d, r["label"], right=True)]
        ),
        "path_line_after": lambda d, r: printing(
            [_verdict_lines(d, r["label"], right=True), "see C:\\rules\\tax.pl"]
        ),
        "prints_timeout": lambda d, r: printing(
            ["Result: timeout", _verdict_lines(d, r["label"], right=True)]
        ),
        "carriage_returns": lambda d, r: printing(
            [_verdict_lines(d, r["label"], right=True) + "\r" + "trailing note"]
        ),
        "nothing_printed": lambda d, r: ":- initialization(main).\nmain :- true.\n",
        "reasoning_then_fence": lambda d, r: (
            f"<think>\n```prolog\n{_SKETCH}```\n</think>\n```prolog\n{reference(r)}\n```"
        ),
    }


def _undefined(domain: str) -> str:
    if domain == "housing":
        return "housing_answer(R) :- undefined_rule(R).\n"
    if domain == "uscis":
        return "decision(R) :- undefined_rule(R).\n"
    return ":- initialization(main).\nmain :- compute_total(X), format('Result: ~w~n', [X]).\n"


def _numeric_programs(name: str) -> dict[str, ProgramVariant]:
    def line(text: str) -> ProgramVariant:
        return lambda d, r: printing([text.format(name=name, g=int(r["label"]))])

    return {
        "commas": lambda d, r: printing([f"{name}: {int(r['label']):,}"]),
        "decimals": line("{name}: {g}.40"),
        "decimals_round_away": lambda d, r: printing([f"{name}: {int(r['label']) + 1}.6"]),
        "negative": line("{name}: -{g}"),
        "dollar_sign": line("{name}: ${g}"),
        "equals_sign": line("{name} = {g}"),
        "no_colon_space": line("{name}:{g}"),
        "mid_line": line("The final {name}: {g} dollars"),
        "lower_case": lambda d, r: printing([f"{name.lower()}: {int(r['label'])}"]),
        "other_label": lambda d, r: printing(
            [f"{'Total cost' if name == 'Tax result' else 'Tax result'}: {int(r['label'])}"]
        ),
        "missing_line": line("The amount is {g}"),
        "plus_one": lambda d, r: printing([f"{name}: {int(r['label']) + 1}"]),
        "plus_two": lambda d, r: printing([f"{name}: {int(r['label']) + 2}"]),
    }


_EXTRA_PROGRAMS: dict[str, Callable[[], dict[str, ProgramVariant]]] = {
    "sara_numeric": lambda: _numeric_programs("Tax result"),
    "airline": lambda: _numeric_programs("Total cost"),
    "sara_binary": lambda: {
        "lower_case": lambda d, r: printing([_verdict_lines(d, r["label"], right=True).lower()]),
        "no_space": lambda d, r: printing(
            [_verdict_lines(d, r["label"], right=True).replace(": ", ":")]
        ),
        "prefixed": lambda d, r: printing(["Final " + _verdict_lines(d, r["label"], right=True)]),
        "bare_label": lambda d, r: printing(["Entailment"]),
    },
    "uscis": lambda: {
        "not_accepted": lambda d, r: printing(["The appeal is not accepted"]),
        "sustained": lambda d, r: printing(["Sustained"]),
        "verdict_then_detail": lambda d, r: printing(
            [_verdict_lines(d, r["label"], right=True), "Details follow."]
        ),
        "both_words": lambda d, r: printing(["accepted or dismissed"]),
        "label_line_last": lambda d, r: printing(
            [_verdict_lines(d, r["label"], right=True), "Label: Dismissed"]
        ),
        "no_entrypoint": lambda d, r: reference(r),
        "main_fact": lambda d, r: f"```prolog\n{reference(r)}\nmain.\n```",
        "main_main_present": lambda d, r: (
            f"{reference(r)}\nmain :- decision(R), format('~w~n', [R]).\n"
            ":- initialization(main, main).\n"
        ),
    },
    "housing": lambda: {
        "spaced": lambda d, r: printing(["housing_answer( yes )."]),
        "upper_case": lambda d, r: printing(["HOUSING_ANSWER(YES)."]),
        "answer_word": lambda d, r: printing(["Answer: yes"]),
        "verdict_then_detail": lambda d, r: printing(
            [_verdict_lines(d, r["label"], right=True), "done"]
        ),
        "label_line_last": lambda d, r: printing(
            [_verdict_lines(d, r["label"], right=True), "Label: no"]
        ),
        "without_initialization": lambda d, r: re.sub(
            r":-\s*initialization\(main,\s*main\)\.", "", reference(r)
        ),
        "without_main_and_init": lambda d, r: reference(r).split("\nmain :-")[0],
        "initialization_main_only": lambda d, r: re.sub(
            r":-\s*initialization\(main,\s*main\)\.", ":- initialization(main).", reference(r)
        ),
        "main_fact": lambda d, r: reference(r).split("\nmain :-")[0] + "\nmain.\n",
    },
}

LOOPS: dict[str, ProgramVariant] = {
    "loop_at_load": lambda d, r: f":- initialization(main).\n{_LOOP}main :- loop.\n",
    "loop_in_main_main": lambda d, r: f"{_LOOP}main :- loop.\n:- initialization(main, main).\n",
    "answer_then_loop_main_main": lambda d, r: (
        f"{_LOOP}main :- format('~w~n', [{_atom(_verdict_lines(d, r['label'], right=True))}]),"
        " loop.\n:- initialization(main, main).\n"
    ),
    "answer_then_loop_at_load": lambda d, r: (
        f"{_LOOP}main :- format('~w~n', [{_atom(_verdict_lines(d, r['label'], right=True))}]),"
        " loop.\n:- initialization(main).\n"
    ),
}
"""Looping programs (each costs a timeout on both sides): ``loop_replies``."""


def _traced(domain: str, row: dict[str, Any]) -> str:
    """About 100 KB of trace on stdout, then the right verdict line."""
    trace = "format('trace step ~d: checking whether the rule applies to the facts~n', [I])"
    verdict = _atom(_verdict_lines(domain, row["label"], right=True))
    return (
        f"main :-\n    forall(between(1, 1700, I), {trace}),\n"
        f"    format('~w~n', [{verdict}]).\n:- initialization(main).\n"
    )


def _warned(domain: str, row: dict[str, Any]) -> str:
    """About 130 KB of SWI-Prolog's own singleton warnings on stderr while loading, then
    a program that prints the right verdict."""
    clauses = "".join(f"unused_rule_{i}(Value) :- true.\n" for i in range(1500))
    return clauses + printing([_verdict_lines(domain, row["label"], right=True)])


_SHEBANG = "#!/usr/bin/env swipl\n"

LIMIT_SHAPES: dict[str, ProgramVariant] = {
    "long_trace": _traced,
    "stderr_warnings": _warned,
    "shebang_reference": lambda d, r: f"```prolog\n{_SHEBANG}{reference(r)}\n```",
    "shebang_printing": lambda d, r: (
        _SHEBANG + printing([_verdict_lines(d, r["label"], right=True)])
    ),
}
"""Replies real models write that meet the sandbox's limits rather than the reader (issue
41): a long trace before the answer line, a flood of warnings on stderr, and a script
line first (a syntax error on line 2 where upstream's ``Label:`` directive is line 1)."""


def limit_replies(domain: str, rows: list[dict[str, Any]]) -> list[list[Reply]]:
    """Every ``LIMIT_SHAPES`` reply for each of ``rows``."""
    return [[Reply(name, make(domain, row)) for name, make in LIMIT_SHAPES.items()] for row in rows]


def program_variants(domain: str) -> dict[str, ProgramVariant]:
    return {**_common_programs(), **_EXTRA_PROGRAMS[domain]()}


@dataclass(frozen=True)
class Reply:
    variant: str
    text: str


def program_replies(
    domain: str, rows: list[dict[str, Any]], per_case: int = 3
) -> list[list[Reply]]:
    """Each case's program replies: ``per_case`` variants, cycling through the domain's
    list so that every variant meets several cases."""
    variants = list(program_variants(domain).items())
    out: list[list[Reply]] = []
    for index, row in enumerate(rows):
        chosen = [variants[(per_case * index + t) % len(variants)] for t in range(per_case)]
        out.append([Reply(name, make(domain, row)) for name, make in chosen])
    return out


def loop_replies(domain: str, row: dict[str, Any]) -> list[Reply]:
    """The looping programs for one case (run apart, under a short time limit)."""
    return [Reply(name, make(domain, row)) for name, make in LOOPS.items()]


def direct_replies(domain: str, row: dict[str, Any]) -> list[Reply]:
    """Direct-answer shapes for one case (cheap: no program runs)."""
    gold = row["label"]
    if domain in ("sara_numeric", "airline"):
        g = int(gold)
        texts = {
            "boxed": f"The answer is \\boxed{{{g}}}.",
            "boxed_commas_dollar": f"\\boxed{{${g:,}}}",
            "boxed_text": f"\\boxed{{\\text{{{g}}}}} and $5",
            "dollars": f"Cost is ${g - 100:,} before fees; total ${g:,}.",
            "dollars_then_number": f"Total ${g}, then 12 items.",
            "total_note": f"Total: {g}\n\nNote: 0 items exempt.",
            "negative": f"-{g}",
            "decimal": f"{g}.49",
            "plus_two": f"{g + 2}",
            "zero_then_nothing": "The answer is 0",
            "no_number": "I cannot determine this.",
            "empty": "",
            "spaces": "   ",
            "think": f"<think>maybe {g + 7}</think> Answer: {g}",
            "year": f"In 2017 the amount was {g}.",
        }
    elif domain == "sara_binary":
        right = "Entailment" if int(gold) == 1 else "Contradiction"
        wrong = "Contradiction" if right == "Entailment" else "Entailment"
        texts = {
            "boxed": f"\\boxed{{{right}}} although {wrong}",
            "boxed_wrong": f"\\boxed{{{wrong}}}",
            "not_contradiction": "not Contradiction",
            "not_entailment": "not Entailment",
            "last_mention": f"{right}? No: {wrong}.",
            "plain": right,
            "lower": right.lower(),
            "plural": f"{right.lower()}s",
            "none": "I do not know.",
            "empty": "",
            "yes": "Yes",
        }
    elif domain == "uscis":
        right = "Accepted" if str(gold).lower() == "accepted" else "Dismissed"
        wrong = "Dismissed" if right == "Accepted" else "Accepted"
        texts = {
            "boxed": f"\\boxed{{{right}}}",
            "boxed_lower": f"\\boxed{{{wrong.lower()}}} {right}",
            "plain": right,
            "sustained": "Sustained",
            "appeal_sustained": "The appeal is sustained.",
            "not_accepted": "The appeal is not accepted.",
            "last_mention": f"{right} at first, finally {wrong}",
            "empty": "",
            "none": "Remanded.",
        }
    else:
        right = "Yes" if str(gold).lower() == "yes" else "No"
        wrong = "No" if right == "Yes" else "Yes"
        texts = {
            "y": "Y",
            "n": "N",
            "plain": right,
            "dotted": f"{right}.",
            "bold": f"**{right}**",
            "reasoned_yes": "The statute says so, therefore yes",
            "reasoned_no": "Under the statute the answer is no",
            "nothing": "Nobody knows",
            "yesterday": "It was decided yesterday",
            "wrong_first": f"{wrong}, because of the rule.",
            "empty": "",
            "answer_colon": f"Answer: {right}",
        }
    return [Reply(name, text) for name, text in texts.items()]
