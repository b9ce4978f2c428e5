"""How long the exported completions are in a trainer's tokens, and which a length cap
would cut (``export --tokenizer --max-completion-tokens [--drop-over-length]``).

The paper's GRPO capped responses at 1,024 tokens while reference programs are often
longer, so a trainer with that cap trains on truncated programs without saying so.  The
tokenizer is the user's: a local ``tokenizer.json`` (or a folder holding one), or the
name of a model already in the local Hugging Face cache, read with the ``tokenizers``
package.  Nothing is ever downloaded: a name that is not in the cache is refused.
"""

from __future__ import annotations

import math
import os
from collections.abc import Iterable, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from ..errors import ConfigError, missing_extra

TOKENIZER_FILE = "tokenizer.json"


class TokenizerError(ConfigError):
    """The named tokenizer cannot be read here (never downloaded)."""


def _hub_cache() -> Path:
    """The local Hugging Face hub cache, as huggingface_hub finds it."""
    if os.environ.get("HF_HUB_CACHE"):
        return Path(os.environ["HF_HUB_CACHE"])
    home = os.environ.get("HF_HOME") or os.path.join(
        os.environ.get("XDG_CACHE_HOME") or os.path.expanduser("~/.cache"), "huggingface"
    )
    return Path(home) / "hub"


def _cached_file(name: str) -> Path | None:
    """``tokenizer.json`` of the newest cached snapshot of the model ``name``."""
    folder = _hub_cache() / f"models--{name.replace('/', '--')}" / "snapshots"
    if not folder.is_dir():
        return None
    found = sorted(folder.glob(f"*/{TOKENIZER_FILE}"), key=lambda p: p.stat().st_mtime)
    return found[-1] if found else None


def tokenizer_file(spec: str) -> Path:
    """The tokenizer.json that ``spec`` names: a file, a folder holding one, or a model
    name in the local Hugging Face cache."""
    path = Path(spec).expanduser()
    if path.is_file():
        return path
    if path.is_dir() and (path / TOKENIZER_FILE).is_file():
        return path / TOKENIZER_FILE
    cached = _cached_file(spec) if not path.exists() else None
    if cached is not None:
        return cached
    raise TokenizerError(
        f"--tokenizer {spec!r} is neither a tokenizer.json file, a folder holding one, nor "
        f"a model in the local Hugging Face cache ({_hub_cache()}); nothing is downloaded."
    )


class Counter:
    """Counts tokens with a ``tokenizers.Tokenizer`` (no special tokens added: the
    completion is what the trainer's length cap applies to)."""

    def __init__(self, spec: str) -> None:
        try:
            # optional: tokenizers, only with --tokenizer
            from tokenizers import Tokenizer
        except ImportError:
            raise missing_extra("--tokenizer", "train", package="tokenizers") from None
        self.spec = spec
        self.path = tokenizer_file(spec)
        try:
            self._tokenizer = Tokenizer.from_file(str(self.path))
        except Exception as exc:  # the Rust side raises plain Exception
            raise TokenizerError(
                f"{self.path} is not a tokenizer file tokenizers can read: {exc}"
            ) from None

    def count(self, texts: Sequence[str]) -> list[int]:
        encoded = self._tokenizer.encode_batch(list(texts), add_special_tokens=False)
        return [len(e.ids) for e in encoded]


def _rank(sorted_values: Sequence[int], share: float) -> int:
    """The nearest-rank percentile."""
    index = max(0, math.ceil(share * len(sorted_values)) - 1)
    return sorted_values[index]


@dataclass
class DomainLengths:
    n: int
    p50: int
    p90: int
    max: int
    over: int | None
    """Completions longer than the cap (None without a cap)."""

    def to_json(self) -> dict[str, Any]:
        return {"n": self.n, "p50": self.p50, "p90": self.p90, "max": self.max, "over": self.over}


@dataclass
class LengthReport:
    tokenizer: str
    max_completion_tokens: int | None
    dropped: bool
    domains: dict[str, DomainLengths] = field(default_factory=dict)

    def to_json(self) -> dict[str, Any]:
        return {
            "tokenizer": self.tokenizer,
            "max_completion_tokens": self.max_completion_tokens,
            "dropped_over_length": self.dropped,
            "domains": {name: d.to_json() for name, d in self.domains.items()},
        }

    def lines(self) -> list[str]:
        out = []
        for name, d in self.domains.items():
            line = f"{name}: completion tokens p50 {d.p50}, p90 {d.p90}, max {d.max} (n={d.n})"
            if d.over is not None:
                verb = "dropped" if self.dropped else "would be cut"
                line += f"; {d.over} over {self.max_completion_tokens} tokens {verb}"
            out.append(line)
        return out


def measure(
    domains_and_texts: Iterable[tuple[str, str]],
    counter: Counter,
    max_tokens: int | None,
    drop: bool,
) -> tuple[LengthReport, list[int]]:
    """Per-domain length distribution of the texts; and every text's token count."""
    pairs = list(domains_and_texts)
    counts = counter.count([text for _, text in pairs])
    by_domain: dict[str, list[int]] = {}
    for (domain, _), n in zip(pairs, counts, strict=True):
        by_domain.setdefault(domain, []).append(n)
    report = LengthReport(counter.spec, max_tokens, drop)
    for domain, values in by_domain.items():
        ordered = sorted(values)
        report.domains[domain] = DomainLengths(
            n=len(ordered),
            p50=_rank(ordered, 0.5),
            p90=_rank(ordered, 0.9),
            max=ordered[-1],
            over=None if max_tokens is None else sum(1 for v in ordered if v > max_tokens),
        )
    return report, counts
