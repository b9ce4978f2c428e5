"""When a provider retires a model, and how a run says so.

A model's end of life is the day its provider's API stops serving it: from that day on a
request naming it fails.  The date comes from the harness's own registry
(``eval/models.yaml``, ``retirements``, each date beside the provider page it was read
from), so what a run says does not change with the release of an SDK that happens to be
installed.  A backend may fall back on what its SDK knows of a model the registry does
not list (Anthropic's SDK keeps a table of deprecated models).

The note is in the tense of the day it is said: "retires on" before the date, "was
retired on" from the date on.  A retired model is said so, not refused: the endpoint may
be a proxy or a partner platform that serves it on its own schedule (or a date may have
been moved since the registry was written), and where it is no longer served each request
fails at once with the provider's own message (a 404 is not retried) and is recorded.
"""

from __future__ import annotations

import datetime
import re
from dataclasses import dataclass
from typing import Any

REGISTRY_SOURCE = "eval/models.yaml"


@dataclass(frozen=True)
class Retirement:
    """A model's end of life: the first day its provider no longer serves it."""

    day: datetime.date
    source: str
    """Where the date was read, named in the note (the registry, or an SDK's table)."""


def today() -> datetime.date:
    """Today's date in UTC: the providers publish a day and no time zone, and UTC is the
    day every machine that runs the same command agrees on."""
    return datetime.datetime.now(datetime.UTC).date()


def retirement_note(
    model_name: str, retirement: Retirement, on: datetime.date | None = None
) -> str:
    """One sentence for the user before a run: the end of life of ``model_name`` as seen
    on the day ``on`` (today when None)."""
    day = retirement.day.isoformat()
    if (on or today()) >= retirement.day:
        return (
            f"{model_name} was retired on {day} ({retirement.source}): its provider no "
            "longer serves it, so its requests fail unless this endpoint still does; "
            "choose a newer model."
        )
    return (
        f"{model_name} retires on {day} ({retirement.source}): from that day its "
        "requests fail; choose a newer model."
    )


def as_day(value: Any) -> datetime.date | None:
    """A registry value as a date: a YAML date, or a string in ISO form; None otherwise."""
    if isinstance(value, datetime.datetime):
        return value.date()
    if isinstance(value, datetime.date):
        return value
    if isinstance(value, str):
        try:
            return datetime.date.fromisoformat(value.strip())
        except ValueError:
            return None
    return None


_ORDINAL = re.compile(r"(?<=\d)(st|nd|rd|th)\b")


def sdk_day(text: str) -> datetime.date | None:
    """A date as an SDK's deprecation table spells it ("November 30th, 2026"), or None
    when it is spelled some other way (then nothing is said rather than a guess)."""
    try:
        return datetime.datetime.strptime(_ORDINAL.sub("", text.strip()), "%B %d, %Y").date()
    except ValueError:
        return None
