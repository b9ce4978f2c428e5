"""Scoring benchmark: the vectorised bootstrap versus per-replicate Python loops.

Synthetic outcomes the size of Housing's whole split (5,314 cases x K=3 samples, 15%
abstentions), B=1000 replicates, for a numeric metric (accuracy) and a binary one
(macro-F1).  Three implementations of paper B.3 run side by side, interleaved over
rounds so machine noise hits all alike:

* vectorised: ``deonticbench.scoring.metrics.bootstrap_replicates`` (all replicates' confusion
  matrices with array operations);
* python loop: the straightforward reading of B.3, a Python loop over replicates and,
  inside it, over the drawn cases;
* numpy loop: a Python loop over replicates only, numpy inside each replicate (the
  strongest loop one would write by hand).

Goal: vectorised >= 20x faster than the python loop.

Then upstream's bootstrap (results.json's ``upstream_bootstrap``, drawn in every scored
run, 1,000 replicates per domain and mode) on a hard-split cell (80 cases x K=3):
upstream's own ``bootstrap_accuracy``, read from the mirror's ``bootstrap_outputs.py``
(one ``rng.integers`` call per pick), against
``deonticbench.scoring.upstream_bootstrap.upstream_bootstrap_stats`` (one call per
replicate with an array of bounds); both must give the same figures.  No goal: the row
says what every scored run saves.

Usage: python benchmarks/scoring.py [--rounds N] [--bootstrap B]
"""

from __future__ import annotations

import argparse
import random
import statistics
import sys
import time
from collections.abc import Callable
from pathlib import Path

import numpy as np
from numpy.typing import NDArray

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT / "tests" / "support"))

# Upstream's bootstrap_outputs.py from the mirror (DEONTICBENCH_DATA), imported by path.
from upstream_reading import BOOTSTRAP, bootstrap_module  # noqa: E402

from deonticbench.reading.outcomes import Outcome  # noqa: E402
from deonticbench.scoring.metrics import (  # noqa: E402
    NEGATIVE,
    POSITIVE,
    Outcomes,
    bootstrap_replicates,
)
from deonticbench.scoring.upstream_bootstrap import upstream_bootstrap_stats  # noqa: E402

N_CASES, K = 5314, 3


def synthetic(kind: str, seed: int) -> Outcomes:
    rng = np.random.default_rng(seed)
    pred: NDArray[np.float64]
    if kind == "numeric":
        gold = rng.integers(0, 5000, N_CASES).astype(float)
        pred = gold[:, None] + rng.choice([0.0, 0.6, 1.0, 3.0, 80.0], size=(N_CASES, K))
    else:
        gold = rng.integers(0, 2, N_CASES).astype(float)
        pred = rng.integers(0, 2, (N_CASES, K)).astype(float)
    return Outcomes(
        kind=kind,  # type: ignore[arg-type]
        case_ids=tuple(f"c{i}" for i in range(N_CASES)),
        gold=gold,
        pred=pred,
        abstain=rng.random((N_CASES, K)) < 0.15,
        present=np.full(N_CASES, K, dtype=np.intp),
    )


def python_loop(o: Outcomes, b: int, rng: np.random.Generator) -> list[float]:
    """B.3 as one would first write it: for each replicate, for each drawn case."""
    gold = o.gold.tolist()
    pred = o.pred.tolist()
    abstain = o.abstain.tolist()
    present = o.present.tolist()
    n = o.n_cases
    out = []
    for _ in range(b):
        cases = rng.integers(0, n, n).tolist()
        us = rng.random(n).tolist()
        if o.kind == "numeric":
            hits = 0
            for c, u in zip(cases, us, strict=True):
                j = int(u * present[c])
                hits += (not abstain[c][j]) and abs(round(pred[c][j]) - int(gold[c])) <= 1
            out.append(hits / n)
            continue
        tp = fp = fn = tn = 0
        for c, u in zip(cases, us, strict=True):
            j = int(u * present[c])
            g = gold[c] == POSITIVE
            p = (not g) if abstain[c][j] else pred[c][j] == POSITIVE
            tp += g and p
            fn += g and not p
            fp += (not g) and p
            tn += (not g) and not p
        f1_pos = 2 * tp / (2 * tp + fp + fn) if 2 * tp + fp + fn else 0.0
        f1_neg = 2 * tn / (2 * tn + fn + fp) if 2 * tn + fn + fp else 0.0
        out.append((f1_pos + f1_neg) / 2)
    return out


def numpy_loop(o: Outcomes, b: int, rng: np.random.Generator) -> list[float]:
    """A loop over replicates with numpy inside each one."""
    n = o.n_cases
    gold_pos = o.gold == POSITIVE
    out = []
    for _ in range(b):
        cases = rng.integers(0, n, n)
        cols = (rng.random(n) * o.present[cases]).astype(np.intp)
        pred = o.pred[cases, cols]
        abst = o.abstain[cases, cols]
        if o.kind == "numeric":
            ok = ~abst & (np.abs(np.round(pred) - o.gold[cases]) <= 1)
            out.append(float(ok.mean()))
            continue
        g = gold_pos[cases]
        p = np.where(abst, ~g, pred == POSITIVE)
        tp, fp = np.sum(g & p), np.sum(~g & p)
        fn, tn = np.sum(g & ~p), np.sum(~g & ~p)
        f1_pos = 2 * tp / (2 * tp + fp + fn) if 2 * tp + fp + fn else 0.0
        f1_neg = 2 * tn / (2 * tn + fn + fp) if 2 * tn + fn + fp else 0.0
        out.append(float((f1_pos + f1_neg) / 2))
    return out


def vectorised(o: Outcomes, b: int, rng: np.random.Generator) -> NDArray[np.float64]:
    return bootstrap_replicates(o, b, rng)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--rounds", type=int, default=3)
    parser.add_argument("--bootstrap", type=int, default=1000)
    args = parser.parse_args()
    impls: dict[str, Callable[[Outcomes, int, np.random.Generator], object]] = {
        "vectorised": vectorised,
        "numpy loop": numpy_loop,
        "python loop": python_loop,
    }
    assert NEGATIVE != POSITIVE
    print(f"{N_CASES} cases x K={K}, B={args.bootstrap}, {args.rounds} interleaved rounds")
    for kind in ("numeric", "binary"):
        o = synthetic(kind, seed=1)
        times: dict[str, list[float]] = {name: [] for name in impls}
        means: dict[str, float] = {}
        for r in range(args.rounds):
            for name, impl in impls.items():
                # The fast ones are timed several times per round (best of all rounds is
                # reported for every implementation), the python loop once per round.
                for _ in range(1 if name == "python loop" else 5):
                    start = time.perf_counter()
                    reps = impl(o, args.bootstrap, np.random.default_rng(100 + r))
                    times[name].append(time.perf_counter() - start)
                means[name] = float(np.mean(np.asarray(reps)))
        # Same estimator, different draw order: replicate means agree to sampling error.
        spread = max(means.values()) - min(means.values())
        assert spread < 0.01, f"implementations disagree: {means}"
        best = {name: min(t) for name, t in times.items()}
        metric = "accuracy" if kind == "numeric" else "macro-F1"
        print(f"\n{metric}: replicate means " + ", ".join(f"{k} {v:.4f}" for k, v in means.items()))
        for name, t in times.items():
            print(f"  {name:<12} best {best[name]:8.3f} s   median {statistics.median(t):8.3f} s")
        v = best["vectorised"]
        print(f"  ratio python loop / vectorised: {best['python loop'] / v:6.1f}x  (goal >= 20x)")
        print(f"  ratio numpy loop  / vectorised: {best['numpy loop'] / v:6.1f}x")
    upstream_cell(args.rounds)


def upstream_cell(rounds: int) -> None:
    if not BOOTSTRAP.is_file():
        print("\nupstream's bootstrap: skipped (DEONTICBENCH_DATA has no scripts/)")
        return
    draw = random.Random(7)
    outcomes: tuple[Outcome, ...] = ("correct", "wrong", "abstain")
    cases = [[draw.choice(outcomes) for _ in range(3)] for _ in range(80)]
    # The values upstream's parsers read (airline: a fee; an abstention reads as NaN).
    value = {"correct": 100.0, "wrong": 150.0, "abstain": float("nan")}
    combined = {
        i: {"label": 100, "outcomes": [value[o] for o in samples]}
        for i, samples in enumerate(cases)
    }
    times: dict[str, list[float]] = {"upstream's script": [], "one call per replicate": []}
    for _ in range(rounds):
        start = time.perf_counter()
        theirs = bootstrap_module().bootstrap_accuracy(combined, "airline")
        times["upstream's script"].append(time.perf_counter() - start)
        start = time.perf_counter()
        ours = upstream_bootstrap_stats(cases)
        times["one call per replicate"].append(time.perf_counter() - start)
    assert all(ours[k] == theirs[k] for k in ours), "the figures differ"
    best = {name: min(t) for name, t in times.items()}
    print("\nupstream's bootstrap, one cell of 80 cases x K=3 (the same figures):")
    for name, b in best.items():
        print(f"  {name:<24} best {b:8.4f} s")
    ratio = best["upstream's script"] / best["one call per replicate"]
    print(f"  ratio: {ratio:6.1f}x")


if __name__ == "__main__":
    main()
