"""``deonticbench perturb`` as a user runs it (a subprocess): a source it cannot use leaves
no half-written ``--out`` behind, and an empty one is an error, not "0 variants of 0
cases"."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest

DATA = Path(os.environ.get("DEONTICBENCH_DATA") or "/work/shared/deonticbench-data")
pytestmark = pytest.mark.skipif(
    not (DATA / "data").is_dir(), reason="the shared data mirror is not available"
)


def source(root: Path, airline: bytes) -> Path:
    """A data folder with the real sara_numeric smoke split and the given airline one."""
    (root / "data" / "sara_numeric").mkdir(parents=True)
    (root / "data" / "airline").mkdir(parents=True)
    (root / "statutes").symlink_to(DATA / "statutes")
    smoke = DATA / "data" / "sara_numeric" / "smoke.json"
    (root / "data" / "sara_numeric" / "smoke.json").write_bytes(smoke.read_bytes())
    (root / "data" / "airline" / "smoke.json").write_bytes(airline)
    return root


def perturb(tmp_path: Path, src: Path, out: Path) -> subprocess.CompletedProcess[str]:
    env = {k: v for k, v in os.environ.items() if "API_KEY" not in k}
    return subprocess.run(
        [sys.executable, "-m", "deonticbench", "perturb", "--split", "smoke",
         "--variants", "1", "--data-dir", str(src), "--out", str(out)],
        capture_output=True, text=True, env=env, cwd=tmp_path, timeout=300, check=False,
    )  # fmt: skip


@pytest.mark.slow
def test_a_corrupt_source_leaves_nothing_and_a_rerun_is_not_refused(tmp_path: Path) -> None:
    whole = (DATA / "data" / "airline" / "smoke.json").read_bytes()
    src = source(tmp_path / "src", whole[: len(whole) // 2])
    out = tmp_path / "out"
    done = perturb(tmp_path, src, out)
    assert done.returncode == 2
    assert "Traceback" not in done.stderr
    (line,) = done.stderr.strip().splitlines()
    assert line.startswith("error: ") and "smoke.json is not valid JSON" in line
    # sara_numeric was perturbed before airline failed: none of it is left anywhere.
    assert sorted(p.name for p in tmp_path.iterdir()) == ["src"]
    (src / "data" / "airline" / "smoke.json").write_bytes(whole)
    again = perturb(tmp_path, src, out)
    assert again.returncode == 0, again.stderr
    assert (out / "data" / "airline" / "smoke.json").is_file()
    assert sorted(p.name for p in tmp_path.iterdir()) == ["out", "src"]


def test_an_empty_source_is_an_error_not_zero_variants(tmp_path: Path) -> None:
    src = source(tmp_path / "src", b"[]\n")
    done = perturb(tmp_path, src, tmp_path / "out")
    assert done.returncode == 2
    assert done.stderr == (
        f"error: the smoke split of airline holds no case in {src}: nothing to perturb.\n"
    )
    assert not (tmp_path / "out").exists()
