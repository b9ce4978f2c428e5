"""What a trainer passes wrong gets one sentence, never a bare ``zip()`` error, a
traceback of ``float()``, or a silent reward of 0; and ``serve-reward`` on a
busy port says so before announcing anything."""

from __future__ import annotations

import os
import socket
import subprocess
import sys

import pytest

from deonticbench.rewards import RewardInputError
from deonticbench.rewards.openrlhf import TIMEOUT_ENV, reward_func
from deonticbench.rewards.trl import deonticbench_reward
from deonticbench.rewards.verl import compute_score, compute_score_batch

PROGRAM = "```prolog\n:- initialization(main).\nmain :- format('Answer: 5~n').\n```"


def test_a_trl_call_without_the_gold_column_names_it() -> None:
    with pytest.raises(RewardInputError) as caught:
        deonticbench_reward(completions=[PROGRAM, PROGRAM], domain=["airline", "airline"])
    message = str(caught.value)
    assert message == (
        "the TRL reward got 2 completions but 0 values of the 'gold' column: the dataset "
        "needs the columns domain and gold, as 'deonticbench export --format trl-grpo' "
        "writes them."
    )
    assert "zip()" not in message


@pytest.mark.parametrize("value", ["abc", "0", "-3", "nan"])
def test_a_bad_reward_timeout_in_the_environment_is_one_sentence(
    monkeypatch: pytest.MonkeyPatch, value: str
) -> None:
    monkeypatch.setenv(TIMEOUT_ENV, value)
    label = '{"domain": "airline", "gold": 5, "case_id": "c"}'
    with pytest.raises(RewardInputError) as caught:
        reward_func([PROGRAM], [""], [label])
    assert str(caught.value) == (
        f"DEONTICBENCH_REWARD_TIMEOUT should be a positive number of seconds, not {value!r}."
    )


def test_verl_without_extra_info_says_what_the_paper_reward_lacks() -> None:
    with pytest.raises(RewardInputError) as caught:
        compute_score("deonticbench/airline", PROGRAM, 5, extra_info=None)
    assert "verl passed no reference_signatures in extra_info for a deonticbench/airline row" in (
        str(caught.value)
    )
    with pytest.raises(RewardInputError, match="no case_constants"):
        compute_score_batch(["deonticbench/airline"], [PROGRAM], [5], None, mode="grounded")


def test_serve_reward_on_a_busy_port_is_one_sentence_and_no_announcement() -> None:
    with socket.socket() as busy:
        busy.bind(("127.0.0.1", 0))
        busy.listen()
        port = busy.getsockname()[1]
        env = {k: v for k, v in os.environ.items() if "API_KEY" not in k}
        done = subprocess.run(
            [sys.executable, "-m", "deonticbench", "serve-reward", "--port", str(port)],
            capture_output=True, text=True, env=env, timeout=60, check=False,
        )  # fmt: skip
    assert done.returncode == 2
    assert done.stderr == (
        f"error: port {port} on 127.0.0.1 is already in use: stop what listens there or "
        "choose another --port.\n"
    )
