"""Provenance: what a run folder's config.json says produced its numbers.

The spec (model, data, split, modes, K, attempts, seed, limits), the model's identity
(the response-cache key, never a secret), the pinned data source, the hashes of every
prompt template, the few-shot pools and the environment (``store/environment.py``).
"""

from __future__ import annotations

import sys
import time
from dataclasses import asdict
from typing import Any

from ..data.cases import describe_source
from ..models.base import Model
from ..prompting import template_hashes
from ..prompting.plan import RunPlan
from ..prompting.templates import agent_template_hash
from ..store.config import AGENT_TOOL_MODE_KEY, CASE_ORDER_KEY
from ..store.environment import environment_facts
from ..store.spec import RunSpec
from ..vocabulary.exemplar_choice import DEFAULT_EXEMPLARS
from ..vocabulary.modes import MODES, SETTINGS, VERBAL_MODE, is_agentic


def build_config(
    spec: RunSpec,
    model: Model,
    plan: RunPlan,
    identity: dict[str, Any] | None = None,
    *,
    concurrency: int,
) -> dict[str, Any]:
    """What a run folder's config.json says: everything that produced its numbers.

    Built from the spec (resolved: ``spec.attempts`` set), the model it names and the
    plan made from it; this session's entry says the ``concurrency`` it ran with.  The
    model part holds the spec, the identity (the cache key: model, endpoint and every
    sampling parameter) and never a key: backends read keys from the environment and do
    not put them in ``identity()``.  ``identity``: the
    run's (``models.sampling.RunSampling.identity``), else the model's own.
    """
    if spec.attempts is None:
        raise ValueError("build_config needs a spec whose attempts are resolved")
    if plan.source is None:
        raise ValueError("build_config needs a plan made from a data source")
    facts = environment_facts()
    return {
        "harness": "deonticbench",
        "created": time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime()),
        "model": _model_part(model, identity),
        # Always written: a config.json without it was made before protocols existed
        # (``vocabulary.protocols.recorded_protocol`` reads that as ``harness``).
        "protocol": spec.protocol,
        "split": plan.split,
        "domains": [d.name for d in plan.domains],
        "modes": list(plan.modes),
        "k": dict(plan.k),
        # The split's file order of the planned cases: upstream's bootstrap draws cases in
        # that order, and records are written in the order they finish
        # (scoring.upstream_bootstrap).
        CASE_ORDER_KEY: plan_case_order(plan),
        "attempts": spec.attempts,
        "seed": plan.seed,
        "data": describe_source(plan.source),
        "templates": template_hashes(
            modes=(*MODES, *(m for m in plan.modes if m in SETTINGS or m == VERBAL_MODE))
        ),
        "few_shot_pools": dict(plan.pool_notes),
        **_paper_texts(plan),
        # Only when they differ from the defaults (seeded exemplars, no distractors), so
        # that earlier runs, which lack these keys, keep their fingerprint.
        **({"exemplars": spec.exemplars} if spec.exemplars != DEFAULT_EXEMPLARS else {}),
        **({"distractors": spec.distractors} if spec.distractors is not None else {}),
        **({"settings": dict(plan.setting_notes)} if plan.setting_notes else {}),
        "limits": asdict(spec.limits),
        "environment": facts,
        **_agent_config(spec, model, plan),
        "sessions": [_session(spec, facts, concurrency)],
    }


def _model_part(model: Model, identity: dict[str, Any] | None) -> dict[str, Any]:
    """config.json's ``model``: the spec, the provider and name, the identity (the run's
    when given, else the model's own) and the parameters; never a key."""
    return {
        "spec": model.spec,
        "provider": model.provider,
        "model_name": model.model_name,
        "identity": model.identity() if identity is None else identity,
        "params": model.params.to_dict(),
    }


def _session(spec: RunSpec, facts: dict[str, Any], concurrency: int) -> dict[str, Any]:
    """One entry of config.json's ``sessions``: when this invocation started, at which
    commit, with which case choice and concurrency, from which command line (a resumed
    run's config gets one more)."""
    return {
        "started": time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime()),
        "git_commit": facts.get("git_commit"),
        "limit": spec.case_range,
        "case_ids": list(spec.case_ids) or None,
        "concurrency": concurrency,
        "argv": list(sys.argv),
    }


def plan_case_order(plan: RunPlan) -> dict[str, list[str]]:
    """Per domain, the planned cases' ids in the split's file order (the plan's order)."""
    order: dict[str, dict[str, None]] = {d.name: {} for d in plan.domains}
    for unit in plan.units:
        order.setdefault(unit.domain.name, {})[unit.case.id] = None
    return {domain: list(ids) for domain, ids in order.items()}


def _agent_config(spec: RunSpec, model: Model, plan: RunPlan) -> dict[str, Any]:
    """config.json's ``agent``: only for a run with agentic modes (a prompted run's
    config is as it was), with the tool mode the tools are offered in and the hash of
    the agentic templates."""
    if not any(is_agentic(m) for m in plan.modes):
        return {}
    return {
        "agent": {
            **spec.agent.to_json(),
            AGENT_TOOL_MODE_KEY: model.tool_mode,
            "templates": agent_template_hash(),
        }
    }


def imported_config(spec: RunSpec, provider: str) -> dict[str, Any]:
    """config.json of a run brought in from another tool's log (inspect, Harbor): what the
    spec says, in the runner's layout; the importer adds where the records came from."""
    return {
        "harness": "deonticbench",
        "created": time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime()),
        "model": {"spec": spec.model, "provider": provider, "model_name": spec.model},
        "split": spec.split,
        "domains": list(spec.domains),
        "modes": list(spec.modes),
        "k": {d: spec.k_for(d) for d in spec.domains},
        "attempts": spec.attempts,
        "seed": spec.exemplar_seed,
        "limits": asdict(spec.limits),
        "environment": environment_facts(),
    }


def _paper_texts(plan: RunPlan) -> dict[str, Any]:
    """Under the paper protocol, which upstream files its prompts were read from: the
    pinned commit and the files' combined sha256 (each was verified against the manifest
    before use, so this is the same on every machine).  Absent otherwise."""
    paper = next((u.paper for u in plan.units if u.paper is not None), None)
    if paper is None:
        return {}
    files = paper.files
    return {
        "paper_texts": {
            "commit": files.commit,
            "files": [path for path, _ in files.texts],
            "sha256": files.digest(),
        }
    }
