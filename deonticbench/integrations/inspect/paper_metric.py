"""The paper's metrics over inspect's unreduced scores (one per sample and epoch).

The records carried in the scores' metadata are scored by ``scores.score_run``, the
code behind ``deonticbench score``: accuracy within $1 (numeric domains) or macro-F1 with
abstentions mapped to the class opposite the gold label (binary domains), the bootstrap
over cases and one of each case's K samples (epoch ``e`` is sample ``e - 1``), and the
wrong and abstain rates.  Same records, same seed: the same numbers, bit for bit.
"""

from __future__ import annotations

from pathlib import Path

from inspect_ai.scorer import Metric, SampleScore, Value, metric

from ...scoring.encoding import Stage
from ...scoring.metrics import DEFAULT_BOOTSTRAP
from ...scoring.scores import score_run
from ...store.record import Record
from ...store.run import LoadReport, Run
from .scorer import RECORD_KEY


def records_of(scores: list[SampleScore]) -> list[Record]:
    """The sample records the scorer put in the scores' metadata."""
    records = []
    for sample_score in scores:
        metadata = sample_score.score.metadata or {}
        if RECORD_KEY in metadata:
            records.append(Record.from_json(metadata[RECORD_KEY]))
    return records


@metric(scores="unreduced")
def paper_metric(
    stage: Stage = "first", bootstrap: int = DEFAULT_BOOTSTRAP, seed: int = 0
) -> Metric:
    """The domain's metric (point estimate, bootstrap mean and 95% interval) and the
    wrong and abstain rates, for the first attempt or the final
    one (after retries with feedback); the final stage's names start with ``final_``."""

    def compute(scores: list[SampleScore]) -> Value:
        records = records_of(scores)
        run = Run(path=Path("inspect"), config={}, records=records, report=LoadReport())
        # score_run reports a final stage only when some sample was retried; without
        # any retry every final attempt is the first, so the first stage is the final.
        wanted = stage if run.has_retries else "first"
        chosen = [g for g in score_run(run, bootstrap, seed).groups if g.stage == wanted]
        if not chosen:
            return {}
        group = chosen[0]
        prefix = "final_" if stage == "final" else ""
        name = group.metric
        return {
            f"{prefix}{name}": group.estimate.point,
            f"{prefix}{name}_mean": group.estimate.mean,
            f"{prefix}{name}_low": group.estimate.low,
            f"{prefix}{name}_high": group.estimate.high,
            f"{prefix}wrong_rate": group.rates.wrong,
            f"{prefix}abstain_rate": group.rates.abstain,
        }

    return compute
