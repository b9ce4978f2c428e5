"""A regular (non-editable) install finds the top-level resource folders.

The wheel is built without build isolation (offline) and installed with ``--no-deps``
into a fresh venv; ``deonticbench._paths`` needs nothing beyond the standard library.
"""

from __future__ import annotations

import subprocess
import sys
import venv
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parent.parent


@pytest.mark.slow
def test_regular_install_ships_prompts_prolog_data_and_eval(tmp_path: Path) -> None:
    wheels = tmp_path / "wheels"
    subprocess.run(
        [
            sys.executable,
            "-m",
            "pip",
            "wheel",
            "-q",
            "--no-deps",
            "--no-build-isolation",
            "-w",
            str(wheels),
            str(ROOT),
        ],
        check=True,
        cwd=tmp_path,
    )
    (wheel,) = wheels.glob("deonticbench-*.whl")
    env_dir = tmp_path / "venv"
    venv.create(env_dir, with_pip=True)
    python = env_dir / "bin" / "python"
    subprocess.run(
        [str(python), "-m", "pip", "install", "-q", "--no-deps", "--no-index", str(wheel)],
        check=True,
    )
    probe = (
        "import deonticbench._paths as p\n"
        "for folder in (p.PROMPTS, p.PROLOG, p.DATA, p.EVAL):\n"
        "    assert folder.is_dir(), folder\n"
        "assert 'site-packages' in str(p.ROOT), p.ROOT\n"
        "assert (p.PROMPTS / 'system.txt').is_file()\n"
        "assert (p.DATA / 'manifest.json').is_file()\n"
        "assert (p.EVAL / 'models.yaml').is_file()\n"
        "assert (p.PROLOG / 'analyse.pl').is_file() and (p.PROLOG / 'mutate.pl').is_file()\n"
        "from deonticbench.analysis.engine import ANALYSER\n"
        "assert ANALYSER == p.PROLOG / 'analyse.pl', ANALYSER\n"
        "print(p.ROOT)\n"
    )
    done = subprocess.run([str(python), "-c", probe], capture_output=True, text=True, cwd=tmp_path)
    assert done.returncode == 0, done.stderr
    assert done.stdout.strip().endswith("deonticbench/_share")


def test_oldest_python_is_the_one_ruff_and_mypy_check() -> None:
    """``requires-python`` promises the oldest Python the package runs on; ruff's target
    and mypy's ``python_version`` must be that version, so a newer standard-library name
    (``datetime.UTC`` is 3.11+) or syntax is caught by ``make test`` rather than by a
    user of the oldest version.  mypy checks every module against that version's
    standard library (typeshed's version gates)."""
    import tomllib

    config = tomllib.loads((ROOT / "pyproject.toml").read_text(encoding="utf-8"))
    requires = config["project"]["requires-python"]
    assert requires.startswith(">="), requires
    major, minor = (int(part) for part in requires[2:].split(".")[:2])
    assert config["tool"]["ruff"]["target-version"] == f"py{major}{minor}"
    assert config["tool"]["mypy"]["python_version"] == f"{major}.{minor}"
    assert sys.version_info >= (major, minor)
