"""What the task, its solver step and its scorer share: the harness's plan of a domain x
mode (cases and few-shot exemplars, chosen by ``prompting.plan_run`` exactly as
``deonticbench eval`` chooses them).

The solver step and scorer are registered inspect objects whose arguments go into the
log, so they receive the few task options below (``TaskOptions``) rather than the cases;
each looks its case up in a plan built once per process and options.
"""

from __future__ import annotations

from dataclasses import dataclass
from functools import lru_cache
from typing import Any, cast

from ...data.sources import DataSource, resolve_source
from ...errors import DeonticBenchError
from ...prompting.plan import Unit, plan_run
from ...settings.given import SettingParts
from ...solver import Limits
from ...store.spec import RunSpec
from ...vocabulary.modes import Mode

INSPECT_MODEL = "inspect"
"""The model of a task's RunSpec: inspect chooses it (``--model``) after the task is made."""


@dataclass(frozen=True)
class TaskOptions:
    """One task's choice of cases and prompts: enough to rebuild its plan anywhere."""

    domain: str
    split: str
    mode: str
    exemplar_seed: int
    data_dir: str | None
    hub: bool
    revision: str | None
    protocol: str | None = None
    """``paper`` or ``harness`` (``vocabulary.protocols``); None: eval's default."""

    def spec(
        self, *, attempts: int = 1, timeout: float = Limits.timeout_s, k: int | None = None
    ) -> RunSpec:
        """The run these options describe, checked as ``deonticbench eval`` checks its
        flags (unknown domain, split or mode, attempts or K below 1: one sentence)."""
        return RunSpec(
            model=INSPECT_MODEL,
            domains=(self.domain,),
            split=self.split,
            # RunSpec checks the mode names (one sentence for an unknown one).
            modes=cast("tuple[Mode, ...]", (self.mode,)),
            k=k,
            attempts=attempts,
            exemplar_seed=self.exemplar_seed,
            limits=Limits(timeout_s=float(timeout)),
            data=resolve_source(self.data_dir, hub=self.hub, revision=self.revision),
            # RunSpec checks the name (one sentence for an unknown one).
            **({"protocol": self.protocol} if self.protocol is not None else {}),  # type: ignore[arg-type]
        )


@dataclass(frozen=True)
class Plan:
    units: tuple[Unit, ...]
    source: DataSource
    """Pinned: the hub commit the cases were read at, or the local folder."""
    pool_note: str | None

    def unit(self, case_id: str | int) -> Unit:
        for unit in self.units:
            if unit.case.id == str(case_id):
                return unit
        raise DeonticBenchError(f"sample {case_id!r} is not a case of this task's split.")


@lru_cache(maxsize=32)
def plan_for(options: TaskOptions) -> Plan:
    """The harness's plan of one domain x mode: its cases in the published order and,
    for few-shot and the settings, the exemplars ``plan_run`` chooses for each (seeded by
    ``exemplar_seed``); for a setting, each case's shown part (a case it leaves out is no
    sample)."""
    spec = options.spec()
    assert spec.data is not None
    plan = plan_run(
        spec.domain_specs,
        split=spec.split,
        modes=spec.modes,
        source=spec.data,
        seed=spec.exemplar_seed,
        # rules-given and facts-given: the shown parts, split in the sandbox as eval does
        given_parts=SettingParts(spec.limits),
        protocol=spec.protocol,
    )
    assert plan.source is not None
    (domain,) = spec.domain_specs
    return Plan(tuple(plan.units), plan.source, plan.pool_notes.get(domain.name))


def option_args(options: TaskOptions) -> dict[str, Any]:
    """The options as keyword arguments of the registered solver step and scorer."""
    return {
        "domain": options.domain,
        "split": options.split,
        "mode": options.mode,
        "exemplar_seed": options.exemplar_seed,
        "data_dir": options.data_dir,
        "hub": options.hub,
        "revision": options.revision,
        "protocol": options.protocol,
    }
