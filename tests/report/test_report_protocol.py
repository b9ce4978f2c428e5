"""The report names each run's protocol, and beside the paper says when its cells do not
compare."""

from __future__ import annotations

import html
import json
import re
from pathlib import Path

import pytest
from synthetic_runs import write_synthetic_run

from deonticbench.report._page import build_report
from deonticbench.scoring.comparisons import compare
from deonticbench.scoring.scores import score_runs
from deonticbench.vocabulary.protocols import LEAK_MARK


def _run(folder: Path, model: str, protocol: str, shift: int = 0) -> Path:
    run = write_synthetic_run(folder, model, shift=shift)
    config = json.loads((run / "config.json").read_text())
    config["protocol"] = protocol
    (run / "config.json").write_text(json.dumps(config))
    return run


def _text(page: str, section: str) -> str:
    found = re.search(rf'<section id="{section}">(.*?)</section>', page, re.S)
    assert found, section
    return html.unescape(re.sub(r"<[^>]+>", " ", found.group(1)))


@pytest.mark.slow
def test_runs_table_and_paper_section_name_the_protocol(tmp_path: Path) -> None:
    paper = _run(tmp_path / "p", "openai:gpt-4.1", "paper")
    harness = _run(tmp_path / "h", "openai:gpt-4.1", "harness", shift=1)
    scores = score_runs([paper, harness], bootstrap=20)
    page = build_report(scores, compare(scores[0], scores[1], 20))
    runs = _text(page, "overview")
    assert "Protocol" in runs and " paper " in runs and " harness " in runs
    beside = " ".join(_text(page, "paper").split())
    assert "h: the paper's cells are not comparable" in beside
    assert "p: the paper's cells" not in beside
    assert "set figures of different protocols" in " ".join(_text(page, "comparison").split())
    assert LEAK_MARK in _text(page, "scores")
    assert "reference program" in " ".join(_text(page, "notes").split())


@pytest.mark.slow
def test_upstream_statistics_are_shown_as_results_json_holds_them(tmp_path: Path) -> None:
    from deonticbench.scoring.tables import to_json
    from deonticbench.scoring.upstream_bootstrap import upstream_bootstrap

    run = _run(tmp_path / "p", "openai:gpt-4.1", "paper")
    scores = score_runs([run], bootstrap=20)
    block, _ = upstream_bootstrap(scores[0].run)
    assert to_json(scores)["runs"][0]["upstream_bootstrap"] == block
    section = " ".join(_text(build_report(scores), "upstream-bootstrap").split())
    airline = block["airline"]["few-shot"]
    shown = (
        f"Airline Few-Shot {100 * airline['mean_accuracy']:.1f} "
        f"[{100 * airline['acc_ci_low_95']:.1f}, {100 * airline['acc_ci_high_95']:.1f}]"
    )
    assert shown in section
    assert section.count("openai:gpt-4.1") == sum(len(m) for m in block.values())
