"""A reference run and a replay run of the hard split give the records and results.json
pinned in the fixture: a change that is not meant to change them must leave them as
they are.

The fixture holds one sha256 per record, keyed by (domain, case, mode, sample), and the
whole of results.json, after masking what legitimately differs between two runs of the
same code: timing, provenance and paths.  Case text and reference programs never enter
the repository (the data is read from the mirror); only their hashes do.

A change that is *meant* to change records or scores regenerates the fixture with
``python tests/evaluation/test_run_equivalence.py --write`` and says why in its commit.
"""

from __future__ import annotations

import hashlib
import json
import os
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest

FIXTURE = Path(__file__).with_name("golden_hard_runs.json")

# Fields that differ between two runs of the same code: wall and model time, when and
# where it ran, the commit and package versions, the command line and folder names.
MASKED = frozenset(
    {
        "latency_s",
        "wall_s",
        "written",
        "created",
        "versions",
        "report_versions",
        "command",
        "run_commands",
        "run",
        "path",
        "model_latency_s",
        "program_wall_s",
        "wall_time_s",
    }
)


def _mask(value: Any) -> Any:
    if isinstance(value, dict):
        return {k: ("<masked>" if k in MASKED else _mask(v)) for k, v in value.items()}
    if isinstance(value, list):
        return [_mask(v) for v in value]
    return value


def _digest(value: Any) -> str:
    text = json.dumps(value, sort_keys=True, ensure_ascii=False)
    return hashlib.sha256(text.encode("utf-8", "surrogatepass")).hexdigest()


def _eval(*args: str) -> None:
    # The harness protocol (its own templates, exemplars, sampling and reader, beside the
    # paper protocol's): its records are the pinned ones.
    cmd = [sys.executable, "-m", "deonticbench", "eval", "--split", "hard", "-k", "1"]
    cmd += ["--protocol", "harness", *args]
    subprocess.run(cmd, check=True, capture_output=True, text=True, env=os.environ.copy())


def fingerprint(root: Path) -> dict[str, Any]:
    """Run the reference backend over hard (K = 1), replay its records, and fingerprint
    both run folders."""
    ref, replay = root / "reference", root / "replay"
    _eval("--model", "reference", "--out", str(ref), "--score")
    _eval("--model", f"replay:{ref / 'records.jsonl'}", "--out", str(replay), "--score")
    out: dict[str, Any] = {}

    def read(path: Path) -> Any:
        # The replay's model names the temporary folder: the root is masked too.
        return _mask(json.loads(path.read_text().replace(str(root), "<root>")))

    for name, folder in (("reference", ref), ("replay", replay)):
        lines = (folder / "records.jsonl").read_text().replace(str(root), "<root>")
        records = [_mask(json.loads(line)) for line in lines.splitlines()]
        records.sort(key=lambda r: (r["domain"], r["case_id"], r["mode"], r["sample"]))
        out[name] = {
            "records": {
                f"{r['domain']}/{r['case_id']}/{r['mode']}/{r['sample']}": _digest(r)
                for r in records
            },
            "results": read(folder / "results.json"),
        }
    return out


@pytest.mark.slow
def test_reference_and_replay_runs_are_unchanged(tmp_path: Path) -> None:
    if not os.environ.get("DEONTICBENCH_DATA"):
        pytest.skip("needs the data mirror (DEONTICBENCH_DATA)")
    expected = json.loads(FIXTURE.read_text())
    got = fingerprint(tmp_path)
    for name in ("reference", "replay"):
        want, have = expected[name], got[name]
        changed = sorted(
            k
            for k in set(want["records"]) | set(have["records"])
            if want["records"].get(k) != have["records"].get(k)
        )
        assert not changed, f"{name}: {len(changed)} records differ, e.g. {changed[:5]}"
        assert have["results"] == want["results"], f"{name}: results.json differs"


if __name__ == "__main__" and sys.argv[1:] == ["--write"]:
    import tempfile

    with tempfile.TemporaryDirectory() as tmp:
        FIXTURE.write_text(json.dumps(fingerprint(Path(tmp)), indent=1, sort_keys=True) + "\n")
    print(f"wrote {FIXTURE}")
