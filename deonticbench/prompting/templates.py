"""Prompt templates: the files under ``prompts/``, filling them, and their hashes.

Layout of ``prompts/`` (paper 3.1 and B.4; see docs/prompts.md)::

    system.txt                      the system message of every prompt
    feedback.txt                    retry message after a program failed
    feedback-no-program.txt         retry message when no program was found
    feedback-report.txt             what SWI-Prolog did, quoted in feedback.txt's {output}
    feedback-no-answer.txt          the sentence added when it ran but printed no answer
    <domain>/direct.txt             answer in prose, last line "Answer: <value>"
    <domain>/direct-verbal.txt      the same, then "Confidence: NN%" (opt-in mode variant)
    <domain>/zero-shot.txt          write rules, facts and query as one Prolog program
    <domain>/few-shot.txt           the same, after solved examples ({exemplars})
    <domain>/exemplar.txt           how one solved example is shown
    <domain>/rules-given.txt        the setting that shows the reference's rules ({given})
    <domain>/facts-given.txt        the setting that shows the reference's case facts
    <domain>/exemplar-<setting>.txt how a setting's solved example is shown: its given
                                    part ({given}) and the part written ({program})
    <domain>/exemplars.json         optional synthetic pool (housing: no offline whole split)

Placeholders are ``{name}`` with a lower-case name.  Filling is a single pass over the
*template*, so braces inside the inserted statutes, case text or programs (Prolog has
``{}/1``) are never read as placeholders; an unknown name in a template is an error.
"""

from __future__ import annotations

import hashlib
import re
from collections.abc import Iterable, Mapping
from pathlib import Path

from .._paths import PROMPTS
from ..data.domains import DOMAINS, Domain, get_domain
from ..errors import ConfigError
from ..vocabulary.modes import MODES, SETTINGS, Mode

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

_PLACEHOLDER = re.compile(r"\{([a-z_]+)\}")


class TemplateError(ConfigError):
    """A prompt template is missing or uses a placeholder the harness does not fill."""


# --- templates -------------------------------------------------------------------------


def prompts_root(prompts_dir: Path | None) -> Path:
    return Path(prompts_dir) if prompts_dir is not None else PROMPTS


def read_template(root: Path, relative: str) -> str:
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


def hash_template_files(root: Path, relatives: Iterable[str]) -> str:
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


def first_placeholder(template: str) -> tuple[str, int] | None:
    """The template's first placeholder: its name and where it ends; None without one."""
    match = _PLACEHOLDER.search(template)
    return None if match is None else (match.group(1), match.end())


def template_files(domain: Domain, mode: Mode) -> tuple[str, ...]:
    """The files, relative to ``prompts/``, that a domain's prompt in ``mode`` is made of."""
    files: tuple[str, ...] = (SYSTEM_FILE, f"{domain.name}/{mode}.txt")
    if mode == "few-shot":
        files += (f"{domain.name}/{EXEMPLAR_FILE}",)
    elif mode in SETTINGS:
        files += (setting_exemplar_file(domain, mode),)
    return files


def setting_exemplar_file(domain: Domain, mode: Mode) -> str:
    """How a setting's solved example is shown (its given part, then its written part)."""
    return f"{domain.name}/exemplar-{mode}.txt"


def template_hashes(
    domains: Iterable[Domain | str] | None = None,
    *,
    prompts_dir: Path | None = None,
    modes: Iterable[Mode] = MODES,
) -> dict[str, str]:
    """Hash of every template a run may use, keyed ``<domain>/<mode>``, plus ``feedback``.

    ``modes`` defaults to the paper's: a run adds the settings it uses, so that adding
    the settings' templates changed no earlier run's fingerprint."""
    root = prompts_root(prompts_dir)
    chosen = [d if isinstance(d, Domain) else get_domain(d) for d in (domains or DOMAINS.values())]
    hashes = {
        f"{d.name}/{mode}": hash_template_files(root, template_files(d, mode))
        for d in chosen
        for mode in modes
    }
    hashes["feedback"] = hash_template_files(root, FEEDBACK_FILES)
    return hashes


AGENT_DIR = "agent"
"""``prompts/agent/``: the agentic modes' instruction templates (docs/agents.md)."""


def agent_template_hash(*, prompts_dir: Path | None = None) -> str:
    """One hash over every agentic template (kept apart from ``template_hashes``, so a
    prompted run's fingerprint does not change when they do)."""
    root = prompts_root(prompts_dir)
    files = sorted(p.relative_to(root).as_posix() for p in (root / AGENT_DIR).glob("*.txt"))
    return hash_template_files(root, files)
