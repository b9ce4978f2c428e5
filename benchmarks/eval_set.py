"""Eval-set benchmark: a set of four runs on four provider lanes against its slowest run
alone.

Four loopback servers (``tests/support/fakeproviders.py``, each in its own process, as
each provider runs on its own machines) answer with different fixed latencies:

* lane A, OpenAI's wire format (``OPENAI_BASE_URL``): ``openai:gpt-4.1``;
* lane B, Anthropic's (``ANTHROPIC_BASE_URL``): ``anthropic:claude-sonnet-4-5``;
* lanes C and D, two OpenAI-compatible servers, each its own URL and so its own lane:
  ``openai-compatible:bench-c@<url C>`` and ``openai-compatible:bench-d@<url D>``.

Every run is airline, hard, zero-shot, K = 1, one attempt, the harness protocol, at
``--concurrency`` requests in flight, and every response is the case's reference
program, so each sample's program is run by the Prolog pool as a real run's would be
(every record is checked to be correct).  Nothing is answered from the response cache
(``no-cache`` and an empty ``DEONTICBENCH_CACHE``).

Each round measures, end to end as a user runs them (a ``python -m deonticbench``
process each, start-up included):

* each run alone, ``deonticbench eval``, one after another: the slowest is the
  reference, and their sum is what running the set's runs in turn costs;
* the set, ``deonticbench eval-set``: its lanes side by side, then its closing
  comparison (the set's table, results.json and report.html, which ``eval`` alone
  does not make).  The moment its last run ends is read off its progress display (the
  run's "done" line), so the set is also shown up to that point.

Rounds alternate which side goes first, because this machine is noisy; the medians of
the per-round ratios are reported.  Goal: set / slowest alone <= 1.2.

Usage: python benchmarks/eval_set.py [--rounds N] [--cases N] [--concurrency C]
                                     [--latencies 0.05,0.1,0.2,0.4] [--workers N]
"""

from __future__ import annotations

import argparse
import json
import multiprocessing
import os
import statistics
import subprocess
import sys
import tempfile
import time
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT / "tests" / "support"))

from fakeproviders import FakeProvider, FakeRequest  # noqa: E402

from deonticbench.data.cases import Case, load_cases, resolve_source  # noqa: E402

KEY = "sk-bench-not-a-real-key"
GOAL = 1.2
WIRES = ("openai", "anthropic", "compatible", "compatible")


@dataclass(frozen=True)
class Lane:
    name: str
    wire: str
    """openai, anthropic or compatible (an OpenAI-compatible server)."""
    latency: float
    url: str

    def model(self) -> str:
        if self.wire == "openai":
            return "openai:gpt-4.1"
        if self.wire == "anthropic":
            return "anthropic:claude-sonnet-4-5"
        return f"openai-compatible:bench-{self.name.lower()}@{self.url}"


@dataclass(frozen=True)
class Bench:
    lanes: dict[str, Lane]
    cases: int
    settings: dict[str, Any]
    """Every run's eval options (a set's ``defaults:``)."""

    def env(self, home: Path) -> dict[str, str]:
        """A user's environment with placeholder keys, pointed at the lanes' servers, and
        an empty response cache."""
        out = {k: v for k, v in os.environ.items() if "API_KEY" not in k and "BASE_URL" not in k}
        out.update(
            DEONTICBENCH_CACHE=str(home / "cache"),
            OPENAI_API_KEY=KEY,
            ANTHROPIC_API_KEY=KEY,
            OPENAI_COMPATIBLE_API_KEY=KEY,
            OPENAI_BASE_URL=self.lanes["A"].url,
            ANTHROPIC_BASE_URL=self.lanes["B"].url,
        )
        return out

    def cli(self, home: Path, *args: str) -> tuple[float, float, list[tuple[float, str]]]:
        """Seconds ``deonticbench ARGS`` takes in a fresh process (it must succeed), the
        CPU seconds it and the children it reaped (the Prolog pool) used, and its
        stderr's lines, each with the second it arrived at (stdout: home/stdout)."""
        lines: list[tuple[float, str]] = []
        started = time.perf_counter()
        with (home / "stdout").open("w", encoding="utf-8") as sink:
            process = subprocess.Popen(
                [sys.executable, "-m", "deonticbench", *args],
                env=self.env(home), cwd=home, stdout=sink, stderr=subprocess.PIPE, text=True,
            )  # fmt: skip
            assert process.stderr is not None
            for line in process.stderr:
                lines.append((time.perf_counter() - started, line.rstrip("\n")))
            _, status, usage = os.wait4(process.pid, 0)
            process.returncode = code = os.waitstatus_to_exitcode(status)
        wall = time.perf_counter() - started
        cpu = usage.ru_utime + usage.ru_stime
        if code != 0:
            tail = "\n".join(text for _, text in lines[-20:])
            sys.exit(f"deonticbench {args[0]} failed ({code}):\n{tail}")
        return wall, cpu, lines

    def check(self, folder: Path) -> None:
        """Every case recorded, its program run and its answer correct: the run did the
        work being timed."""
        text = (folder / "records.jsonl").read_text(encoding="utf-8")
        records = [json.loads(line) for line in text.splitlines() if line.strip()]
        assert len(records) == self.cases, f"{folder}: {len(records)} records, not {self.cases}"
        wrong = [r["case_id"] for r in records if r["outcome"] != "correct"]
        assert not wrong, f"{folder}: not correct: {wrong[:3]}"

    def alone(self, home: Path) -> tuple[dict[str, float], float]:
        """Each run alone, one after another: its ``eval``'s seconds end to end, and the
        CPU seconds of the four."""
        walls, cpu = {}, 0.0
        for lane in self.lanes.values():
            args = ["eval", "--model", lane.model()]
            for key, value in self.settings.items():
                flag = "-k" if key == "k" else f"--{key}"
                args += [flag] if value is True else [flag, str(value)]
            out = home / f"alone-{lane.name}"
            walls[lane.name], used, _ = self.cli(home, *args, "--out", str(out))
            cpu += used
            self.check(out)
        return walls, cpu

    def as_set(self, home: Path) -> tuple[float, float, dict[str, float], float]:
        """The four as one set: ``eval-set``'s seconds end to end, the second its last
        run ended at, each run's own seconds in the set, and its CPU seconds."""
        spec = {
            "description": "four runs on four loopback lanes (benchmarks/eval_set.py)",
            "defaults": self.settings,
            "runs": [{"name": lane.name, "model": lane.model()} for lane in self.lanes.values()],
        }
        path = home / "set.yaml"
        path.write_text(json.dumps(spec, indent=2), encoding="utf-8")  # JSON is YAML
        out = home / "set"
        wall, cpu, lines = self.cli(home, "eval-set", str(path), "--out", str(out), "--json")
        doc = json.loads((home / "stdout").read_text(encoding="utf-8"))
        assert doc["complete"], doc
        assert len(doc["lanes"]) == len(self.lanes), f"not four lanes: {doc['lanes']}"
        for lane in self.lanes.values():
            self.check(out / lane.name)
        # The display's line of a run that ends: "<name>  done  80/80 ...".
        ends = [at for at, text in lines if text.split()[1:2] == ["done"]]
        assert len(ends) == len(self.lanes), lines
        return wall, max(ends), {r["name"]: float(r["wall_s"]) for r in doc["runs"]}, cpu


@dataclass
class Round:
    alone: dict[str, float]
    """Each run alone, ``eval`` end to end."""
    set_wall: float
    """``eval-set`` end to end."""
    set_runs: float
    """``eval-set`` from its start to its last run's end, before its comparison."""
    in_set: dict[str, float]
    """Each run's own seconds inside the set (eval-set --json's ``wall_s``)."""
    set_cpu: float
    """CPU seconds of the set's process and its Prolog pools."""
    alone_cpu: float
    """CPU seconds of the four ``eval`` processes and their pools."""
    load: float
    """The machine's load average over the last minute at the round's end."""

    @property
    def slowest(self) -> float:
        return max(self.alone.values())

    @property
    def total(self) -> float:
        return sum(self.alone.values())


def airline(count: int) -> list[Case]:
    return load_cases("airline", "hard", resolve_source())[:count]


def program_responder(cases: list[Case]) -> Callable[[FakeRequest], str]:
    """Answer each zero-shot prompt with its case's reference program."""
    by_text = {c.text.strip()[:200]: c for c in cases}

    def answer(request: FakeRequest) -> str:
        prompt = request.last_user
        for key, case in by_text.items():
            if key in prompt:
                return f"```prolog\n{case.reference_prolog.strip()}\n```"
        return "no case matched"

    return answer


def serve(latency: float, count: int, ready: Any, stop: Any) -> None:
    """A loopback server's process: report its URLs, serve until told to stop."""
    with FakeProvider(program_responder(airline(count)), latency_s=latency, api_key=KEY) as fake:
        ready.put((fake.url, fake.openai_url))
        stop.wait()


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--rounds", type=int, default=3, help="rounds (medians kept)")
    parser.add_argument("--cases", type=int, default=80, help="airline hard cases per run")
    parser.add_argument("--concurrency", type=int, default=2, help="requests in flight per run")
    parser.add_argument(
        "--latencies", default="0.05,0.1,0.2,0.4", help="seconds per request of lanes A,B,C,D"
    )
    parser.add_argument("--workers", type=int, help="Prolog workers per run [eval's default]")
    args = parser.parse_args()
    latencies = [float(x) for x in args.latencies.split(",")]
    if len(latencies) != 4:
        parser.error("--latencies takes four: lanes A, B, C, D")
    settings: dict[str, Any] = {
        "split": "hard", "domains": "airline", "modes": "zero-shot", "protocol": "harness",
        "k": 1, "attempts": 1, "limit": args.cases, "concurrency": args.concurrency,
        "no-cache": True,
    }  # fmt: skip
    if args.workers:
        settings["workers"] = args.workers

    ctx = multiprocessing.get_context("spawn")
    stop = ctx.Event()
    servers, lanes = [], {}
    for name, wire, latency in zip("ABCD", WIRES, latencies, strict=True):
        ready = ctx.Queue()
        server = ctx.Process(target=serve, args=(latency, args.cases, ready, stop), daemon=True)
        server.start()
        servers.append(server)
        root, openai_url = ready.get(timeout=60)
        lanes[name] = Lane(name, wire, latency, root if wire == "anthropic" else openai_url)
    bench = Bench(lanes, args.cases, settings)

    print(
        f"eval-set benchmark: four runs, airline hard x {args.cases}, zero-shot, K = 1, "
        f"concurrency {args.concurrency}, every response its case's reference program"
    )
    for lane in lanes.values():
        bound = -(-args.cases // args.concurrency) * lane.latency
        print(
            f"  lane {lane.name}: {lane.model().split('@')[0]:<34} latency {lane.latency:.2f} s"
            f" (its requests alone: {bound:.1f} s)"
        )
    rows: list[Round] = []
    try:
        for index in range(args.rounds):
            with tempfile.TemporaryDirectory() as tmp:
                alone_home, set_home = Path(tmp, "alone"), Path(tmp, "set")
                alone_home.mkdir()
                set_home.mkdir()
                if index % 2 == 0:
                    walls, cpu = bench.alone(alone_home)
                    measured = bench.as_set(set_home)
                else:
                    measured = bench.as_set(set_home)
                    walls, cpu = bench.alone(alone_home)
            row = Round(walls, *measured, alone_cpu=cpu, load=os.getloadavg()[0])
            rows.append(row)
            print(
                f"round {index + 1} ({'alone first' if index % 2 == 0 else 'set first'}): alone "
                + ", ".join(f"{k} {v:.1f}" for k, v in row.alone.items())
                + f" s; set {row.set_wall:.1f} s, its runs done at {row.set_runs:.1f} s (in it "
                + ", ".join(f"{k} {v:.1f}" for k, v in row.in_set.items())
                + f" s); set/slowest {row.set_wall / row.slowest:.2f}, runs done/slowest "
                + f"{row.set_runs / row.slowest:.2f}, sum/slowest {row.total / row.slowest:.2f}; "
                + f"CPU alone {row.alone_cpu:.1f} s, set {row.set_cpu:.1f} s; load {row.load:.1f}",
                flush=True,
            )
    finally:
        stop.set()
        for server in servers:
            server.join(10)
    report(rows, list(lanes))


def report(rows: list[Round], names: list[str]) -> None:
    med = statistics.median

    def rounds(values: list[float]) -> str:
        return ", ".join(f"{x:.2f}" for x in values)

    print(f"\nmedians of {len(rows)} rounds (each a process end to end, start-up included):")
    for name in names:
        print(
            f"  {name} alone:                  {med([r.alone[name] for r in rows]):6.1f} s"
            f"  (its run in the set: {med([r.in_set[name] for r in rows]):.1f} s)"
        )
    print(f"  slowest alone:            {med([r.slowest for r in rows]):6.1f} s")
    print(f"  the four one after another: {med([r.total for r in rows]):4.1f} s")
    print(
        f"  the set:                  {med([r.set_wall for r in rows]):6.1f} s, its runs done "
        f"at {med([r.set_runs for r in rows]):.1f} s, then its comparison "
        f"{med([r.set_wall - r.set_runs for r in rows]):.1f} s"
    )
    ratios = [r.set_wall / r.slowest for r in rows]
    verdict = "meets" if med(ratios) <= GOAL else "misses"
    print(
        f"  set / slowest alone:        {med(ratios):5.2f}  (rounds {rounds(ratios)}; "
        f"{verdict} the goal of <= {GOAL})"
    )
    runs = [r.set_runs / r.slowest for r in rows]
    print(f"  set to its last run's end / slowest alone: {med(runs):5.2f}  (rounds {rounds(runs)})")
    sums = [r.total / r.slowest for r in rows]
    print(f"  sum / slowest alone:        {med(sums):5.2f}  (rounds {rounds(sums)})")
    print(
        f"  CPU seconds: the four alone {med([r.alone_cpu for r in rows]):.1f}, the set "
        f"{med([r.set_cpu for r in rows]):.1f}; load average {rounds([r.load for r in rows])}"
    )


if __name__ == "__main__":
    main()
