"""The training reward: both modes, its closed holes, its cache, pool and adapters.

Everything runs the real swipl in the real sandbox pool, on cases of the data mirror.
The trainers' own packages are not installed: their adapters are called exactly as the
trainers call them (verl and OpenRLHF load the adapter *file* under a module name of
their own; TRL passes keyword arguments).
"""

from __future__ import annotations

import asyncio
import functools
import importlib.util
import multiprocessing
import os
import subprocess
from collections.abc import Iterator
from pathlib import Path
from types import ModuleType
from typing import Any

import pytest

from deonticbench.data.cases import Case, load_cases, resolve_source
from deonticbench.data.domains import get_domain
from deonticbench.prompting import demonstration
from deonticbench.reading.programs import extract_program
from deonticbench.rewards import RewardInputError, RewardTarget, score_batch, score_completion
from deonticbench.rewards.core import RewardCache
from deonticbench.rewards.process_pool import process_solver
from deonticbench.solver import Execution, Limits, Solver

pytestmark = pytest.mark.skipif(
    not os.environ.get("DEONTICBENCH_DATA"), reason="needs DEONTICBENCH_DATA (the data mirror)"
)

REWARDS = Path(__file__).resolve().parents[2] / "deonticbench" / "rewards"


@pytest.fixture(scope="module")
def airline() -> list[Case]:
    return load_cases("airline", "hard", resolve_source())[:4]


@pytest.fixture(scope="module")
def sara_numeric() -> list[Case]:
    return load_cases("sara_numeric", "hard", resolve_source())[:2]


def reference_response(case: Case) -> str:
    """A model response holding the case's reference program, as the prompt asks."""
    return (
        f"Here is the program.\n\n```prolog\n{demonstration(get_domain(case.domain), case)}\n```\n"
    )


def _write(path: Path, text: str | None) -> Path:
    path.write_text(text or "")
    return path


def fenced(program: str) -> str:
    return f"```prolog\n{program}\n```"


def prints(line: str) -> str:
    return fenced(f':- format("{line}~n").')


# --- the two modes ---------------------------------------------------------------------


def test_reference_programs_earn_full_reward_in_both_modes(airline: list[Case]) -> None:
    targets = [RewardTarget.from_case(c) for c in airline]
    responses = [reference_response(c) for c in airline]
    for mode in ("paper", "eval"):
        results = score_batch(responses, targets, mode=mode)  # type: ignore[arg-type]
        assert [r.reward for r in results] == [1.0] * len(airline)
        assert all(r.correct and r.executable and r.answer_read for r in results)


def test_paper_mode_wants_the_exact_label_eval_allows_a_dollar(airline: list[Case]) -> None:
    case = airline[0]
    target = RewardTarget.from_case(case)
    gold = int(case.gold)
    expected = {
        # printed answer: (paper, eval)
        f"Total cost: {gold}": (1.0, 1.0),
        f"Total cost: {gold}.00": (1.0, 1.0),
        f"Total cost: {gold + 1}": (0.0, 1.0),
        f"Total cost: {gold - 0.6}": (0.0, 1.0),
        f"Total cost: {gold + 2}": (0.0, 0.0),
    }
    for line, (paper, evaluation) in expected.items():
        assert score_completion(prints(line), target, mode="paper").reward == paper, line
        assert score_completion(prints(line), target, mode="eval").reward == evaluation, line


def test_sara_numeric_reference_printing_cents_is_exact_only_in_eval(
    sara_numeric: list[Case],
) -> None:
    # Upstream's SARA labels are whole dollars while its programs print cents: the
    # paper's exact match gives such a reference program 0, the benchmark's judging 1.
    case = sara_numeric[0]
    paper = score_completion(reference_response(case), RewardTarget.from_case(case), mode="paper")
    evaluation = score_completion(
        reference_response(case), RewardTarget.from_case(case), mode="eval"
    )
    assert isinstance(paper.answer, float) and paper.answer != float(case.gold)
    assert (paper.reward, evaluation.reward) == (0.0, 1.0)
    assert evaluation.outcome == paper.outcome == "correct"


REFERENCE = (
    "fee(bag, 30).\n"
    "total(T) :- fee(bag, F), T is F + 100.\n"
    "main :- total(T), format('Total cost: ~w~n', [T]).\n"
    ":- initialization(main, main).\n"
)


def test_partial_credit_is_a_fifth_of_the_signature_jaccard_for_failed_programs() -> None:
    target = RewardTarget(
        domain="airline", gold=130, case_id="synthetic", reference_program=REFERENCE
    )
    # S(P*) = {fee/2, total/1, main/0}
    assert target.signatures() == {("fee", 2), ("total", 1), ("main", 0)}
    # A runtime error (division by zero), S(P) = {fee/2, cost/1, main/0}: J = 2/4.
    crashing = fenced(
        "fee(bag, 30).\n"
        "cost(T) :- fee(bag, F), T is F / 0.\n"
        "main :- cost(T), format('Total cost: ~w~n', [T]).\n"
        ":- initialization(main, main)."
    )
    result = score_completion(crashing, target)
    assert result.status == "runtime_error" and not result.executable
    assert result.jaccard == 0.5 and result.reward == pytest.approx(0.2 * 0.5)
    # A syntax error: partial credit too, bounded by 0.2.
    broken = fenced(REFERENCE.replace("T is F + 100.", "T is F + ."))
    broken_result = score_completion(broken, target)
    assert broken_result.status == "syntax_error"
    assert 0.0 < broken_result.reward <= 0.2
    assert broken_result.reward == pytest.approx(0.2 * (broken_result.jaccard or 0.0))
    # The same reference structure running to a wrong answer, or timing out: nothing.
    wrong = score_completion(fenced(REFERENCE.replace("+ 100", "+ 1")), target)
    assert (wrong.status, wrong.reward, wrong.jaccard) == ("ok", 0.0, None)
    slow = fenced(REFERENCE.replace("main :- total(T)", "main :- repeat, fail, total(T)"))
    timed_out = score_completion(slow, target, timeout_s=1.0)
    assert (timed_out.status, timed_out.reward) == ("timeout", 0.0)
    # The benchmark's own judging gives no partial credit.
    assert score_completion(crashing, target, mode="eval").reward == 0.0
    assert score_completion(fenced(REFERENCE), target).reward == 1.0


def test_no_program_timeout_and_wrong_answer_earn_nothing(airline: list[Case]) -> None:
    target = RewardTarget.from_case(airline[0])
    nothing = score_completion("I think the total is a lot of money.", target)
    assert (nothing.reward, nothing.status) == (0.0, "no_program")
    loop = score_completion(fenced(":- repeat, fail."), target, timeout_s=1.0)
    assert (loop.reward, loop.status, loop.executable) == (0.0, "timeout", False)
    wrong = score_completion(prints("Total cost: 1"), target)
    assert (wrong.reward, wrong.outcome, wrong.executable) == (0.0, "wrong", True)


@pytest.mark.slow
def test_the_timeout_is_per_call(airline: list[Case]) -> None:
    target = RewardTarget.from_case(airline[0])
    slow = fenced(f':- sleep(2), format("Total cost: {airline[0].gold}~n").')
    assert score_completion(slow, target, timeout_s=1.0).status == "timeout"
    assert score_completion(slow, target, timeout_s=10.0).reward == 1.0


def test_unknown_mode_domain_or_label_is_one_clear_error(airline: list[Case]) -> None:
    target = RewardTarget.from_case(airline[0])
    with pytest.raises(RewardInputError, match="reward mode"):
        score_completion("x", target, mode="lenient")  # type: ignore[arg-type]
    with pytest.raises(RewardInputError, match="unknown domain"):
        RewardTarget.from_fields("chess", "1")
    with pytest.raises(RewardInputError, match="not a JSON object"):
        RewardTarget.from_label("gold=12")
    with pytest.raises(RewardInputError, match="pair up"):
        score_batch(["a", "b"], [target])


# --- reward hacking --------------------------------------------------------------------


def test_only_the_program_answer_line_earns(airline: list[Case]) -> None:
    target = RewardTarget.from_case(airline[0])
    gold = airline[0].gold
    attempts = {
        "answer in prose, program prints nothing useful": (
            f"Total cost: {gold}\n\n" + fenced(':- format("thinking~n").')
        ),
        "a Label: line": prints(f"Label: {gold}"),
        "upstream's Label directive": fenced(f':- format("~w~n", ["Label: {gold}"]).'),
        "the answer on stderr": fenced(f':- format(user_error, "Total cost: {gold}~n", []).'),
        "the answer inside another line": prints(f"Note Total cost: {gold}"),
        "the answer in a comment": fenced(f'% Total cost: {gold}\n:- format("none~n").'),
    }
    for name, response in attempts.items():
        for mode in ("paper", "eval"):
            result = score_completion(response, target, mode=mode)  # type: ignore[arg-type]
            assert result.reward == 0.0, f"{name} earned {result.reward} in {mode} mode"


def test_conflicting_answers_earn_zero(airline: list[Case]) -> None:
    target = RewardTarget.from_case(airline[0])
    gold = int(airline[0].gold)
    shotgun = fenced(
        "\n".join(f':- format("Total cost: {value}~n").' for value in range(gold - 3, gold + 4))
    )
    for mode in ("paper", "eval"):
        result = score_completion(shotgun, target, mode=mode)  # type: ignore[arg-type]
        assert result.reward == 0.0
        assert result.abstain_reason is not None and "conflicting" in result.abstain_reason


def test_a_program_cannot_read_the_label_from_the_environment(airline: list[Case]) -> None:
    case = airline[0]
    os.environ["DEONTICBENCH_LEAKED_GOLD"] = str(case.gold)
    try:
        sneaky = fenced(
            ":- ( getenv('DEONTICBENCH_LEAKED_GOLD', G) -> true ; G = 0 ),"
            ' format("Total cost: ~w~n", [G]).'
        )
        result = score_completion(sneaky, RewardTarget.from_case(case))
    finally:
        del os.environ["DEONTICBENCH_LEAKED_GOLD"]
    assert result.answer == 0.0 and result.reward == 0.0


def test_a_program_cannot_read_the_data_or_the_reference(
    airline: list[Case], tmp_path: Path
) -> None:
    case = airline[0]
    data_file = Path(os.environ["DEONTICBENCH_DATA"]).resolve() / "data/airline/hard.json"
    reference_copy = Path.cwd() / "pyproject.toml"  # any project file
    assert data_file.exists() and reference_copy.exists()
    # Prints the gold only if it can read the files that hold labels and references
    # (the test knows the gold; the question is only whether the files are in reach).
    sneaky = fenced(
        f":- ( catch(read_file_to_string('{data_file}', _, []), _, fail)"
        f" ; catch(read_file_to_string('{reference_copy}', _, []), _, fail) )"
        f' -> format("Total cost: {case.gold}~n") ; format("Total cost: 0~n").'
    )
    result = score_completion(sneaky, RewardTarget.from_case(case))
    assert result.answer == 0.0 and result.reward == 0.0
    # Outside the sandbox the same program does read them: the test can fail.
    loose = subprocess.run(
        ["swipl", "-q", "-f", str(_write(tmp_path / "p.pl", extract_program(sneaky)))],
        stdin=subprocess.DEVNULL,
        capture_output=True,
        text=True,
        timeout=30,
    )
    assert f"Total cost: {case.gold}" in loose.stdout


def test_a_program_cannot_see_another_programs_files(airline: list[Case]) -> None:
    case = airline[0]
    target = RewardTarget.from_case(case)
    # The writer leaves the gold in its own folder (and in /tmp, if it may); the reader
    # looks for it there, in any sibling job folder and in the whole /tmp tree.
    writer = fenced(
        f":- open('leaked_answer.txt', write, S), format(S, \"{case.gold}\", []), close(S),"
        f" catch((open('/tmp/leaked_answer.txt', write, T), format(T, \"{case.gold}\", []),"
        " close(T)), _, true),"
        ' format("Total cost: 0~n").'
    )
    reader = fenced(
        ":- ( expand_file_name('/tmp/**/leaked_answer.txt', Deep),"
        " expand_file_name('/tmp/*/*/leaked_answer.txt', Jobs),"
        " append([['leaked_answer.txt', '/tmp/leaked_answer.txt'], Deep, Jobs], Candidates),"
        " member(F, Candidates), exists_file(F)"
        ' -> read_file_to_string(F, G, []) ; G = "0" ),'
        ' format("Total cost: ~w~n", [G]).'
    )
    solver = process_solver()
    for _ in range(solver.size + 1):  # reach every worker
        wrote = score_completion(writer, target, mode="eval", cache=RewardCache())
        assert wrote.status == "ok", wrote.abstain_reason  # it could write its own files
    result = score_completion(reader, target)
    assert result.answer == 0.0 and result.reward == 0.0


# --- cache and pool ---------------------------------------------------------------------


class CountingSolver(Solver):
    """The real pool, counting the programs it is asked to run."""

    def __init__(self) -> None:
        super().__init__(workers=2)
        self.runs = 0

    def run(self, program: str, limits: Limits | None = None) -> Execution:
        self.runs += 1
        return super().run(program, limits)


@pytest.fixture
def counting() -> Iterator[CountingSolver]:
    solver = CountingSolver()
    try:
        yield solver
    finally:
        solver.close()


def test_duplicate_programs_run_once(airline: list[Case], counting: CountingSolver) -> None:
    cache = RewardCache()
    target = RewardTarget.from_case(airline[0])
    program = demonstration(get_domain("airline"), airline[0])
    # A GRPO group: the same program five times, twice with different prose around it.
    group = [fenced(program)] * 3 + [f"Sure.\n{fenced(program)}", f"{fenced(program)}\nDone."]
    results = score_batch(group, [target] * 5, solver=counting, cache=cache)
    assert [r.reward for r in results] == [1.0] * 5
    assert counting.runs == 1
    assert sum(r.cached for r in results) == 4
    # Same program, another case: a different key, so it runs again.
    other = RewardTarget.from_case(airline[1])
    score_completion(fenced(program), other, solver=counting, cache=cache)
    assert counting.runs == 2
    # Same program and case under another mode or timeout: its own entry too.
    score_completion(fenced(program), target, mode="eval", solver=counting, cache=cache)
    score_completion(fenced(program), target, timeout_s=5, solver=counting, cache=cache)
    assert counting.runs == 4


def _score_in_child(response: str, label: str, queue: Any) -> None:
    result = score_completion(response, RewardTarget.from_label(label))
    queue.put((os.getpid(), id(process_solver()), result.reward))


def test_the_process_pool_survives_fork(airline: list[Case]) -> None:
    case = airline[0]
    target = RewardTarget.from_case(case)
    before = score_completion(reference_response(case), target, cache=RewardCache())
    parent_pool = process_solver()
    context = multiprocessing.get_context("fork")
    queue = context.Queue()
    label = RewardTarget.from_fields("airline", case.gold, case.id, []).to_label()
    child = context.Process(
        target=_score_in_child, args=(prints(f"Total cost: {case.gold}"), label, queue)
    )
    child.start()
    pid, _, reward = queue.get(timeout=60)
    child.join(60)
    assert child.exitcode == 0 and pid == child.pid and reward == 1.0
    # The child started its own pool and left the parent's alone.
    assert process_solver() is parent_pool
    after = score_completion(reference_response(case), target, cache=RewardCache())
    assert before.reward == after.reward == 1.0


# --- adapters, called as the trainers call them ----------------------------------------


def load_like_a_trainer(file: str, module_name: str) -> ModuleType:
    """What verl (``custom_module``) and OpenRLHF (``reward_func``) do with the file."""
    spec = importlib.util.spec_from_file_location(module_name, REWARDS / file)
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def test_verl_compute_score_and_batch(airline: list[Case]) -> None:
    verl = load_like_a_trainer("verl.py", "custom_module")
    case = airline[0]
    extra_info = {"split": "train", "index": 0, "case_id": case.id, "reference_signatures": []}
    # verl's NaiveRewardManager adds num_turns to extra_info and passes keywords only.
    extra_info["num_turns"] = None
    result = verl.compute_score(
        data_source="deonticbench/airline",
        solution_str=reference_response(case),
        ground_truth=str(case.gold),
        extra_info=extra_info,
    )
    assert result["score"] == 1.0
    keys = set(result)
    assert keys == {
        "score",
        "correct",
        "executable",
        "jaccard",
        "answer_read",
        "within_tolerance",
        "grounded",
    }
    # reward_kwargs from the config arrive through functools.partial, as verl binds them.
    lenient = functools.partial(verl.compute_score, mode="eval", timeout_s=5)
    off_by_one = lenient(
        data_source="deonticbench/airline",
        solution_str=prints(f"Total cost: {int(case.gold) + 1}"),
        ground_truth=str(case.gold),
        extra_info=extra_info,
    )
    assert off_by_one["score"] == 1.0 and off_by_one["correct"] == 1.0
    batch = verl.compute_score_batch(
        data_sources=["deonticbench/airline"] * len(airline) + ["deonticbench/airline"],
        solution_strs=[reference_response(c) for c in airline] + ["no program here"],
        ground_truths=[str(c.gold) for c in airline] + [str(case.gold)],
        # The export writes reference_signatures in every row (the paper reward needs
        # them); a row without them is refused (test_reward_inputs.py).
        extra_infos=[{"case_id": c.id, "reference_signatures": []} for c in airline]
        + [{"case_id": case.id, "reference_signatures": []}],
    )
    assert [r["score"] for r in batch] == [1.0] * len(airline) + [0.0]
    assert all(set(r) == keys for r in batch)  # verl stacks every key across the batch


def trl_kwargs(cases: list[Case], completions: list[Any]) -> dict[str, Any]:
    """What GRPOTrainer passes: prompts, completions, completion_ids, trainer_state and
    every dataset column (here those of the trl-grpo export) except prompt."""
    return {
        "prompts": [[{"role": "user", "content": f"case {c.id}"}] for c in cases],
        "completions": completions,
        "completion_ids": [[1, 2, 3] for _ in cases],
        "trainer_state": object(),
        "domain": [c.domain for c in cases],
        "case_id": [c.id for c in cases],
        "gold": [str(c.gold) for c in cases],
        "reference_signatures": [[] for _ in cases],
        "label": ["{}" for _ in cases],
    }


def test_trl_reward_functions_sync_and_async(airline: list[Case]) -> None:
    from deonticbench.rewards.trl import (
        deonticbench_reward,
        deonticbench_reward_async,
        make_reward,
    )

    cases = airline[:2]
    conversational = [[{"role": "assistant", "content": reference_response(c)}] for c in cases]
    rewards = deonticbench_reward(**trl_kwargs(cases, conversational))
    assert rewards == [1.0, 1.0] and all(isinstance(r, float) for r in rewards)
    plain = [prints(f"Total cost: {int(c.gold) + 1}") for c in cases]
    assert deonticbench_reward(**trl_kwargs(cases, plain)) == [0.0, 0.0]
    assert make_reward("eval")(**trl_kwargs(cases, plain)) == [1.0, 1.0]
    # TRL runs a reward function as async when asyncio.iscoroutinefunction says so.
    assert asyncio.iscoroutinefunction(deonticbench_reward_async)
    assert asyncio.run(deonticbench_reward_async(**trl_kwargs(cases, conversational))) == [1.0, 1.0]
    assert deonticbench_reward.__name__ == "deonticbench_paper"


def test_openrlhf_reward_func_scores_only_the_response(airline: list[Case]) -> None:
    openrlhf = load_like_a_trainer("openrlhf.py", "reward_func")
    case = airline[0]
    label = RewardTarget.from_fields("airline", case.gold, case.id, []).to_label()
    # A few-shot prompt holds a solved example: it must not be scored as the answer.
    prompt = f"<|user|>Example:\n{prints(f'Total cost: {case.gold}')}\nNow solve.<|assistant|>"
    queries = [prompt + "I cannot solve this.", prompt + reference_response(case)]
    reply = openrlhf.reward_func(queries, [prompt, prompt], [label, label])
    rewards = [float(r) for r in reply["rewards"]]
    assert rewards == [0.0, 1.0]
    assert [float(s) for s in reply["scores"]] == rewards
    assert set(reply["extra_logs"]) == {
        "correct",
        "executable",
        "jaccard",
        "answer_read",
        "within_tolerance",
        "grounded",
    }


def test_the_process_pool_has_two_workers_per_core_unless_told(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """Broken programs sleep in SWI-Prolog's exit: two workers per core overlap it."""
    from deonticbench.rewards import process_pool as pool

    monkeypatch.delenv(pool.WORKERS_ENV, raising=False)
    assert pool._workers() == 2 * (os.cpu_count() or 1)
    monkeypatch.setenv(pool.WORKERS_ENV, "3")
    assert pool._workers() == 3
    monkeypatch.setenv(pool.WORKERS_ENV, "many")
    assert pool._workers() == 2 * (os.cpu_count() or 1)
