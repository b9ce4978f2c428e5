"""The retry rule has one owner (``reading.feedback_retry``), which the runner and re-reading both
follow: a failed request is retried in every mode, a program mode without an answer is
retried, and an answer, right or wrong, never is."""

from __future__ import annotations

import inspect

import pytest

from deonticbench.evaluation import runner
from deonticbench.reading import calls_for_retry
from deonticbench.scoring import rereading
from deonticbench.vocabulary.modes import ALL_MODES, DIRECT_MODES


@pytest.mark.parametrize("mode", ALL_MODES)
def test_the_rule_for_every_mode(mode: str) -> None:
    assert calls_for_retry(mode, failed=True, answered=False)
    assert not calls_for_retry(mode, failed=False, answered=True)
    assert calls_for_retry(mode, failed=False, answered=False) is (mode not in DIRECT_MODES)


def test_the_runner_and_rereading_ask_the_one_rule() -> None:
    # Neither restates the rule: both call it (the gold label plays no part in it).
    for module in (runner, rereading):
        source = inspect.getsource(module)
        assert "calls_for_retry(" in source
        assert "DIRECT_MODES and attempt.answer is None" not in source
