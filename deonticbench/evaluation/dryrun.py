"""The dry run: what a run would send (requests and prompt tokens) before anything is
spent, batched exactly as the runner batches (``runner.split_requests``)."""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path

from ..agents.loop import TrialSetup, conversation_hash, first_messages
from ..agents.scripted import as_agent
from ..agents.tool_table import tool_specs
from ..models.base import Model
from ..prompting import Prompt
from ..prompting.chat import Message
from ..prompting.modes import is_agentic
from ..prompting.plan import RunPlan, Unit
from ..store.record import Record, RecordKey
from ..store.spec import DEFAULT_ATTEMPTS, AgentOptions
from .cache import CachedResponse, ResponseCache, cache_key
from .runner import split_requests


@dataclass
class DryRunRow:
    domain: str
    mode: str
    samples: int = 0
    done: int = 0
    cached: int = 0
    requests: int = 0
    prompt_tokens: int = 0


@dataclass
class DryRunEstimate:
    """What a run would send, before anything is spent (``--dry-run``)."""

    rows: list[DryRunRow]
    attempts: int

    @property
    def requests(self) -> int:
        return sum(r.requests for r in self.rows)

    @property
    def prompt_tokens(self) -> int:
        return sum(r.prompt_tokens for r in self.rows)

    @property
    def samples_left(self) -> int:
        return sum(r.samples - r.done for r in self.rows)


def estimate(
    model: Model,
    plan: RunPlan,
    *,
    done: Mapping[RecordKey, Record] | None = None,
    cache: ResponseCache | None = None,
    attempts: int = DEFAULT_ATTEMPTS,
    count_tokens: Callable[[Model, Sequence[Message]], int],
    agent: AgentOptions | None = None,
) -> DryRunEstimate:
    """Count the first-attempt requests and their prompt tokens, exactly as ``Runner``
    would batch them (finished samples and cached responses excluded).  Retries depend
    on how programs fare, so they are only bounded, not counted."""
    finished = done or {}
    use_cache = cache if model.cacheable else None
    identity = model.identity()
    rows: dict[tuple[str, str], DryRunRow] = {}
    for unit in plan.units:
        row = rows.setdefault((unit.domain.name, unit.mode), DryRunRow(unit.domain.name, unit.mode))
        row.samples += unit.k
        pending = [s for s, key in enumerate(unit.sample_keys()) if key not in finished]
        row.done += unit.k - len(pending)
        if not pending:
            continue
        if is_agentic(unit.mode):
            _first_turns(row, unit, pending, model, use_cache, agent, count_tokens)
            continue
        prompt = unit.render()

        def cached(s: int, prompt: Prompt = prompt) -> CachedResponse | None:
            if use_cache is None:
                return None
            return use_cache.get(cache_key(identity, prompt.prompt_hash, s, 0))

        hits, batches = split_requests(pending, cached)
        row.cached += len(hits)
        if batches:
            row.requests += len(batches)
            row.prompt_tokens += len(batches) * count_tokens(model, prompt.messages)
    return DryRunEstimate(list(rows.values()), attempts)


def _first_turns(
    row: DryRunRow,
    unit: Unit,
    pending: list[int],
    model: Model,
    cache: ResponseCache | None,
    agent: AgentOptions | None,
    count_tokens: Callable[[Model, Sequence[Message]], int],
) -> None:
    """An agentic unit: the first turn of each pending trial (one request each; how
    many turns follow depends on the model, so they are not counted)."""
    options = agent or AgentOptions()
    native = as_agent(model).native_tools
    setup = TrialSetup(unit.domain, unit.case, unit.mode, 0, options.tool_set, native,
                       Path("."), model.spec, unit.exemplars)  # fmt: skip
    messages = first_messages(setup)
    tools = tool_specs(options.tool_set) if native else ()
    identity = model.identity()
    for sample in pending:
        key = cache_key(identity, conversation_hash(messages, tools), sample, 0)
        if cache is not None and cache.get(key) is not None:
            row.cached += 1
        else:
            row.requests += 1
            row.prompt_tokens += count_tokens(model, messages)
