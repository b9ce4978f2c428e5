"""Reward benchmark: one GRPO step's batch through the reward, against a plain swipl loop.

The batch is the paper's GRPO step (B.5.2, Table 6): 128 prompts x G=5 = 640
completions, drawn from the mirror's cases: per prompt the reference program, the same
program again (GRPO samples duplicates), the same program with prose around it, a broken
copy (a syntax error, which earns partial credit and so a static analysis), and a program
printing a wrong answer.  Measured in the same run, interleaved:

* plain loop: every program of the batch written to a file and run with
  ``swipl -q -f program.pl`` one after another, no sandbox, no answer reading;
* reward: ``deonticbench.rewards.score_batch`` in paper mode (extraction, sandboxed
  execution, answer reading, Jaccard for failed programs), pool start-up included,
  empty cache at the start of each round; then eval mode, and grounded mode (the proof
  of every correct answer read by the analyser, its derivation decided): goal, grounded
  at least half of paper mode's completions per second;
* Ray: the same batch as 8 Ray tasks calling verl's ``compute_score_batch`` on a local
  2-CPU cluster (cluster start-up excluded, each worker's pool start-up included).

Then every reference program of the hard and whole splits under eval and grounded: how
many per domain are correct yet earn 0 under grounded (hard-coded, ungrounded, no proof).

Usage: python benchmarks/rewards.py [--rounds N] [--no-ray] [--no-references]
"""

from __future__ import annotations

import argparse
import os
import statistics
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

from _baseline import plain_loop  # benchmarks/ is sys.path[0] when run as a script

from deonticbench.analysis.compare import CaseVocabulary
from deonticbench.data.cases import Case, load_cases, resolve_source
from deonticbench.data.domains import DOMAINS, get_domain
from deonticbench.prompting import demonstration
from deonticbench.reading.programs import extract_program, prepare_program
from deonticbench.rewards import (
    RewardTarget,
    close_process_solver,
    reward_cache,
    score_batch,
)
from deonticbench.rewards.signatures import clear_signature_cache, signatures_to_rows

PROMPTS = 128
GROUP = 5


def choose_cases() -> list[Case]:
    source = resolve_source()
    per_domain: list[list[Case]] = []
    for domain in DOMAINS.values():
        cases = load_cases(domain, "hard", source)
        try:
            cases += load_cases(domain, "whole", source)
        except Exception:  # housing's whole split is hub-only
            pass
        per_domain.append(cases)
    chosen: list[Case] = []
    index = 0
    while len(chosen) < PROMPTS:  # round-robin over the domains
        for cases in per_domain:
            if index < len(cases) and len(chosen) < PROMPTS:
                chosen.append(cases[index])
        index += 1
    return chosen


def wrong_answer(case: Case) -> str:
    domain = get_domain(case.domain)
    if domain.label_kind == "numeric":
        line = domain.answer_line.replace("<amount>", str(int(case.gold) + 1000))
    else:
        other = domain.negative if case.gold == domain.positive else domain.positive
        line = domain.answer_line.split(" | ")[0].replace(domain.positive, other)
    return f'```prolog\n:- format("{line}~n").\n```'


def batch(cases: list[Case]) -> tuple[list[str], list[RewardTarget]]:
    texts: list[str] = []
    targets: list[RewardTarget] = []
    for case in cases:
        domain = get_domain(case.domain)
        program = demonstration(domain, case)
        reference = f"```prolog\n{program}\n```"
        broken = f"```prolog\n{program.replace(':-', ':- (', 1)}\n```"
        group = [
            reference,
            reference,
            f"Let me write the program.\n\n{reference}\n\nThis prints the answer.",
            broken,
            wrong_answer(case),
        ]
        assert len(group) == GROUP
        target = RewardTarget.from_case(case)
        # The export carries the reference signatures; compute them once, as it does.
        target = RewardTarget.from_fields(
            case.domain,
            case.gold,
            case.id,
            signatures_to_rows(target.signatures()),
            CaseVocabulary.of(case).to_json(),
        )
        texts += group
        targets += [target] * GROUP
    return texts, targets


def write_programs(texts: list[str], targets: list[RewardTarget], folder: Path) -> list[Path]:
    paths = []
    for number, (text, target) in enumerate(zip(texts, targets, strict=True)):
        program = extract_program(text)
        if program is None:
            continue
        path = folder / f"p{number}.pl"
        path.write_text(prepare_program(get_domain(target.domain), program).text)
        paths.append(path)
    return paths


def reward_run(
    texts: list[str], targets: list[RewardTarget], mode: str = "paper"
) -> tuple[float, list[float]]:
    close_process_solver()
    reward_cache().clear()
    clear_signature_cache()
    started = time.perf_counter()
    results = score_batch(texts, targets, mode=mode)  # type: ignore[arg-type]
    elapsed = time.perf_counter() - started
    return elapsed, [r.reward for r in results]


def ray_run(
    texts: list[str], targets: list[RewardTarget], chunks: int = 8
) -> tuple[list[float], float]:
    import ray

    session = tempfile.mkdtemp(prefix="dbr")
    started = time.perf_counter()
    ray.init(
        num_cpus=2,
        include_dashboard=False,
        _node_ip_address="127.0.0.1",
        _temp_dir=session,
        log_to_driver=False,
        configure_logging=False,
        runtime_env={"env_vars": {"DEONTICBENCH_REWARD_WORKERS": "1"}},
    )
    startup = time.perf_counter() - started
    try:

        @ray.remote
        def scored(rows: list[dict[str, Any]]) -> list[float]:
            from deonticbench.rewards import reward_cache
            from deonticbench.rewards.signatures import clear_signature_cache
            from deonticbench.rewards.verl import compute_score_batch

            # Every task starts cold, like the local rounds (a chunk holds whole groups,
            # so no duplicate is shared across tasks anyway).
            reward_cache().clear()
            clear_signature_cache()

            return [
                r["score"]
                for r in compute_score_batch(
                    data_sources=[r["data_source"] for r in rows],
                    solution_strs=[r["solution_str"] for r in rows],
                    ground_truths=[r["ground_truth"] for r in rows],
                    extra_infos=[r["extra_info"] for r in rows],
                )
            ]

        rows = [
            {
                "data_source": f"deonticbench/{t.domain}",
                "solution_str": text,
                "ground_truth": str(t.gold),
                "extra_info": {
                    "case_id": t.case_id,
                    "reference_signatures": signatures_to_rows(t.signatures()),
                },
            }
            for text, t in zip(texts, targets, strict=True)
        ]
        size = -(-len(rows) // chunks)
        rounds: list[float] = []
        for _ in range(2):  # the first also starts the worker processes and their pools
            started = time.perf_counter()
            ray.get([scored.remote(rows[i : i + size]) for i in range(0, len(rows), size)])
            rounds.append(time.perf_counter() - started)
        return rounds, startup
    finally:
        ray.shutdown()
        import shutil

        shutil.rmtree(session, ignore_errors=True)


def references_not_grounded() -> None:
    """Every reference program of hard and whole, per domain: correct under eval, and of
    those how many earn 0 under grounded, by derivation."""
    source = resolve_source()
    for domain in DOMAINS.values():
        for split in ("hard", "whole"):
            try:
                cases = load_cases(domain, split, source)
            except Exception:  # housing's whole split is hub-only
                continue
            texts = [f"```prolog\n{demonstration(domain, c)}\n```" for c in cases]
            targets = [RewardTarget.from_case(c) for c in cases]
            evals = score_batch(texts, targets, mode="eval")
            grounded = score_batch(texts, targets, mode="grounded")
            correct = [g for e, g in zip(evals, grounded, strict=True) if e.reward == 1.0]
            zero = [g for g in correct if g.reward == 0.0]
            kinds: dict[str, int] = {}
            for g in zero:
                kinds[str(g.derivation)] = kinds.get(str(g.derivation), 0) + 1
            print(
                f"references {domain.name} {split}: {len(cases)} programs, {len(correct)} "
                f"correct, {len(zero)} of them earn 0 under grounded {kinds}",
                flush=True,
            )


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--rounds", type=int, default=3)
    parser.add_argument("--no-ray", action="store_true")
    parser.add_argument("--no-references", action="store_true")
    args = parser.parse_args()
    if not os.environ.get("DEONTICBENCH_DATA"):
        sys.exit("set DEONTICBENCH_DATA to the data folder (make bench does)")
    cases = choose_cases()
    texts, targets = batch(cases)
    print(f"batch: {len(cases)} prompts x G={GROUP} = {len(texts)} completions")
    with tempfile.TemporaryDirectory() as tmp:
        paths = write_programs(texts, targets, Path(tmp))
        loops: list[float] = []
        rewards: list[float] = []
        evals: list[float] = []
        grounded: list[float] = []
        distribution: list[float] = []
        for round_no in range(1, args.rounds + 1):
            loops.append(plain_loop(paths))
            seconds, distribution = reward_run(texts, targets, "paper")
            rewards.append(seconds)
            evals.append(reward_run(texts, targets, "eval")[0])
            grounded.append(reward_run(texts, targets, "grounded")[0])
            print(
                f"round {round_no}: plain loop {loops[-1]:.2f} s ({len(paths)} programs), "
                f"reward paper {rewards[-1]:.2f} s, eval {evals[-1]:.2f} s, grounded "
                f"{grounded[-1]:.2f} s ({len(texts)} completions); ratios "
                f"{rewards[-1] / loops[-1]:.2f}, {evals[-1] / loops[-1]:.2f}, "
                f"{grounded[-1] / loops[-1]:.2f}; grounded/paper throughput "
                f"{rewards[-1] / grounded[-1]:.2f}",
                flush=True,
            )
        started = time.perf_counter()
        score_batch(texts, targets, mode="grounded")  # the mode of the last round: cached
        repeat_s = time.perf_counter() - started
    loop_s = statistics.median(loops)
    reward_s, eval_s = statistics.median(rewards), statistics.median(evals)
    shares = {value: distribution.count(value) for value in (1.0, 0.0)}
    partial = len(distribution) - sum(shares.values())
    print(f"paper rewards: 1 x{shares[1.0]}, 0 x{shares[0.0]}, partial (0, 0.2] x{partial}")
    print(f"median plain loop: {len(paths) / loop_s:.1f} programs/s")
    print(
        f"median reward, paper mode (Jaccard analysis for failed programs): "
        f"{len(texts) / reward_s:.1f} completions/s, time ratio to the loop {reward_s / loop_s:.2f}"
    )
    print(
        f"median reward, eval mode (execution only): {len(texts) / eval_s:.1f} completions/s, "
        f"time ratio to the loop {eval_s / loop_s:.2f}"
    )
    grounded_s = statistics.median(grounded)
    print(
        f"median reward, grounded mode (proof of each correct answer): "
        f"{len(texts) / grounded_s:.1f} completions/s, time ratio to the loop "
        f"{grounded_s / loop_s:.2f}; throughput {reward_s / grounded_s:.2f} of paper mode's "
        "(goal >= 0.5)"
    )
    print(f"the same batch again from the cache: {repeat_s:.3f} s")
    if not args.no_references:
        references_not_grounded()
    close_process_solver()
    if not args.no_ray:
        (cold, warm), startup = ray_run(texts, targets)
        print(
            f"ray (8 tasks, 2 CPUs, paper mode, cluster start-up {startup:.1f} s not counted): "
            f"first batch {cold:.2f} s ({len(texts) / cold:.1f} completions/s, workers and "
            f"pools starting), next batch {warm:.2f} s ({len(texts) / warm:.1f} completions/s); "
            f"time ratio to the loop {cold / loop_s:.2f} and {warm / loop_s:.2f}"
        )


if __name__ == "__main__":
    main()
