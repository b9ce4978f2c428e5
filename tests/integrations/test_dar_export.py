"""``export --format harbor --protocol dar`` against DAR's own adapters.

DAR's ``run_adapter.py`` (from the read-only mirror of DAR's repository, its
``repository`` pointed at the shared data folder) writes the hard split's 173 tasks of a
prompt mode into one folder, our export into another, and the two trees must hold the
same files with the same bytes.  Three template files are missing from DAR's public
repository (direct's Dockerfile, zero-shot's task.toml and test.sh), so DAR's direct and
zero-shot adapters fail on every task as published: for the comparison only, the
adapters are copied to a temporary folder and each missing file is put there from the
file the manifest fills it from, the same one our export reads.  The filled files
themselves therefore agree by construction; every other byte is DAR's adapter's.
"""

from __future__ import annotations

import hashlib
import http.server
import os
import shutil
import stat
import subprocess
import sys
import threading
from collections.abc import Iterator
from pathlib import Path

import pytest
from click.testing import CliRunner
from harbor_support import require_harbor

from deonticbench.cli import cli
from deonticbench.data.cases import load_cases
from deonticbench.data.dar_files import DAR_DIR_ENV, DAR_URL_ENV, _text, dar_manifest
from deonticbench.data.sources import resolve_source
from deonticbench.errors import DataError
from deonticbench.prompting.dar_task import dar_task

DATA = os.environ.get("DEONTICBENCH_DATA", "")
DAR = Path(__file__).resolve().parents[3] / "shared" / "harbor-deonticbench"
pytestmark = pytest.mark.skipif(
    not Path(DATA, "data").is_dir() or not (DAR / "adapters").is_dir(),
    reason="the shared data and DAR mirrors are not available",
)
ADAPTER_DIRS = {
    "direct": "deonticbench_direct",
    "zero-shot": "deonticbench_zeroshot",
    "few-shot": "deonticbench_fewshot",
}
HARD_TASKS = 173  # sara_numeric 35, sara_binary 30, airline 80, uscis-aao 28


def _tree(root: Path) -> dict[str, bytes]:
    return {str(p.relative_to(root)): p.read_bytes() for p in root.rglob("*") if p.is_file()}


def _writable_copy(source: Path, target: Path) -> None:
    shutil.copytree(source, target)
    for path in [target, *target.rglob("*")]:
        path.chmod(path.stat().st_mode | stat.S_IWUSR)


def _filled_adapters(tmp_path: Path) -> tuple[Path, list[str]]:
    """DAR's adapters in a temporary folder, each file missing from the public repository
    put in place from the file the manifest fills it from."""
    root = tmp_path / "dar-copy"
    _writable_copy(DAR / "adapters", root / "adapters")
    filled: list[str] = []
    for path, entry in dar_manifest().files.items():
        if entry.filled_from is not None:
            target = root / path
            target.parent.mkdir(parents=True, exist_ok=True)
            shutil.copyfile(root / entry.filled_from, target)
            filled.append(path)
    return root, filled


def _run_dar_adapter(adapters: Path, mode: str, out: Path) -> subprocess.CompletedProcess[str]:
    # DAR's own CLI, as its README runs it: from the adapter's folder (it imports
    # ``adapter`` from there), under an interpreter with jinja2 (3.12+, as its pyproject asks).
    env = dict(os.environ, PYTHONDONTWRITEBYTECODE="1")
    return subprocess.run(
        [sys.executable, "run_adapter.py", "--deonticbench-root", DATA, "--output-dir", str(out)],
        cwd=adapters / ADAPTER_DIRS[mode],
        env=env,
        capture_output=True,
        text=True,
        timeout=300,
        check=True,
    )


def _export(out: Path, *args: str, env: dict[str, str] | None = None) -> tuple[int, str]:
    result = CliRunner().invoke(
        cli,
        ["export", "--format", "harbor", "--protocol", "dar", "--out", str(out), *args],
        env={DAR_DIR_ENV: str(DAR), **(env or {})},
    )
    return result.exit_code, str(result.exception or "") + result.output


@pytest.mark.slow
@pytest.mark.parametrize("mode", list(ADAPTER_DIRS))
def test_export_writes_the_tree_dar_adapter_writes(tmp_path: Path, mode: str) -> None:
    adapters, filled = _filled_adapters(tmp_path)
    assert sorted(filled) == [
        "adapters/deonticbench_direct/template/environment/Dockerfile",
        "adapters/deonticbench_zeroshot/template/task.toml",
        "adapters/deonticbench_zeroshot/template/tests/test.sh",
    ]
    dar_out = tmp_path / "dar"
    ran = _run_dar_adapter(adapters / "adapters", mode, dar_out)
    assert "Failed to generate" not in ran.stderr, ran.stderr[-2000:]
    code, output = _export(tmp_path / "ours", "--prompt-mode", mode)
    assert code == 0, output
    assert f"wrote {HARD_TASKS} DAR tasks ({mode}, hard)" in output
    assert "housing: skipped (not in DAR's task set)" in output
    theirs, ours = _tree(dar_out), _tree(tmp_path / "ours")
    assert len({name.split("/")[0] for name in theirs}) == HARD_TASKS
    assert sorted(ours) == sorted(theirs)
    differing = [name for name in theirs if theirs[name] != ours[name]]
    assert differing == []
    per_task = 7 if mode == "few-shot" else 6
    assert len(theirs) == HARD_TASKS * per_task
    _harbor_loads(tmp_path / "ours", "prolog" if mode != "direct" else None)


def _harbor_loads(out: Path, tag: str | None) -> None:
    """Harbor's own loader reads every exported folder with DAR's limits."""
    require_harbor()
    from harbor.models.task.task import Task

    for folder in sorted(out.iterdir()):
        assert Task.is_valid_dir(folder) and Task(folder).name == folder.name
        config = Task(folder).config
        assert (config.agent.timeout_sec, config.verifier.timeout_sec) == (600, 120)
        assert (config.environment.cpus, config.environment.memory_mb) == (1, 2048)
        assert (tag in config.metadata["tags"]) if tag else len(config.metadata["tags"]) == 3


def test_the_filled_files_are_the_ones_missing_from_dars_repository() -> None:
    entries = dar_manifest().files
    for path, entry in entries.items():
        if entry.filled_from is None:
            body = (DAR / path).read_bytes()
            assert hashlib.sha256(body).hexdigest() == entry.sha256, path
        else:
            assert not (DAR / path).exists(), path
            assert entries[entry.filled_from].filled_from is None
            assert entry.sha256 == entries[entry.filled_from].sha256
            assert entry.reason


def test_housing_is_refused_in_one_sentence_and_nothing_is_written(tmp_path: Path) -> None:
    out = tmp_path / "out"
    argv = ["export", "--format", "harbor", "--protocol", "dar", "--out", str(out)]
    ran = subprocess.run(
        [sys.executable, "-m", "deonticbench", *argv, "--domains", "airline,housing"],
        env=dict(os.environ, **{DAR_DIR_ENV: str(DAR)}),
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert ran.returncode != 0
    message = ran.stderr.strip()
    assert "housing is not in DAR's task set" in message, message
    assert "--protocol harness" in message and len(message.splitlines()) == 1
    assert not out.exists()


def test_dar_protocol_writes_harbor_tasks_only(tmp_path: Path) -> None:
    result = CliRunner().invoke(
        cli,
        ["export", "--format", "trl-sft", "--protocol", "dar", "--out", str(tmp_path / "o")],
    )
    assert result.exit_code != 0
    assert "use it with --format harbor" in str(result.exception or result.output)


def test_an_edited_dar_file_is_refused(tmp_path: Path) -> None:
    copy = tmp_path / "dar-edited"
    _writable_copy(DAR / "adapters", copy / "adapters")
    instruction = copy / "adapters" / "deonticbench_zeroshot" / "template" / "instruction.md"
    instruction.write_text(instruction.read_text() + "Be brief.\n")
    code, output = _export(
        tmp_path / "out", "--prompt-mode", "zero-shot", "--domains", "airline",
        env={DAR_DIR_ENV: str(copy)},
    )  # fmt: skip
    assert code != 0
    assert "not the pinned" in output and "instruction.md" in output, output
    assert not (tmp_path / "out").exists()


@pytest.fixture
def dar_server(tmp_path: Path) -> Iterator[str]:
    """DAR's files served on loopback as the raw file host serves them: ``/<commit>/<path>``."""
    site = tmp_path / "site"
    site.mkdir()
    for commit in {e.commit for e in dar_manifest().files.values() if e.commit}:
        (site / commit).symlink_to(DAR)

    class Quiet(http.server.SimpleHTTPRequestHandler):
        def __init__(self, *args: object, **kwargs: object) -> None:
            super().__init__(*args, directory=str(site), **kwargs)  # type: ignore[arg-type]

        def log_message(self, format: str, *args: object) -> None:
            pass

    server = http.server.ThreadingHTTPServer(("127.0.0.1", 0), Quiet)
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    try:
        yield f"http://127.0.0.1:{server.server_address[1]}/{{commit}}"
    finally:
        server.shutdown()
        server.server_close()


def test_downloaded_files_give_the_same_task_and_are_cached(
    tmp_path: Path, dar_server: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    source = resolve_source(DATA)
    case = load_cases("uscis", "hard", source)[0]
    local = dar_task(case, "zero-shot", root=DAR, source=source)
    monkeypatch.delenv(DAR_DIR_ENV, raising=False)
    monkeypatch.setenv(DAR_URL_ENV, dar_server)
    monkeypatch.setenv("DEONTICBENCH_CACHE", str(tmp_path / "cache"))
    _text.cache_clear()  # read again, now from the server
    downloaded = dar_task(case, "zero-shot", source=source)
    assert downloaded == local
    cache = tmp_path / "cache" / "dar" / "29caa8c621c50d5573aac7427649b0bb67f2d558"
    assert sorted(str(p.relative_to(cache)) for p in cache.rglob("*") if p.is_file()) == [
        "adapters/deonticbench_direct/adapter.py",
        "adapters/deonticbench_fewshot/template/task.toml",
        "adapters/deonticbench_fewshot/template/tests/test.sh",
        "adapters/deonticbench_zeroshot/template/environment/Dockerfile",
        "adapters/deonticbench_zeroshot/template/instruction.md",
    ]


def test_a_direct_task_answers_in_a_file_and_keeps_the_label_for_the_verifier() -> None:
    source = resolve_source(DATA)
    case = load_cases("sara_numeric", "hard", source)[0]
    task = dar_task(case, "direct", root=DAR, source=source)
    assert task.expected_label == str(case.gold)
    assert task.answer_path == "output/answer.txt" and task.program_path is None
    assert set(task.app_files) == {"statute.txt"}
    assert case.question in task.instruction


def test_an_unreachable_dar_host_says_how_to_do_without_it(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    import socket

    with socket.socket() as closed:  # a loopback port nothing listens on
        closed.bind(("127.0.0.1", 0))
        port = closed.getsockname()[1]
    monkeypatch.delenv(DAR_DIR_ENV, raising=False)
    monkeypatch.setenv(DAR_URL_ENV, f"http://127.0.0.1:{port}/{{commit}}")
    monkeypatch.setenv("DEONTICBENCH_CACHE", str(tmp_path / "cache"))
    _text.cache_clear()
    source = resolve_source(DATA)
    case = load_cases("airline", "hard", source)[0]
    with pytest.raises(DataError) as caught:
        dar_task(case, "direct", source=source)
    message = str(caught.value)
    assert "cannot reach" in message and DAR_DIR_ENV in message and DAR_URL_ENV in message
    assert len(message.splitlines()) == 1
