"""The import-linter contracts cover the whole package, and lint-imports holds them.

A module missing from the layers would be free to import anything: every module of the
package must have a place in the data flow (docs/architecture.md)."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import tomllib

ROOT = Path(__file__).resolve().parent.parent
PACKAGE = ROOT / "deonticbench"


def _contracts() -> list[dict[str, object]]:
    config = tomllib.loads((ROOT / "pyproject.toml").read_text(encoding="utf-8"))
    contracts: list[dict[str, object]] = config["tool"]["importlinter"]["contracts"]
    return contracts


def _top_level_modules() -> set[str]:
    names = {p.stem for p in PACKAGE.glob("*.py") if p.name != "__init__.py"}
    names |= {p.parent.name for p in PACKAGE.glob("*/__init__.py")}
    return {f"deonticbench.{name}" for name in names}


def test_every_module_has_a_layer() -> None:
    (layers,) = [c for c in _contracts() if c["type"] == "layers"]
    listed: set[str] = set()
    for layer in layers["layers"]:  # type: ignore[attr-defined]
        for part in str(layer).replace(":", "|").split("|"):
            listed.add(part.strip())
    missing = _top_level_modules() - listed
    assert not missing, f"modules without a layer in pyproject.toml: {sorted(missing)}"


def test_the_supervisor_may_import_no_module_of_the_package() -> None:
    (forbidden,) = [c for c in _contracts() if c["type"] == "forbidden"]
    solver = {f"deonticbench.solver.{p.stem}" for p in (PACKAGE / "solver").glob("*.py")}
    expected = (_top_level_modules() - {"deonticbench.solver"}) | (
        solver - {"deonticbench.solver.__init__", "deonticbench.solver.supervisor"}
    )
    listed = set(forbidden["forbidden_modules"])  # type: ignore[arg-type]
    assert listed == expected, (
        "the supervisor's forbidden list in pyproject.toml must name every module of the "
        f"package: add {sorted(expected - listed)}, drop {sorted(listed - expected)}"
    )


def test_lint_imports_keeps_every_contract() -> None:
    lint = Path(sys.executable).with_name("lint-imports")
    done = subprocess.run(
        [str(lint), "--no-cache"], cwd=ROOT, capture_output=True, text=True, timeout=120
    )
    assert done.returncode == 0, done.stdout[-3000:] + done.stderr[-2000:]
    assert "0 broken" in done.stdout
