"""Training files in the shapes trainers read.

====================  ==========================================================
``llamafactory-sft``  Alpaca JSON (instruction, input, output, system) and a
                      ``dataset_info.json`` entry ``deonticbench_sft``
``llamafactory-dpo``  Alpaca preference JSON (instruction, input, chosen, rejected,
                      system), ``dataset_info.json`` entry ``deonticbench_dpo``
                      with ``"ranking": true``
``trl-sft``           JSONL, conversational prompt-completion: ``prompt`` (system
                      and user messages), ``completion`` (one assistant message)
``trl-dpo``           JSONL, conversational preference: ``prompt``, ``chosen``,
                      ``rejected``
``trl-grpo``          JSONL: ``prompt`` plus the reward's columns ``domain``,
                      ``case_id``, ``gold``, ``reference_signatures``,
                      ``case_constants`` and ``label``
                      (the same as one JSON string, for OpenRLHF's ``--label_key``)
``verl``              Parquet: ``data_source``, ``prompt``, ``ability``,
                      ``reward_model`` {``style``, ``ground_truth``}, ``extra_info``
                      {``split``, ``index``, ``domain``, ``case_id``,
                      ``reference_signatures``, ``case_constants``}
====================  ==========================================================
"""

from __future__ import annotations

import json
from collections.abc import Sequence
from pathlib import Path
from typing import Any

from ..rewards.signatures import signatures_to_rows
from .examples import Example

FORMATS = ("llamafactory-sft", "llamafactory-dpo", "trl-sft", "trl-dpo", "trl-grpo", "verl")
PREFERENCE_FORMATS = frozenset({"llamafactory-dpo", "trl-dpo"})
REWARD_FORMATS = frozenset({"trl-grpo", "verl"})
"""Formats whose rows carry the reward's target (and so the reference signatures)."""
ABILITY = "deontic-reasoning"

Pair = tuple[Example, str]
"""A preference pair: the example (prompt, chosen completion) and a rejected completion."""


def file_name(fmt: str, split: str) -> str:
    stem = "train" if split == "train" else "test"
    if fmt.startswith("llamafactory"):
        return f"{stem}.json"
    if fmt == "verl":
        return f"{stem}.parquet"
    return f"{stem}.jsonl"


def _assistant(text: str) -> list[dict[str, str]]:
    return [{"role": "assistant", "content": text}]


def _target_columns(example: Example) -> dict[str, Any]:
    target = example.target
    return {
        "domain": target.domain,
        "case_id": target.case_id,
        "gold": str(target.gold),
        "reference_signatures": signatures_to_rows(target.signatures()),
        # What the case states: the grounded reward's derivation needs it (no data folder).
        "case_constants": target.case_constants.to_json() if target.case_constants else None,
    }


def rows_for(fmt: str, split: str, examples: Sequence[Example], pairs: Sequence[Pair]) -> list[Any]:
    if fmt == "llamafactory-sft":
        return [
            {"instruction": e.user, "input": "", "output": e.completion, "system": e.system}
            for e in examples
        ]
    if fmt == "llamafactory-dpo":
        return [
            {
                "instruction": e.user,
                "input": "",
                "chosen": e.completion,
                "rejected": rejected,
                "system": e.system,
            }
            for e, rejected in pairs
        ]
    if fmt == "trl-sft":
        return [{"prompt": e.chat(), "completion": _assistant(e.completion)} for e in examples]
    if fmt == "trl-dpo":
        return [
            {"prompt": e.chat(), "chosen": _assistant(e.completion), "rejected": _assistant(r)}
            for e, r in pairs
        ]
    if fmt == "trl-grpo":
        return [
            {"prompt": e.chat(), **_target_columns(e), "label": e.target.to_label()}
            for e in examples
        ]
    if fmt == "verl":
        return [
            {
                "data_source": f"deonticbench/{e.domain}",
                "prompt": e.chat(),
                "ability": ABILITY,
                "reward_model": {"style": "rule", "ground_truth": str(e.target.gold)},
                "extra_info": {"split": split, "index": index, **_target_columns(e)},
            }
            for index, e in enumerate(examples)
        ]
    raise ValueError(f"unknown format {fmt!r}")


def write_rows(fmt: str, path: Path, rows: list[Any]) -> None:
    if fmt.startswith("llamafactory"):
        path.write_text(json.dumps(rows, ensure_ascii=False, indent=1) + "\n", encoding="utf-8")
    elif fmt == "verl":
        # optional: the train extra (parquet files only)
        import pyarrow as pa
        import pyarrow.parquet as pq

        pq.write_table(pa.Table.from_pylist(rows), path)
    else:
        with path.open("w", encoding="utf-8") as out:
            for row in rows:
                out.write(json.dumps(row, ensure_ascii=False) + "\n")


def dataset_info(fmt: str, data_file: str) -> dict[str, Any] | None:
    """LLaMA-Factory's ``dataset_info.json`` for the file (None for other trainers)."""
    if fmt == "llamafactory-sft":
        return {
            "deonticbench_sft": {
                "file_name": data_file,
                "formatting": "alpaca",
                "columns": {
                    "prompt": "instruction",
                    "query": "input",
                    "response": "output",
                    "system": "system",
                },
            }
        }
    if fmt == "llamafactory-dpo":
        return {
            "deonticbench_dpo": {
                "file_name": data_file,
                "formatting": "alpaca",
                "ranking": True,
                "columns": {
                    "prompt": "instruction",
                    "query": "input",
                    "chosen": "chosen",
                    "rejected": "rejected",
                    "system": "system",
                },
            }
        }
    return None
