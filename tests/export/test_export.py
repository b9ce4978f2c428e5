"""``deonticbench export``: every training format written from the mirror, re-verified in
the real sandbox, and loaded back with ``datasets`` in the shape its trainer expects."""

from __future__ import annotations

import dataclasses
import functools
import hashlib
import importlib.util
import json
import os
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from deonticbench.data.cases import Case, load_cases, resolve_source
from deonticbench.data.domains import get_domain
from deonticbench.export.examples import DomainCounts, build_examples, training_pool
from deonticbench.prompting import problem_key
from deonticbench.prompting.plan import plan_run
from deonticbench.prompting.render import render
from deonticbench.rewards import RewardTarget, score_completion
from deonticbench.rewards.core import RewardCache
from deonticbench.store.record import Attempt, Record

pytestmark = pytest.mark.skipif(
    not os.environ.get("DEONTICBENCH_DATA"), reason="needs DEONTICBENCH_DATA (the data mirror)"
)
datasets = pytest.importorskip("datasets")  # the 'train' extra, which dev includes

DOMAINS = "airline,sara_numeric,uscis"
LIMIT = 3


def run_cli(*args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-m", "deonticbench", *args], capture_output=True, text=True, timeout=600
    )


def export(out: Path, fmt: str, *extra: str) -> dict[str, Any]:
    done = run_cli(
        "export", "--format", fmt, "--out", str(out), "--domains", DOMAINS,
        "--limit", str(LIMIT), *extra,
    )  # fmt: skip
    assert done.returncode == 0, done.stderr
    manifest: dict[str, Any] = json.loads((out / "manifest.json").read_text())
    return manifest


@pytest.fixture(autouse=True)
def offline_datasets(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Iterator[None]:
    monkeypatch.setenv("HF_DATASETS_OFFLINE", "1")
    monkeypatch.setenv("HF_HUB_OFFLINE", "1")
    monkeypatch.setenv("HF_DATASETS_CACHE", str(tmp_path / "hf-cache"))
    yield


def load(kind: str, path: Path, tmp_path: Path) -> Any:
    return datasets.load_dataset(
        kind, data_files=str(path), split="train", cache_dir=str(tmp_path / "hf")
    )


@pytest.fixture(scope="module")
def hard() -> dict[str, list[Case]]:
    source = resolve_source()
    return {name: load_cases(name, "hard", source) for name in DOMAINS.split(",")}


def assert_no_hard_case(
    case_ids: list[str], domains: list[str], hard: dict[str, list[Case]]
) -> None:
    for case_id, domain in zip(case_ids, domains, strict=True):
        assert case_id not in {c.id for c in hard[domain]}


def harness_prompt(domain: str, case_id: str, mode: str = "zero-shot", seed: int = 0) -> Any:
    """The prompt the eval harness would send for this whole-split case."""
    source = resolve_source()
    plan = plan_run(
        [get_domain(domain)],
        split="whole",
        modes=[mode],  # type: ignore[list-item]
        source=source,
        k=1,
        seed=seed,
        load=lambda d, s, src: [c for c in load_cases(d, "whole", src) if c.id == case_id],
    )
    unit = plan.units[0]
    return render(unit.case, unit.mode, unit.exemplars)


def sha256(path: Path) -> str:
    return hashlib.sha256(path.read_bytes()).hexdigest()


# --- SFT ----------------------------------------------------------------------------


def test_llamafactory_sft(tmp_path: Path, hard: dict[str, list[Case]]) -> None:
    manifest = export(tmp_path, "llamafactory-sft")
    info = json.loads((tmp_path / "dataset_info.json").read_text())
    entry = info["deonticbench_sft"]
    assert entry["file_name"] == "train.json"
    rows = load("json", tmp_path / entry["file_name"], tmp_path)
    assert set(entry["columns"].values()) <= set(rows.column_names)
    assert len(rows) == manifest["rows"] == 3 * LIMIT
    for row in rows:
        assert row["output"].startswith("```prolog\n") and row["output"].endswith("\n```")
        assert "Label:" not in row["output"]
        assert row["input"] == "" and row["system"]
    # The files are what the manifest says, and the data revision is named.
    for name, digest in manifest["files"].items():
        assert sha256(tmp_path / name) == digest
    assert manifest["data"]["files_sha256"]["data/airline/whole.json"] == sha256(
        Path(os.environ["DEONTICBENCH_DATA"]) / "data/airline/whole.json"
    )
    assert manifest["domains"]["uscis"]["held_out_copies"] == 7


@pytest.mark.slow
def test_trl_sft_prompts_are_the_harness_prompts(tmp_path: Path) -> None:
    export(tmp_path, "trl-sft", "--prompt-mode", "few-shot", "--exemplar-seed", "3")
    rows = load("json", tmp_path / "train.jsonl", tmp_path)
    assert rows.column_names == ["prompt", "completion"]
    first = rows[0]
    assert [m["role"] for m in first["prompt"]] == ["system", "user"]
    assert [m["role"] for m in first["completion"]] == ["assistant"]
    grpo = tmp_path / "grpo"
    export(grpo, "trl-grpo", "--prompt-mode", "few-shot", "--exemplar-seed", "3")
    ids = load("json", grpo / "train.jsonl", tmp_path)
    for row, meta in zip(rows, ids, strict=True):
        expected = harness_prompt(meta["domain"], meta["case_id"], "few-shot", seed=3)
        assert row["prompt"] == [{"role": m.role, "content": m.content} for m in expected.messages]


# --- RL -------------------------------------------------------------------------------


@pytest.mark.slow
def test_trl_grpo_rows_feed_the_trl_reward(tmp_path: Path, hard: dict[str, list[Case]]) -> None:
    from deonticbench.rewards.trl import make_reward

    export(tmp_path, "trl-grpo")
    rows = load("json", tmp_path / "train.jsonl", tmp_path)
    assert {"prompt", "domain", "case_id", "gold", "reference_signatures", "label"} <= set(
        rows.column_names
    )
    assert_no_hard_case(rows["case_id"], rows["domain"], hard)
    assert all(row["reference_signatures"] for row in rows)
    # GRPOTrainer passes every column but prompt as a keyword list.
    sft = tmp_path / "sft"
    export(sft, "trl-sft")
    completions = load("json", sft / "train.jsonl", tmp_path)["completion"]
    columns = {k: rows[k] for k in rows.column_names if k != "prompt"}
    rewards = make_reward("eval")(prompts=rows["prompt"], completions=completions, **columns)
    assert rewards == [1.0] * len(rows)
    # The label column is the same target as one JSON string (OpenRLHF's --label_key).
    target = RewardTarget.from_label(rows[0]["label"])
    assert (target.domain, target.case_id, str(target.gold)) == (
        rows[0]["domain"],
        rows[0]["case_id"],
        rows[0]["gold"],
    )


@pytest.mark.slow
def test_verl_parquet_schema_and_reward(tmp_path: Path, hard: dict[str, list[Case]]) -> None:
    manifest = export(tmp_path, "verl")
    rows = load("parquet", tmp_path / "train.parquet", tmp_path)
    features = rows.features
    assert {"data_source", "prompt", "ability", "reward_model", "extra_info"} == set(
        rows.column_names
    )
    assert set(features["reward_model"]) == {"style", "ground_truth"}
    assert {"split", "index", "domain", "case_id", "reference_signatures"} <= set(
        features["extra_info"]
    )
    assert rows[0]["data_source"].startswith("deonticbench/")
    assert [m["role"] for m in rows[0]["prompt"]] == ["system", "user"]
    assert_no_hard_case(
        [r["extra_info"]["case_id"] for r in rows], [r["extra_info"]["domain"] for r in rows], hard
    )
    assert manifest["files"]["train.parquet"] == sha256(tmp_path / "train.parquet")
    # verl's NaiveRewardManager: compute_score(data_source, solution_str, ground_truth,
    # extra_info) with the row's own fields, from the file verl loads.
    spec = importlib.util.spec_from_file_location(
        "custom_module", Path(__file__).resolve().parents[2] / "deonticbench/rewards/verl.py"
    )
    assert spec is not None and spec.loader is not None
    verl = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(verl)
    lenient = functools.partial(verl.compute_score, mode="eval")
    row = rows[0]
    case = next(
        c
        for c in load_cases(row["extra_info"]["domain"], "whole", resolve_source())
        if c.id == row["extra_info"]["case_id"]
    )
    from deonticbench.export.examples import completion_for

    result = lenient(
        data_source=row["data_source"],
        solution_str=completion_for(get_domain(case.domain), case),
        ground_truth=row["reward_model"]["ground_truth"],
        extra_info=row["extra_info"],
    )
    assert result["score"] == 1.0


# --- the hard split stays out ------------------------------------------------------------


def test_hard_split_needs_allow_test_and_is_a_test_file(tmp_path: Path) -> None:
    refused = run_cli("export", "--format", "trl-sft", "--out", str(tmp_path), "--split", "hard")
    assert refused.returncode == 2
    assert "--allow-test" in refused.stderr and not (tmp_path / "train.jsonl").exists()
    allowed = run_cli(
        "export", "--format", "trl-sft", "--out", str(tmp_path), "--split", "hard",
        "--allow-test", "--domains", "airline", "--limit", "2",
    )  # fmt: skip
    assert allowed.returncode == 0, allowed.stderr
    assert (tmp_path / "test.jsonl").exists() and not (tmp_path / "train.jsonl").exists()
    manifest = json.loads((tmp_path / "manifest.json").read_text())
    assert manifest["split"] == "hard (test only)"


def test_training_pool_holds_out_hard_cases_by_id_and_content() -> None:
    source = resolve_source()
    domain = get_domain("uscis")
    counts = DomainCounts(domain.name)
    pool = training_pool(domain, source, counts)
    hard = load_cases(domain, "hard", source)
    assert not {c.id for c in pool} & {c.id for c in hard}
    assert not {problem_key(c) for c in pool} & {problem_key(c) for c in hard}
    assert counts.held_out_copies == 7 and counts.pool == len(pool) == 242 - 28 - 7


def test_label_lines_removed_and_failing_references_dropped() -> None:
    source = resolve_source()
    domain = get_domain("airline")
    counts = DomainCounts(domain.name)
    # Upstream's injected Label: directives are all in hard cases today; the cleaning is
    # the same for any case, so the test takes its labelled programs from there.
    labelled = [c for c in load_cases(domain, "hard", source) if "Label:" in c.reference_prolog]
    labelled = labelled[:2]
    assert len(labelled) == 2
    broken = dataclasses.replace(
        labelled[0],
        id="broken",
        reference_prolog=labelled[0].reference_prolog.replace("format(", "formt("),
    )
    wrong_gold = dataclasses.replace(labelled[1], id="wrong-gold", gold=int(labelled[1].gold) + 50)
    examples = build_examples(
        domain,
        [*labelled, broken, wrong_gold],
        source,
        "zero-shot",
        seed=0,
        counts=counts,
        timeout_s=10,
    )
    assert [e.case.id for e in examples] == [c.id for c in labelled]
    assert all("Label:" not in e.completion for e in examples)
    assert counts.dropped == 2 and counts.dropped_ids == ["broken", "wrong-gold"]


# --- DPO ------------------------------------------------------------------------------


def write_run(folder: Path, records: list[Record]) -> Path:
    folder.mkdir()
    with (folder / "records.jsonl").open("w") as out:
        for record in records:
            out.write(json.dumps(record.to_json()) + "\n")
    return folder


def record(case: Case, prompt_hash: str, response: str, outcome: str) -> Record:
    return Record(
        domain=case.domain,
        case_id=case.id,
        mode="zero-shot",
        sample=0,
        gold=case.gold,
        model="base",
        attempts=[Attempt(index=0, prompt_hash=prompt_hash, response=response, outcome=outcome)],  # type: ignore[arg-type]
    )


@pytest.mark.slow
def test_dpo_rejected_come_from_the_runs_wrong_or_abstained_answers(
    tmp_path: Path, hard: dict[str, list[Case]]
) -> None:
    source = resolve_source()
    domain = get_domain("airline")
    pool = training_pool(domain, source, DomainCounts("airline"))[:LIMIT]
    prompts = [harness_prompt("airline", c.id) for c in pool]
    wrong = '```prolog\n:- format("Total cost: 1~n").\n```'
    run = write_run(
        tmp_path / "run",
        [
            record(pool[0], prompts[0].prompt_hash, wrong, "wrong"),
            record(pool[1], prompts[1].prompt_hash, "I cannot tell.", "abstain"),
            record(pool[2], prompts[2].prompt_hash, "a correct answer", "correct"),
            record(pool[2], "another-prompt", "asked differently", "wrong"),
            record(hard["airline"][0], "whatever", "hard case answer", "wrong"),
        ],
    )
    refused = run_cli("export", "--format", "trl-dpo", "--out", str(tmp_path / "x"))
    assert refused.returncode == 2 and "--rejected-from" in refused.stderr
    for fmt in ("trl-dpo", "llamafactory-dpo"):
        out = tmp_path / fmt
        done = run_cli(
            "export", "--format", fmt, "--out", str(out), "--domains", "airline",
            "--limit", str(LIMIT), "--rejected-from", str(run),
        )  # fmt: skip
        assert done.returncode == 0, done.stderr
        manifest = json.loads((out / "manifest.json").read_text())
        assert manifest["domains"]["airline"]["dpo_cases_with_rejected"] == 2
        if fmt == "trl-dpo":
            rows = load("json", out / "train.jsonl", tmp_path)
            assert rows.column_names == ["prompt", "chosen", "rejected"]
            rejected = [r["rejected"][0]["content"] for r in rows]
            chosen = [r["chosen"][0]["content"] for r in rows]
            prompts_seen = [r["prompt"] for r in rows]
        else:
            info = json.loads((out / "dataset_info.json").read_text())["deonticbench_dpo"]
            assert info["ranking"] is True
            rows = load("json", out / info["file_name"], tmp_path)
            assert set(info["columns"].values()) <= set(rows.column_names)
            rejected = rows["rejected"]
            chosen = rows["chosen"]
            prompts_seen = [
                [
                    {"role": "system", "content": r["system"]},
                    {"role": "user", "content": r["instruction"]},
                ]
                for r in rows
            ]
        assert rejected == [wrong, "I cannot tell."]
        expected_prompts = [
            [{"role": m.role, "content": m.content} for m in p.messages] for p in prompts[:2]
        ]
        assert prompts_seen == expected_prompts
        for case, text in zip(pool[:2], chosen, strict=True):
            verdict = score_completion(
                text, RewardTarget.from_case(case), mode="eval", cache=RewardCache()
            )
            assert verdict.reward == 1.0


def test_a_limited_pool_says_how_many_it_kept_of_how_many(tmp_path: Path) -> None:
    """``--limit`` keeps the first cases of the pool: the line says of how many, so that
    "pool 3 (whole 300 minus hard 80)" does not read as a wrong subtraction."""
    done = run_cli(
        "export", "--format", "trl-sft", "--out", str(tmp_path / "out"),
        "--domains", "airline", "--limit", str(LIMIT),
    )  # fmt: skip
    assert done.returncode == 0, done.stderr
    assert (
        f"airline: pool {LIMIT} (whole 300 minus hard 80; the first {LIMIT} of 220 (--limit))"
        in (done.stdout)
    )
