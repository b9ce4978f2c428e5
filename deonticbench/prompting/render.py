"""Prompts: render a case into chat messages from the templates in ``prompts/``.

Layout of ``prompts/`` (paper 3.1 and B.4; see docs/prompts.md)::

    system.txt                      the system message of every prompt
    feedback.txt                    retry message after a program failed
    feedback-no-program.txt         retry message when no program was found
    feedback-report.txt             what SWI-Prolog did, quoted in feedback.txt's {output}
    feedback-no-answer.txt          the sentence added when it ran but printed no answer
    <domain>/direct.txt             answer in prose, last line "Answer: <value>"
    <domain>/zero-shot.txt          write rules, facts and query as one Prolog program
    <domain>/few-shot.txt           the same, after solved examples ({exemplars})
    <domain>/exemplar.txt           how one solved example is shown
    <domain>/exemplars.json         optional synthetic pool (housing: no offline whole split)

Placeholders are ``{name}`` with a lower-case name.  Filling is a single pass over the
*template*, so braces inside the inserted statutes, case text or programs (Prolog has
``{}/1``) are never read as placeholders; an unknown name in a template is an error.

The case's gold label and its own reference program never enter its prompt: ``render``
reads only the statutes, the case text, the question and the state.  Exemplars show their
reference program with upstream's injected ``Label:`` directives removed.
"""

from __future__ import annotations

import hashlib
import json
import re
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path

from .._paths import PROMPTS
from .chat import Message
from ..data.cases import Case, cases_from_rows, load_cases
from ..data.domains import DOMAINS, Domain, get_domain
from ..errors import ConfigError, DataError
from .modes import MODES, Mode
from ..reading.programs import defines_main, ensure_entrypoint, strip_label_directives, unwrap_fenced
from ..data.sources import DataSource
from ..reading.encoding import utf8_encodable

SYSTEM_FILE = "system.txt"
FEEDBACK_FILE = "feedback.txt"
FEEDBACK_NO_PROGRAM_FILE = "feedback-no-program.txt"
FEEDBACK_REPORT_FILE = "feedback-report.txt"
FEEDBACK_NO_ANSWER_FILE = "feedback-no-answer.txt"
FEEDBACK_FILES = (
    FEEDBACK_FILE,
    FEEDBACK_NO_PROGRAM_FILE,
    FEEDBACK_REPORT_FILE,
    FEEDBACK_NO_ANSWER_FILE,
)
"""Every template a retry prompt is made of: hashed together as ``feedback``."""
EXEMPLAR_FILE = "exemplar.txt"
SYNTHETIC_POOL_FILE = "exemplars.json"
EXCLUDE_FILE = "exclude.txt"

FEEDBACK_OUTPUT_LIMIT = 6000
"""Characters of solver output quoted in a feedback message; a program that prints in a
loop would otherwise blow up the retry prompt.  Head and tail are kept."""

_PLACEHOLDER = re.compile(r"\{([a-z_]+)\}")
_RUN_DEFINED = re.compile(r"^run\s*:-", re.MULTILINE)


class TemplateError(ConfigError):
    """A prompt template is missing or uses a placeholder the harness does not fill."""


@dataclass(frozen=True)
class Prompt:
    messages: tuple[Message, ...]
    template: str
    """Which template produced it, e.g. ``airline/few-shot``."""
    template_hash: str
    """sha256 over the template files used (system, mode template, exemplar format)."""
    prompt_hash: str
    """sha256 over the rendered messages (role and content): the response-cache key."""


# --- templates -------------------------------------------------------------------------


def _root(prompts_dir: Path | None) -> Path:
    return Path(prompts_dir) if prompts_dir is not None else PROMPTS


def _read(root: Path, relative: str) -> str:
    path = root / relative
    try:
        text = path.read_text(encoding="utf-8")
    except FileNotFoundError:
        raise TemplateError(f"The prompt template {path} does not exist.") from None
    except OSError as exc:
        raise TemplateError(
            f"The prompt template {path} cannot be read ({exc.strerror})."
        ) from None
    # Editors end files with a newline; the message should not.
    return text[:-1] if text.endswith("\n") else text


def _hash_files(root: Path, relatives: Iterable[str]) -> str:
    digest = hashlib.sha256()
    for relative in relatives:
        path = root / relative
        try:
            data = path.read_bytes()
        except OSError:
            raise TemplateError(f"The prompt template {path} does not exist.") from None
        # The name is hashed too, so moving a file between roles changes the hash.
        digest.update(relative.encode() + b"\0" + data + b"\0")
    return digest.hexdigest()


def fill(template: str, values: Mapping[str, str], *, name: str = "template") -> str:
    """Replace each ``{key}`` in ``template`` with ``values[key]`` in one pass.

    Inserted text is never scanned again, so braces in it survive as they are.  A
    placeholder without a value raises TemplateError naming the template.
    """

    def substitute(match: re.Match[str]) -> str:
        key = match.group(1)
        if key not in values:
            known = ", ".join("{" + k + "}" for k in sorted(values))
            raise TemplateError(
                f"The prompt template {name} uses the unknown placeholder {{{key}}} "
                f"(known here: {known})."
            )
        return values[key]

    return _PLACEHOLDER.sub(substitute, template)


def placeholders(template: str) -> set[str]:
    """The placeholder names a template uses."""
    return set(_PLACEHOLDER.findall(template))


def template_files(domain: Domain, mode: Mode) -> tuple[str, ...]:
    """The files, relative to ``prompts/``, that a domain's prompt in ``mode`` is made of."""
    files: tuple[str, ...] = (SYSTEM_FILE, f"{domain.name}/{mode}.txt")
    if mode == "few-shot":
        files += (f"{domain.name}/{EXEMPLAR_FILE}",)
    return files


def template_hashes(
    domains: Iterable[Domain | str] | None = None, *, prompts_dir: Path | None = None
) -> dict[str, str]:
    """Hash of every template a run may use, keyed ``<domain>/<mode>``, plus ``feedback``."""
    root = _root(prompts_dir)
    chosen = [d if isinstance(d, Domain) else get_domain(d) for d in (domains or DOMAINS.values())]
    hashes = {
        f"{d.name}/{mode}": _hash_files(root, template_files(d, mode))
        for d in chosen
        for mode in MODES
    }
    hashes["feedback"] = _hash_files(root, FEEDBACK_FILES)
    return hashes


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
    case: Case, mode: Mode, exemplars: Sequence[Case] = (), *, prompts_dir: Path | None = None
) -> Prompt:
    """Render the prompt for one case in one mode (few-shot needs ``exemplars``)."""
    if mode not in MODES:
        raise ValueError(f"unknown mode {mode!r}; choose from {', '.join(MODES)}")
    domain = get_domain(case.domain)
    root = _root(prompts_dir)
    files = template_files(domain, mode)
    values = _case_values(case)
    body_name = files[1]
    body = _read(root, body_name)
    uses_exemplars = "exemplars" in placeholders(body)
    if mode == "few-shot":
        if not uses_exemplars:
            raise TemplateError(f"The prompt template {root / body_name} lacks {{exemplars}}.")
        if not exemplars:
            raise ValueError(f"a few-shot prompt for case {case.id} needs at least one exemplar")
        values["exemplars"] = _render_exemplars(domain, case, exemplars, root)
    elif exemplars:
        raise ValueError(f"exemplars are only used in few-shot mode, not {mode}")
    elif uses_exemplars:
        raise TemplateError(f"The prompt template {root / body_name} uses {{exemplars}}.")
    messages = (
        Message(role="system", content=_read(root, SYSTEM_FILE)),
        Message(role="user", content=fill(body, values, name=str(root / body_name))),
    )
    return Prompt(
        messages=messages,
        template=f"{domain.name}/{mode}",
        template_hash=_hash_files(root, files),
        prompt_hash=prompt_hash(messages),
    )


def _render_exemplars(domain: Domain, case: Case, exemplars: Sequence[Case], root: Path) -> str:
    name = f"{domain.name}/{EXEMPLAR_FILE}"
    block = _read(root, name)
    if "program" not in placeholders(block):
        raise TemplateError(f"The prompt template {root / name} lacks {{program}}.")
    shown: list[str] = []
    for number, exemplar in enumerate(exemplars, start=1):
        if exemplar.domain != domain.name:
            raise ValueError(f"exemplar {exemplar.id} is from {exemplar.domain}, not {domain.name}")
        if exemplar.id == case.id or _content_key(exemplar) == _content_key(case):
            raise ValueError(f"case {case.id} cannot be its own exemplar")
        values = _case_values(exemplar)
        values["number"] = str(number)
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
    root = _root(prompts_dir)
    name = FEEDBACK_FILE if program is not None else FEEDBACK_NO_PROGRAM_FILE
    values = {"output": _clip(feedback.strip()) or "(no output)"}
    if program is not None:
        values["program"] = utf8_encodable(program.strip("\n"))[0]
    message = Message(role="user", content=fill(_read(root, name), values, name=str(root / name)))
    # What the model said goes back to a provider as UTF-8: a lone surrogate in it cannot.
    sent, _ = utf8_encodable(response)
    messages = (*prompt.messages, Message(role="assistant", content=sent), message)
    combined = hashlib.sha256(
        (prompt.template_hash + _hash_files(root, FEEDBACK_FILES)).encode()
    ).hexdigest()
    return Prompt(
        messages=messages,
        template=f"{prompt.template}+feedback",
        template_hash=combined,
        prompt_hash=prompt_hash(messages),
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
    root = _root(prompts_dir)
    values = {
        "status": status,
        "limit": f" (limit hit: {limit})" if limit else "",
        "no_answer": "",
        "stderr": "",
        "stdout": _tail(_stable_paths(stdout.strip()), FEEDBACK_STDOUT_CHARS) or "(empty)",
    }
    if no_answer is not None:
        sentence = _read(root, FEEDBACK_NO_ANSWER_FILE)
        filled = fill(
            sentence,
            {"reason": no_answer, "answer_line": domain.answer_line},
            name=str(root / FEEDBACK_NO_ANSWER_FILE),
        )
        values["no_answer"] = "\n\n" + filled
    stderr_text = _stable_paths(stderr.strip())
    if stderr_text:
        values["stderr"] = "\n\nstderr:\n" + _head(stderr_text, FEEDBACK_STDERR_CHARS)
    template = _read(root, FEEDBACK_REPORT_FILE)
    return fill(template, values, name=str(root / FEEDBACK_REPORT_FILE))


NO_PROGRAM_REPORT = "No Prolog program (a ```prolog code block) was found in the response."
"""The harness's report when a reply held no program (``feedback-no-program.txt``)."""
FEEDBACK_STDERR_CHARS = 3000
FEEDBACK_STDOUT_CHARS = 1500

# The sandbox runs each program in a fresh job folder, whose name SWI-Prolog puts in
# every message.  It means nothing to the model, and it would make the retry prompt (so
# its cache key) differ on every run: keep the file name only.
_JOB_PATH = re.compile(r"(?:/[^\s/:'\"()]+)+/(program\.pl)")


def _stable_paths(text: str) -> str:
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


# --- exemplars -------------------------------------------------------------------------


def _content_key(case: Case) -> tuple[str, ...]:
    """What makes two cases the same problem whatever their ids: upstream's whole split
    repeats some hard uscis cases under new ids (same case number, same text)."""
    number = str(case.extra.get("case_number", "")).strip()
    if number:
        return ("case_number", number)
    return ("content", case.text.strip(), case.question.strip(), str(case.extra.get("state", "")))


def problem_key(case: Case) -> tuple[str, ...]:
    """What makes two cases the same problem whatever their ids (see ``_content_key``):
    the training exports hold out the hard split by this key as well as by id."""
    return _content_key(case)


def exemplar_pool(
    domain: Domain, source: DataSource, *, prompts_dir: Path | None = None
) -> tuple[list[Case], str]:
    """The domain's few-shot pool and a note for the run's config.json.

    The pool is the whole split minus the hard split, matched by case id and by content
    (see ``_content_key``).  When the whole split is not available offline (housing: the
    mirror has no housing/whole.json), the pool is the synthetic cases in
    ``prompts/<domain>/exemplars.json``, written for this harness and drawn from no split.
    """
    root = _root(prompts_dir)
    if _whole_available(domain, source):
        whole = load_cases(domain, "whole", source)
        hard = load_cases(domain, "hard", source)
        hard_ids = {c.id for c in hard}
        hard_keys = {_content_key(c) for c in hard}
        unseen = [c for c in whole if c.id not in hard_ids]
        fresh = [c for c in unseen if _content_key(c) not in hard_keys]
        excluded = excluded_ids(domain, prompts_dir=root)
        pool = [c for c in fresh if c.id not in excluded]
        dropped = []
        if len(unseen) > len(fresh):
            dropped.append(f"{len(unseen) - len(fresh)} copies of hard cases under other ids")
        if len(fresh) > len(pool):
            dropped.append(
                f"{len(fresh) - len(pool)} whose reference program does not run cleanly, "
                f"listed in prompts/{domain.name}/{EXCLUDE_FILE}, "
                f"sha256 {_short_hash(root / domain.name / EXCLUDE_FILE)}"
            )
        note = (
            f"{domain.name}: few-shot pool is the whole split minus the hard split, "
            f"{len(pool)} cases" + (f" (dropped: {'; '.join(dropped)})" if dropped else "") + "."
        )
        return pool, note
    path = root / domain.name / SYNTHETIC_POOL_FILE
    if not path.exists():
        raise DataError(
            f"The {domain.name} whole split is not available from {_describe(source)} and "
            f"{path} does not exist, so there are no few-shot exemplars: use --hub."
        )
    try:
        rows = json.loads(path.read_text(encoding="utf-8"))
    except json.JSONDecodeError as exc:
        raise DataError(f"{path} is not valid JSON (line {exc.lineno}: {exc.msg}).") from None
    if not isinstance(rows, list):
        raise DataError(f"{path} should hold a JSON list of cases.")
    pool = cases_from_rows(domain, rows, str(path), None)
    note = (
        f"{domain.name}: the whole split is not available from {_describe(source)}, so the "
        f"few-shot pool is the {len(pool)} synthetic exemplars in "
        f"prompts/{domain.name}/{SYNTHETIC_POOL_FILE} (sha256 {_short_hash(path)}), written "
        "for this harness and taken from no split; use --hub for upstream's pool."
    )
    return pool, note


def _short_hash(path: Path) -> str:
    return hashlib.sha256(path.read_bytes()).hexdigest()[:12]


def excluded_ids(domain: Domain, *, prompts_dir: Path | None = None) -> frozenset[str]:
    """Case ids listed in ``prompts/<domain>/exclude.txt`` (first word of each line that
    is not blank or a ``#`` comment): pool cases never shown as exemplars."""
    path = _root(prompts_dir) / domain.name / EXCLUDE_FILE
    if not path.exists():
        return frozenset()
    lines = path.read_text(encoding="utf-8").splitlines()
    return frozenset(
        line.split()[0] for line in lines if line.strip() and not line.lstrip().startswith("#")
    )


def _whole_available(domain: Domain, source: DataSource) -> bool:
    # Only a missing local file means "not available"; an unreadable one, or a hub
    # failure, is an error the user must see rather than a silent fallback.  The path
    # follows the upstream layout that data.load_cases reads.
    if source.kind == "local" and source.path is not None:
        return (source.path / "data" / domain.mirror_dir / "whole.json").exists()
    return True


def _describe(source: DataSource) -> str:
    return str(source.path) if source.kind == "local" else f"the hub ({source.repo})"


def choose_exemplars(
    domain: Domain, pool: Sequence[Case], case: Case, count: int | None = None, seed: int = 0
) -> list[Case]:
    """Pick ``count`` exemplars (default ``domain.few_shot_count``) for ``case``.

    Deterministic for a (seed, case id): candidates are ranked by sha256 of the seed, the
    case id and the candidate id.  The case itself (by id or content) is never chosen.
    For binary domains with two or more shots, classes alternate down the ranking so the
    demonstrations mix outcomes, as the paper's curated few-shot sets do (B.1).
    """
    wanted = domain.few_shot_count if count is None else count
    if wanted < 0:
        raise ValueError("the number of exemplars cannot be negative")
    if wanted == 0:
        return []
    own = _content_key(case)
    candidates = [c for c in pool if c.id != case.id and _content_key(c) != own]
    if not candidates:
        raise DataError(f"The {domain.name} few-shot pool has no exemplar for case {case.id}.")
    ranked = _distinct(sorted(candidates, key=lambda c: _rank(seed, case.id, c.id)))
    if domain.label_kind != "binary" or wanted < 2:
        return ranked[:wanted]
    return _alternate_classes(ranked, wanted)


def _rank(seed: int, case_id: str, candidate_id: str) -> str:
    return hashlib.sha256(f"{seed}\0{case_id}\0{candidate_id}".encode()).hexdigest()


def _distinct(ranked: list[Case]) -> list[Case]:
    # The whole splits hold some cases twice under different ids: show each problem once.
    seen: set[tuple[str, ...]] = set()
    distinct: list[Case] = []
    for c in ranked:
        key = _content_key(c)
        if key not in seen:
            seen.add(key)
            distinct.append(c)
    return distinct


def _alternate_classes(ranked: list[Case], wanted: int) -> list[Case]:
    by_class: dict[str, list[Case]] = {}
    for c in ranked:
        by_class.setdefault(str(c.gold), []).append(c)
    # Class order follows the ranking too, so which class comes first varies by seed.
    queues = list(by_class.values())
    chosen: list[Case] = []
    while len(chosen) < wanted and any(queues):
        for queue in queues:
            if queue and len(chosen) < wanted:
                chosen.append(queue.pop(0))
    return chosen
