"""How a set is laid out and shown: its lanes (runs of one provider and server share a
lane and go one after another; other lanes go at once), its one progress display, and
the shipped set files, each read by ``eval``'s own options."""

from __future__ import annotations

import asyncio
import io
from pathlib import Path

import pytest
from cost_runs import DATA

from deonticbench.cli import eval_cmd
from deonticbench.cli.set_file import SHIPPED_SETS, find_set_file, read_set_file
from deonticbench.eval_sets import SetEntry, SetProgress, plan_set, run_set
from deonticbench.evaluation import RunOptions
from deonticbench.store import RunSpec

pytestmark = pytest.mark.skipif(
    not Path(DATA, "data").is_dir(), reason="the shared data mirror is not available"
)


def _entry(model: str, name: str, **spec: object) -> SetEntry:
    fields: dict[str, object] = {"split": "smoke", "domains": ("airline",), "modes": ("direct",)}
    fields.update(spec)
    return SetEntry(RunSpec(model, k=1, **fields), RunOptions(concurrency=2), name, name)  # type: ignore[arg-type]


def test_runs_of_one_provider_and_server_share_a_lane(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("DEONTICBENCH_DATA", DATA)
    entries = [
        _entry("openai:gpt-4.1", "a"),
        _entry("openai:o3", "b"),
        _entry("openai-compatible:m@http://127.0.0.1:9/v1", "c"),
        _entry("openai-compatible:m@http://127.0.0.1:8/v1", "d"),
        _entry("reference", "e"),
        _entry("reference", "f", modes=("zero-shot",)),
    ]
    lanes = plan_set(entries, tmp_path / "set", "test").lanes()
    names = sorted([r.name for r in runs] for runs in lanes.values())
    # OpenAI's two runs one after another; each server its own; the reference sends
    # nothing, so each of its runs is a lane of its own.
    assert names == [["a", "b"], ["c"], ["d"], ["e"], ["f"]]


def test_one_display_shows_every_run_and_the_set(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("DEONTICBENCH_DATA", DATA)
    monkeypatch.setenv("DEONTICBENCH_CACHE", str(tmp_path / "cache"))
    entries = [_entry("reference", "first"), _entry("reference", "second", modes=("zero-shot",))]
    plan = plan_set(entries, tmp_path / "set", "test")
    shown = io.StringIO()
    outcome = asyncio.run(run_set(plan, max_usd=None, progress=SetProgress(shown, tty=False)))
    assert [r.state for r in outcome.runs] == ["done", "done"]
    lines = shown.getvalue().splitlines()
    for name in ("first", "second"):
        ends = [line for line in lines if line.startswith(name) and " done " in line]
        assert ends, shown.getvalue()
        total = sum(1 for _ in (tmp_path / "set" / name / "records.jsonl").open())
        assert f"{total}/{total}" in ends[-1].replace(" ", "")


def test_the_shipped_sets_are_read_by_evals_options(monkeypatch: pytest.MonkeyPatch) -> None:
    """Every shipped set parses: each key is one of eval's options with a value it takes
    (planning table2 would need the hub's whole housing split, dar DAR's files)."""
    monkeypatch.setenv("GEMINI_BASE_URL", "http://127.0.0.1:9/v1")
    monkeypatch.setenv("OPEN_MODELS_BASE_URL", "http://127.0.0.1:9/v1")
    shipped = sorted(p.stem for p in SHIPPED_SETS.glob("*.yaml"))
    assert shipped == ["dar", "smoke", "table2"]
    table2 = read_set_file(find_set_file("table2"), eval_cmd.command)
    assert [e.spec.model.split("@")[0] for e in table2] == [
        "openai:gpt-4.1", "openai:gpt-5.1", "openai:gpt-5.2", "openai:o3",
        "anthropic:claude-sonnet-4-5", "openai-compatible:gemini-2.5-flash",
        "openai-compatible:moonshotai/Kimi-K2-Instruct-0905",
        "openai-compatible:Qwen/Qwen3-235B-A22B-Instruct-2507-tput",
    ]  # fmt: skip
    assert {e.spec.protocol for e in table2} == {"paper"} and {e.spec.split for e in table2} == {
        "whole"
    }
    dar = read_set_file(find_set_file("eval/sets/dar.yaml"), eval_cmd.command)
    assert {e.spec.protocol for e in dar} == {"dar"}
    assert {e.spec.agent.tool_set for e in dar} == {"shell"}
    smoke = read_set_file(find_set_file("smoke"), eval_cmd.command)
    assert [e.spec.model for e in smoke] == ["reference", "local:gemma3-270m"]
