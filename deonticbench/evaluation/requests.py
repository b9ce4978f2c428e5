"""The requests the runner sends, built by one rule that the dry run shares: which
samples go in one request (``split_requests``), the request itself with the generation
settings the run gives it (``prompt_request``), and the key of a prompt's shared prefix
(``prefix_group``), by which the runner orders its requests and the dry run counts."""

from __future__ import annotations

import hashlib
from collections.abc import Callable, Iterable, Iterator
from typing import TypeVar

from ..models.base import Request
from ..models.sampling import RunSampling
from ..prompting import Prompt
from ..prompting.plan import Unit

T = TypeVar("T")


def prompt_request(
    unit: Unit, prompt: Prompt, samples: list[int], attempt: int, sampling: RunSampling
) -> Request:
    """The request for consecutive ``samples`` of a prompt (``n`` = how many), with the
    generation settings ``sampling`` gives it, as the runner sends it and the dry run
    asks the backend about it."""
    return Request(
        messages=tuple(prompt.messages),
        n=len(samples),
        domain=unit.domain.name,
        case_id=unit.case.id,
        mode=unit.mode,
        sample_start=samples[0],
        attempt=attempt,
        shared_prefix=prompt.shared_prefix,
        cache_group=cache_group(unit, prompt),
        config=sampling.config(unit.mode, attempt),
    )


def cache_group(unit: Unit, prompt: Prompt) -> str:
    """``<domain>/<mode>/<template hash>``: OpenAI's ``prompt_cache_key``."""
    return f"{unit.domain.name}/{unit.mode}/{prompt.template_hash}"


def prefix_group(prompt: Prompt, route: str = "") -> str:
    """The key of a prompt's shared prefix (system messages and the user message's
    shared head, hashed, after ``route``): prompts with the same key share a provider
    cache entry.  The runner orders its requests by it and the dry run counts by it."""
    head = [route, *(m.content for m in prompt.messages if m.role == "system")]
    user = next((m.content for m in prompt.messages if m.role == "user"), "")
    head.append(user[: prompt.shared_prefix])
    text = "\x00".join(head).encode("utf-8", errors="surrogatepass")
    return hashlib.sha256(text).hexdigest()


def split_requests(
    samples: Iterable[int], cached: Callable[[int], T | None]
) -> tuple[dict[int, T], list[list[int]]]:
    """The one rule of requests, for the runner and the dry-run estimate alike: the samples
    the cache answers (``cached`` returns a response or None), and the requests for the
    rest, one per run of consecutive sample indices (``n`` = its length)."""
    hits: dict[int, T] = {}
    missing: list[int] = []
    for s in samples:
        hit = cached(s)
        if hit is not None:
            hits[s] = hit
        else:
            missing.append(s)
    return hits, list(_consecutive_runs(missing))


def _consecutive_runs(samples: list[int]) -> Iterator[list[int]]:
    """[0, 1, 3] -> [0, 1], [3]: a request covers consecutive sample indices only,
    because backends that look samples up by index (replay) count from sample_start."""
    run: list[int] = []
    for s in sorted(samples):
        if run and s != run[-1] + 1:
            yield run
            run = []
        run.append(s)
    if run:
        yield run


__all__ = ["cache_group", "prefix_group", "prompt_request", "split_requests"]
