"""The small-model table: ``local:gemma3-270m`` as an agent, text
protocol against constrained protocol, measured side by side in one run.

Both sides run ``deonticbench eval --modes agent-zero-shot`` (the real CLI, runner, loop,
llama.cpp and sandbox) on the same cases, K = 1, with no response cache, one trial at a
time and case by case, the two protocols in turn; then it reads what the run folders
hold: the records' turn kinds, stop reasons and ``ran_program``, the judged attempts,
and each trajectory step's ``decode_s`` (the local backend's decoding time without the
prompt's prefill).  For each protocol it prints:

* well-formed turns: calls of an offered tool with valid arguments, of all turns;
* first-turn stops: trials that ended at their first turn for want of a call;
* ran a program: trials that called ``run_prolog`` on a file they had written;
* judged solution.pl: trials that left a solution.pl for the harness to run;
* accuracy: correct final answers, of all trials;
* ms per output token: decoding time over output tokens, summed over the turns.

The honest reading: a 270M model is expected to stay near zero on answers; what the
harness owes it is that format never decides the score.  Goal: constrained decoding at
most 3x the text protocol's milliseconds per output token (grammar sampling costs).

Usage: python benchmarks/small_agent.py [--domains housing,airline] [--limit N]
       [--max-turns T] [--timeout S] [--protocols text,constrained] [--keep DIR]
Defaults: housing and airline smoke (10 cases), at most 6 turns, both protocols; the run
folders are removed afterwards unless ``--keep`` names a folder to leave them in (one
per protocol and case, to read the trajectories).  CPU only; a full run
takes the better part of an hour on 2 cores.
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import tempfile
from pathlib import Path
from typing import Any

PROTOCOLS = ("text", "constrained")


def run(protocol: str, domain: str, case_id: str, out: Path, args: argparse.Namespace) -> None:
    """One trial of one case under ``protocol``, into ``out`` (one trial at a time, so a
    trial's wall clock is its own, not a queue's for the one llama.cpp thread)."""
    command = [
        sys.executable, "-m", "deonticbench", "eval", "--model", "local:gemma3-270m",
        "--split", "smoke", "--domains", domain, "--sample-id", case_id,
        "--modes", "agent-zero-shot", "-k", "1", "--agent-max-turns", str(args.max_turns),
        "--agent-timeout", str(args.timeout), "--no-cache", "--concurrency", "1",
        "--param", f"tool_mode={protocol}", "--out", str(out),
    ]  # fmt: skip
    env = {k: v for k, v in os.environ.items() if "API_KEY" not in k}
    subprocess.run(command, env=env, check=True, capture_output=True, text=True)


def cases(args: argparse.Namespace) -> list[tuple[str, str]]:
    """(domain, case id) of each case the table covers."""
    # Only here: the benchmark reads the case list through the package, the rest is the CLI.
    from deonticbench.data.cases import load_cases

    chosen = []
    for domain in args.domains.split(","):
        found = load_cases(domain, "smoke")
        chosen += [(domain, case.id) for case in found[: args.limit or len(found)]]
    return chosen


def summarise(outs: list[Path]) -> dict[str, Any]:
    """The table's row for one protocol's run folders (one trial each)."""
    records = []
    for out in outs:
        for line in (out / "records.jsonl").read_text().splitlines():
            records.append((out, json.loads(line)))
    kinds: dict[str, int] = {}
    decode_s = 0.0
    tokens = 0
    for out, record in records:
        agent = record["agent"]
        for kind, count in (agent.get("turn_kinds") or {}).items():
            kinds[kind] = kinds.get(kind, 0) + count
        trajectory = json.loads((out / agent["trajectory"]).read_text())
        for step in trajectory["steps"]:
            if step.get("source") == "agent" and "decode_s" in (step.get("extra") or {}):
                decode_s += step["extra"]["decode_s"]
                tokens += step["metrics"]["completion_tokens"]
    finals = [record["attempts"][-1] for _, record in records]
    agents = [record["agent"] for _, record in records]
    turns = sum(kinds.values())
    first = sum(a["turns"] <= 1 and a["stop_reason"] == "no_tool_call" for a in agents)
    return {
        "trials": len(records),
        "well_formed": f"{kinds.get('well_formed', 0)}/{turns}",
        "first_turn_stops": f"{first}/{len(records)}",
        "ran_program": f"{sum(bool(a.get('ran_program')) for a in agents)}/{len(records)}",
        "judged_solution": f"{sum(bool(a.get('response')) for a in finals)}/{len(records)}",
        "accuracy": f"{sum(a.get('outcome') == 'correct' for a in finals)}/{len(records)}",
        "ms_per_token": round(1000 * decode_s / tokens, 1) if tokens else None,
        "kinds": kinds,
    }


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--domains", default="housing,airline")
    parser.add_argument("--limit", type=int, default=0, help="cases per domain (0: all 5)")
    parser.add_argument("--max-turns", type=int, default=6)
    parser.add_argument("--timeout", type=float, default=600.0, help="seconds per trial")
    parser.add_argument("--protocols", default=",".join(PROTOCOLS))
    parser.add_argument("--keep", type=Path, help="leave the run folders here")
    args = parser.parse_args()
    protocols = [p for p in args.protocols.split(",") if p]
    unknown = sorted(set(protocols) - set(PROTOCOLS))
    if unknown:
        parser.error(f"--protocols takes {' and '.join(PROTOCOLS)}, not {', '.join(unknown)}")
    if args.keep is not None and args.keep.exists() and any(args.keep.iterdir()):
        parser.error(f"--keep {args.keep} is not empty; name a new folder")
    outs: dict[str, list[Path]] = {protocol: [] for protocol in protocols}
    with tempfile.TemporaryDirectory(prefix="small-agent-") as scratch:
        base = args.keep or Path(scratch)
        # Case by case, the two protocols one after the other: a machine that slows down
        # midway slows both sides alike.
        for domain, case_id in cases(args):
            for protocol in protocols:
                out = base / protocol / case_id
                run(protocol, domain, case_id, out, args)
                outs[protocol].append(out)
        rows = {protocol: summarise(folders) for protocol, folders in outs.items()}
    columns = (
        "trials", "well_formed", "first_turn_stops", "ran_program", "judged_solution",
        "accuracy", "ms_per_token",
    )  # fmt: skip
    print("| protocol | " + " | ".join(columns) + " |")
    print("|" + " --- |" * (len(columns) + 1))
    for protocol, row in rows.items():
        print(f"| {protocol} | " + " | ".join(str(row[c]) for c in columns) + " |")
    text = rows.get("text", {}).get("ms_per_token")
    constrained = rows.get("constrained", {}).get("ms_per_token")
    if text and constrained:
        print(f"constrained / text ms per output token: {constrained / text:.2f}x (goal <= 3x)")
    for protocol, row in rows.items():
        print(f"{protocol} turn kinds: {row['kinds']}")


if __name__ == "__main__":
    main()
