"""Rendering a case into chat messages, and the retry prompt after a failed program.

The case's gold label and its own reference program never enter its prompt: ``render``
reads only the statutes, the case text, the question and the state.  Exemplars show their
reference program with upstream's injected ``Label:`` directives removed.
"""

from __future__ import annotations

import hashlib
import json
import re
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path

from ..data.cases import Case
from ..data.domains import Domain, get_domain
from ..reading.programs import (
    defines_main,
    ensure_entrypoint,
    strip_label_directives,
    unwrap_fenced,
)
from ..reading.utf8 import utf8_encodable
from ..vocabulary.chat import Message
from ..vocabulary.modes import ALL_MODES, SETTINGS, Mode
from .exemplars import problem_key
from .templates import (
    FEEDBACK_FILE,
    FEEDBACK_FILES,
    FEEDBACK_NO_ANSWER_FILE,
    FEEDBACK_NO_PROGRAM_FILE,
    FEEDBACK_REPORT_FILE,
    SYSTEM_FILE,
    TemplateError,
    fill,
    first_placeholder,
    hash_template_files,
    placeholders,
    prompts_root,
    read_template,
    template_files,
)

FEEDBACK_OUTPUT_LIMIT = 6000
"""Characters of solver output quoted in a feedback message; a program that prints in a
loop would otherwise blow up the retry prompt.  Head and tail are kept."""

_RUN_DEFINED = re.compile(r"^run\s*:-", re.MULTILINE)


@dataclass(frozen=True)
class Prompt:
    messages: tuple[Message, ...]
    template: str
    """Which template produced it, e.g. ``airline/few-shot``."""
    template_hash: str
    """sha256 over the template files used (system, mode template, exemplar format)."""
    prompt_hash: str
    """sha256 over the rendered messages (role and content): the response-cache key."""
    shared_prefix: int = 0
    """Characters at the start of the user message that every case of the domain and
    mode may share: the template's text through ``{statutes}`` when the statutes come
    first (SARA, airline); 0 otherwise.  Where prompt caching puts a breakpoint; it
    changes no text and no hash."""


# --- rendering -------------------------------------------------------------------------


def _case_values(case: Case) -> dict[str, str]:
    # Only what the model may see: never case.gold, never case.reference_prolog.
    return {
        "statutes": case.statutes.strip(),
        "case_text": case.text.strip(),
        "question": case.question.strip(),
        "state": str(case.extra.get("state", "")).strip(),
    }


def demonstration(domain: Domain, case: Case) -> str:
    """The program an exemplar demonstrates, in the shape the prompt asks for.

    Upstream's reference programs need three touches: the whole splits wrap each program
    in a Markdown fence (taken off, so the prompt's own fence is the only one); some carry
    an injected ``Label:`` directive (removed: it would print the gold); and uscis
    programs name their entry ``run/0`` without an initialization directive, so they get
    ``main :- run.`` and the domain's entrypoint, as the prompt requires of the model.
    """
    text = unwrap_fenced(strip_label_directives(case.reference_prolog))
    if domain.entrypoint is not None and _RUN_DEFINED.search(text) and not defines_main(text):
        text = text.rstrip("\n") + "\n\nmain :- run.\n"
    text = ensure_entrypoint(domain, text).text
    return text.strip("\n")


def render(
    case: Case,
    mode: Mode,
    exemplars: Sequence[Case] = (),
    *,
    given: str = "",
    exemplar_parts: Sequence[tuple[str, str]] = (),
    prompts_dir: Path | None = None,
) -> Prompt:
    """Render the prompt for one case in one mode (few-shot needs ``exemplars``; a
    setting needs ``given``, the part of the reference program it shows, and its
    exemplars with ``exemplar_parts``: each one's given part and written part)."""
    if mode not in ALL_MODES:
        raise ValueError(f"unknown mode {mode!r}; choose from {', '.join(ALL_MODES)}")
    if (mode in SETTINGS) != bool(given.strip()):
        raise ValueError(f"a given program part goes with {' and '.join(SETTINGS)} only")
    domain = get_domain(case.domain)
    root = prompts_root(prompts_dir)
    files = template_files(domain, mode)
    values = _case_values(case)
    body_name = files[1]
    body = read_template(root, body_name)
    uses_exemplars = "exemplars" in placeholders(body)
    if mode == "few-shot" or mode in SETTINGS:
        if not uses_exemplars:
            raise TemplateError(f"The prompt template {root / body_name} lacks {{exemplars}}.")
        if not exemplars:
            raise ValueError(f"a {mode} prompt for case {case.id} needs at least one exemplar")
        if (mode in SETTINGS) != bool(exemplar_parts):
            raise ValueError(f"exemplar parts go with {' and '.join(SETTINGS)} only")
        values["exemplars"] = _render_exemplars(
            domain, case, exemplars, root, files[2], exemplar_parts
        )
    elif exemplars:
        raise ValueError(f"exemplars are only used in few-shot mode, not {mode}")
    elif uses_exemplars:
        raise TemplateError(f"The prompt template {root / body_name} uses {{exemplars}}.")
    if given:
        values["given"] = given.strip("\n")
    messages = (
        Message(role="system", content=read_template(root, SYSTEM_FILE)),
        Message(role="user", content=fill(body, values, name=str(root / body_name))),
    )
    return Prompt(
        messages=messages,
        template=f"{domain.name}/{mode}",
        template_hash=hash_template_files(root, files),
        prompt_hash=prompt_hash(messages),
        shared_prefix=_statutes_first(body, values, name=str(root / body_name)),
    )


def _statutes_first(body: str, values: dict[str, str], *, name: str) -> int:
    """How many characters of the filled ``body`` come before anything case-specific:
    the text through ``{statutes}`` when that is the template's first placeholder, else 0.
    ``fill`` substitutes in one pass, so filling the template's head gives the filled
    text's head."""
    first = first_placeholder(body)
    if first is None or first[0] != "statutes":
        return 0
    return len(fill(body[: first[1]], values, name=name))


def _render_exemplars(
    domain: Domain,
    case: Case,
    exemplars: Sequence[Case],
    root: Path,
    name: str,
    parts: Sequence[tuple[str, str]] = (),
) -> str:
    """The solved examples: each exemplar's whole reference program (few-shot, ``name``
    is ``exemplar.txt``), or its given part and written part (a setting's
    ``exemplar-<setting>.txt``; ``parts`` line up with ``exemplars``)."""
    block = read_template(root, name)
    needed = {"program", "given"} if parts else {"program"}
    for missing in sorted(needed - placeholders(block)):
        raise TemplateError(f"The prompt template {root / name} lacks {{{missing}}}.")
    if parts and len(parts) != len(exemplars):
        raise ValueError(f"case {case.id}: {len(exemplars)} exemplars but {len(parts)} parts")
    shown: list[str] = []
    for number, exemplar in enumerate(exemplars, start=1):
        if exemplar.domain != domain.name:
            raise ValueError(f"exemplar {exemplar.id} is from {exemplar.domain}, not {domain.name}")
        if exemplar.id == case.id or problem_key(exemplar) == problem_key(case):
            raise ValueError(f"case {case.id} cannot be its own exemplar")
        values = _case_values(exemplar)
        values["number"] = str(number)
        if parts:
            values["given"], values["program"] = (p.strip("\n") for p in parts[number - 1])
        else:
            values["program"] = demonstration(domain, exemplar)
        shown.append(fill(block, values, name=str(root / name)))
    return "\n\n".join(shown)


def prompt_hash(messages: Sequence[Message]) -> str:
    """sha256 over the messages' roles and contents, in a canonical JSON form."""
    canonical = json.dumps(
        [[m.role, m.content] for m in messages], ensure_ascii=False, separators=(",", ":")
    )
    # surrogatepass: a response with a lone surrogate (valid JSON) reaches a feedback
    # prompt; it hashes like any text, and every other text hashes as plain UTF-8.
    return hashlib.sha256(canonical.encode("utf-8", errors="surrogatepass")).hexdigest()


def render_feedback(
    prompt: Prompt,
    response: str,
    program: str | None,
    feedback: str,
    *,
    prompts_dir: Path | None = None,
) -> Prompt:
    """The retry prompt: the previous conversation, the model's response, then a user
    message quoting the program that ran and what SWI-Prolog said (paper B.1).

    ``feedback`` is the solver's report (status, stderr, stdout); nothing here knows the
    gold label, so the retry cannot leak it.
    """
    root = prompts_root(prompts_dir)
    name = FEEDBACK_FILE if program is not None else FEEDBACK_NO_PROGRAM_FILE
    values = {"output": _clip(feedback.strip()) or "(no output)"}
    if program is not None:
        values["program"] = utf8_encodable(program.strip("\n"))[0]
    message = Message(
        role="user", content=fill(read_template(root, name), values, name=str(root / name))
    )
    # What the model said goes back to a provider as UTF-8: a lone surrogate in it cannot.
    sent, _ = utf8_encodable(response)
    messages = (*prompt.messages, Message(role="assistant", content=sent), message)
    combined = hashlib.sha256(
        (prompt.template_hash + hash_template_files(root, FEEDBACK_FILES)).encode()
    ).hexdigest()
    return Prompt(
        messages=messages,
        template=f"{prompt.template}+feedback",
        template_hash=combined,
        prompt_hash=prompt_hash(messages),
        shared_prefix=prompt.shared_prefix,
    )


def solver_report(
    domain: Domain,
    *,
    status: str,
    limit: str | None,
    stdout: str,
    stderr: str,
    no_answer: str | None,
    prompts_dir: Path | None = None,
) -> str:
    """What the model is told after a failed program: SWI-Prolog's own output, in the
    words of ``feedback-report.txt`` (and ``feedback-no-answer.txt`` when the program
    ended ``ok`` but printed no readable answer: ``no_answer`` is why).

    Built only from the execution's plain facts and the domain's required answer line,
    so the gold label cannot reach it.  stderr is cut at its end (the first errors
    matter most), stdout at its start (the last lines show how far the program got).
    """
    root = prompts_root(prompts_dir)
    values = {
        "status": status,
        "limit": f" (limit hit: {limit})" if limit else "",
        "no_answer": "",
        "stderr": "",
        "stdout": _tail(stable_paths(stdout.strip()), FEEDBACK_STDOUT_CHARS) or "(empty)",
    }
    if no_answer is not None:
        sentence = read_template(root, FEEDBACK_NO_ANSWER_FILE)
        filled = fill(
            sentence,
            {"reason": no_answer, "answer_line": domain.answer_line},
            name=str(root / FEEDBACK_NO_ANSWER_FILE),
        )
        values["no_answer"] = "\n\n" + filled
    stderr_text = stable_paths(stderr.strip())
    if stderr_text:
        values["stderr"] = "\n\nstderr:\n" + _head(stderr_text, FEEDBACK_STDERR_CHARS)
    template = read_template(root, FEEDBACK_REPORT_FILE)
    return fill(template, values, name=str(root / FEEDBACK_REPORT_FILE))


NO_PROGRAM_REPORT = "No Prolog program (a ```prolog code block) was found in the response."
"""The harness's report when a reply held no program (``feedback-no-program.txt``)."""
FEEDBACK_STDERR_CHARS = 3000
FEEDBACK_STDOUT_CHARS = 1500

# The sandbox runs each program in a fresh job folder, whose name SWI-Prolog puts in
# every message.  It means nothing to the model, and it would make the retry prompt (so
# its cache key) differ on every run: keep the file name only.
_JOB_PATH = re.compile(r"(?:/[^\s/:'\"()]+)+/(program\.pl)")


def stable_paths(text: str) -> str:
    """SWI-Prolog's messages with the sandbox's job folder taken out of file names."""
    return _JOB_PATH.sub(r"\1", text)


def _head(text: str, limit: int) -> str:
    return text if len(text) <= limit else text[:limit] + "\n... (cut)"


def _tail(text: str, limit: int) -> str:
    return text if len(text) <= limit else "(cut) ...\n" + text[-limit:]


def _clip(text: str, limit: int = FEEDBACK_OUTPUT_LIMIT) -> str:
    if len(text) <= limit:
        return text
    half = limit // 2
    dropped = len(text) - 2 * half
    return f"{text[:half]}\n... [{dropped} characters omitted] ...\n{text[-half:]}"
