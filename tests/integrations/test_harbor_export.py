"""``deonticbench export --format harbor``: every hard case of all five domains as a
task Harbor's own loader accepts, the gold label only under tests/, and the user's
mistakes as one sentence."""

from __future__ import annotations

import json
import os
from pathlib import Path

import pytest
from click.testing import CliRunner
from harbor_support import require_harbor

from deonticbench.cli import cli
from deonticbench.data.cases import load_cases
from deonticbench.data.domains import DOMAINS

DATA = os.environ.get("DEONTICBENCH_DATA", "")
pytestmark = pytest.mark.skipif(
    not Path(DATA, "data").is_dir(), reason="the shared data mirror is not available"
)


def _export(out: Path, *args: str) -> str:
    result = CliRunner().invoke(cli, ["export", "--format", "harbor", "--out", str(out), *args])
    assert result.exit_code == 0, result.output
    return result.output


@pytest.mark.slow
def test_hard_tasks_of_all_domains_pass_harbors_loader(tmp_path: Path) -> None:
    require_harbor()
    from harbor.models.task.task import Task

    out = tmp_path / "hard"
    _export(out, "--prompt-mode", "zero-shot")
    hard = {d: load_cases(d, "hard") for d in DOMAINS}
    folders = sorted(p for p in out.iterdir() if p.is_dir())
    assert len(folders) == sum(len(c) for c in hard.values())
    seen: set[tuple[str, str]] = set()
    for folder in folders:
        task = Task(folder)
        assert Task.is_valid_dir(folder) and task.name == folder.name
        config = task.config
        assert config.agent.timeout_sec == 600 and config.environment.cpus == 1
        assert config.environment.memory_mb == 2048
        assert config.environment.network_mode.value == "no-network"
        meta = config.metadata
        assert meta["split"] == "hard" and meta["mode"] == "agent-zero-shot"
        assert meta["data_revision"]["files_sha256"]
        gold = json.loads((folder / "tests" / "case.json").read_text())
        case = next(c for c in hard[meta["domain"]] if c.id == meta["case_id"])
        assert gold["gold"] == case.gold and gold["case_id"] == case.id
        seen.add((meta["domain"], meta["case_id"]))
        # The agent's side: instruction and workspace, never the gold or the reference.
        visible = [folder / "instruction.md", *(folder / "environment").rglob("*")]
        text = "\n".join(p.read_text() for p in visible if p.is_file())
        assert case.reference_prolog.strip()[:200] not in text
        assert '"gold"' not in text and "case.json" not in text
        assert "swi-prolog-nox" in (folder / "environment" / "Dockerfile").read_text()
    assert len(seen) == len(folders)
    manifest = json.loads((out / "manifest.json").read_text())
    assert manifest["tasks"] == len(folders) and manifest["format"] == "harbor"


def test_direct_and_few_shot_tasks(tmp_path: Path) -> None:
    require_harbor()
    from harbor.models.task.task import Task

    _export(tmp_path / "d", "--prompt-mode", "direct", "--split", "smoke", "--limit", "1")
    _export(tmp_path / "f", "--prompt-mode", "few-shot", "--split", "smoke", "--limit", "1")
    for name in ("d", "f"):
        folders = [p for p in (tmp_path / name).iterdir() if p.is_dir()]
        assert len(folders) == len(DOMAINS)
        for folder in folders:
            Task(folder)
    few = next((tmp_path / "f").glob("deonticbench-fewshot-airline-*"))
    assert (few / "environment" / "workspace" / "examples" / "1" / "solution.pl").is_file()
    direct = next((tmp_path / "d").glob("deonticbench-direct-airline-*"))
    assert "output/answer.txt" in (direct / "instruction.md").read_text()


def test_user_mistakes_are_one_sentence(tmp_path: Path) -> None:
    (tmp_path / "full").mkdir()
    (tmp_path / "full" / "x").write_text("")
    runner = CliRunner()
    result = runner.invoke(cli, ["export", "--format", "harbor", "--out", str(tmp_path / "full")])
    assert result.exit_code != 0 and "is not empty" in str(result.exception or result.output)
    result = runner.invoke(
        cli,
        ["export", "--format", "trl-sft", "--prompt-mode", "direct", "--out", str(tmp_path / "t")],
    )
    assert result.exit_code != 0 and "no program to train on" in str(
        result.exception or result.output
    )
