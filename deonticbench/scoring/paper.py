"""The paper's published scores (Tables 2, 3 and 7), shipped as package data.

The numbers were transcribed from an OCR of the paper whose superscripts are garbled;
``resources/paper_results.json`` says which values are uncertain and keeps the OCR text
of every cell, so a reader can judge a transcription for themselves.
"""

from __future__ import annotations

import json
import re
from dataclasses import dataclass
from functools import lru_cache
from typing import Any

from .._paths import RESOURCES

# Beside the module rather than through importlib.resources: the editable install's
# import hooks make ``resources.files`` fail for this package, a plain path never does.
PAPER_RESULTS = RESOURCES / "paper_results.json"


@dataclass(frozen=True)
class PaperCell:
    table: str
    model: str
    setting: str
    """A mode name: direct, zero-shot or few-shot."""
    domain: str
    mean: float
    """Percent."""
    upper: float | None
    lower: float | None
    ocr: str
    uncertain: tuple[str, ...] = ()


@lru_cache(maxsize=1)
def load_paper_results() -> tuple[PaperCell, ...]:
    """Every published cell, in the paper's order."""
    text = PAPER_RESULTS.read_text(encoding="utf-8")
    doc: dict[str, Any] = json.loads(text)
    return tuple(
        PaperCell(
            table=str(c["table"]),
            model=str(c["model"]),
            setting=str(c["setting"]),
            domain=str(c["domain"]),
            mean=float(c["mean"]),
            upper=None if c.get("upper") is None else float(c["upper"]),
            lower=None if c.get("lower") is None else float(c["lower"]),
            ocr=str(c.get("ocr", "")),
            uncertain=tuple(c.get("uncertain", ())),
        )
        for c in doc["results"]
    )


def paper_models() -> list[str]:
    return list(dict.fromkeys(c.model for c in load_paper_results()))


def normalise_model(name: str) -> str:
    """A model name reduced for matching: ``openai:gpt-4.1``, ``GPT-4.1`` and a dated pin
    such as ``openai/gpt-4.1-2025-04-14`` (the folder upstream's scripts write, which
    ``import-upstream`` takes as the model) agree."""
    # A spec's server (``openai-compatible:<model>@<url>``) is no part of the model's name.
    base = name.split("@", 1)[0].rsplit(":", 1)[-1].rsplit("/", 1)[-1]
    base = re.sub(r"-(\d{4}-\d{2}-\d{2}|\d{8})$", "", base)
    return re.sub(r"[^a-z0-9]", "", base.lower())


SERVED_NAMES = {
    "moonshotai/Kimi-K2-Instruct-0905": "Kimi K2 Instruct",
    "Qwen/Qwen3-235B-A22B-Instruct-2507-tput": "Qwen3-235B",
    "Qwen/Qwen3-235B-A22B-Instruct-2507": "Qwen3-235B",
}
"""The names the open models of Table 2 are served under (the paper's section 4 names
"Kimi K2 Instruct 0905"; upstream's model_config.yaml names Qwen3-235B's Together id) and
the row each is published as: no normalising reduces the one to the other."""


def match_model(spec: str) -> str | None:
    """The paper's model a run's model spec names, if any (exact after normalising, or
    a served name of ``SERVED_NAMES``)."""
    wanted = normalise_model(spec)
    served = {normalise_model(name): row for name, row in SERVED_NAMES.items()}
    if wanted in served:
        return served[wanted]
    for model in paper_models():
        if normalise_model(model) == wanted:
            return model
    return None


def paper_cells(model: str | None = None, setting: str | None = None) -> list[PaperCell]:
    return [
        c
        for c in load_paper_results()
        if (model is None or c.model == model) and (setting is None or c.setting == setting)
    ]
