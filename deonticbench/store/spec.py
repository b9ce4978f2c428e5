"""What a run is: one frozen, typed ``RunSpec``.

A spec names the model (and its parameter overrides), the data, the domains, split and
modes, K, the attempts per sample, the few-shot exemplar seed, the cases taken and the
sandbox limits: everything that decides what a run does.  Everything about a run is built
from it: the runner's and the solver's settings, the run folder's config.json
(``provenance.build_config``), and, read back with ``RunSpec.from_config``, what scoring
knows about a run.

``to_json``/``from_json`` carry a spec between processes and programs (a notebook, an
inspect_ai task, a training loop) and say which ``SPEC_SCHEMA`` they speak.

config.json keeps the keys it has always had (``seed``, and ``limit`` in its sessions)
where the fields are now ``exemplar_seed`` and ``case_range``: its fingerprint decides
whether a folder resumes, so a folder written before the fields were renamed resumes and
reads unchanged, and the same run writes the same bytes (``CONFIG_KEYS``).
"""

from __future__ import annotations

import dataclasses
from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, cast

from ..data.domains import DAR_DOMAINS, Domain, default_domains, get_domain
from ..data.selection import CaseLimit
from ..data.sources import HUB_REPO, SPLITS, DataSource
from ..errors import ConfigError
from ..solver.execution import Limits
from ..vocabulary.exemplar_choice import (
    DEFAULT_EXEMPLARS,
    EXEMPLAR_CHOICES,
    ExemplarChoice,
    current_exemplar_choice,
)
from ..vocabulary.modes import VERBAL_MODE, Mode, is_agentic, parse_modes
from ..vocabulary.protocols import (
    DAR_PROTOCOL,
    DEFAULT_PROTOCOL,
    ProtocolName,
    check_protocol,
    default_modes,
    recorded_protocol,
)

SPEC_SCHEMA = 1
"""Bumped whenever a field of ``RunSpec.to_json`` changes meaning."""
DEFAULT_ATTEMPTS = 2
"""The first attempt and one retry with feedback."""

KPerDomain = tuple[tuple[str, int], ...]
AGENT_TOOL_SETS = ("prolog", "shell")
"""``--agent-tools``: the tools of the agentic modes (docs/agents.md).  ``agents.tool_table``
holds their entries; a test keeps its harness sets equal to these names."""


@dataclass(frozen=True)
class AgentOptions:
    """How the agentic modes run (docs/agents.md): the tool set and the budgets of a trial.

    The one home of the agent budgets and their defaults: the agent loop takes this very
    object as its budget, and the CLI's options, Harbor's task export (``timeout_sec``)
    and inspect's task parameters read their defaults from its fields
    (``AgentOptions.timeout_s`` is the class's default)."""

    tool_set: str = "prolog"
    max_turns: int = 50
    """Model turns per trial."""
    max_tokens: int | None = None
    """Tokens in+out per trial; None: no limit."""
    timeout_s: float = 600.0
    """Wall clock per trial (DAR's 600 s)."""
    repeat_limit: int | None = 3
    """The same calls with the same observations this many turns in a row are told so
    once, then one more such turn stops the trial (``repeat``); None: no limit."""

    def __post_init__(self) -> None:
        if self.tool_set not in AGENT_TOOL_SETS:
            raise ConfigError(
                f"unknown agent tool set {self.tool_set!r}; choose from "
                f"{', '.join(AGENT_TOOL_SETS)}."
            )
        if not isinstance(self.max_turns, int) or self.max_turns < 1:
            raise ConfigError(f"--agent-max-turns must be at least 1, not {self.max_turns}.")
        if self.max_tokens is not None and (
            not isinstance(self.max_tokens, int) or self.max_tokens < 1
        ):
            raise ConfigError(f"--agent-max-tokens must be at least 1, not {self.max_tokens}.")
        if not isinstance(self.timeout_s, int | float) or self.timeout_s <= 0:
            raise ConfigError(f"--agent-timeout must be positive, not {self.timeout_s}.")
        if self.repeat_limit is not None and (
            not isinstance(self.repeat_limit, int) or self.repeat_limit < 2
        ):
            raise ConfigError(f"the repeat limit must be at least 2, not {self.repeat_limit}.")

    def to_json(self) -> dict[str, Any]:
        obj = dataclasses.asdict(self)
        # Only when not the default, so that runs made before the guard existed (and
        # their config.json, which a resume must match) read the same.
        if self.repeat_limit == AgentOptions.repeat_limit:
            del obj["repeat_limit"]
        return obj

    @classmethod
    def from_json(cls, obj: Any) -> AgentOptions:
        if not isinstance(obj, Mapping):
            raise ConfigError("the agent options must be a JSON object.")
        known = {f.name for f in dataclasses.fields(cls)}
        return cls(**{k: v for k, v in obj.items() if k in known})


CONFIDENCE_SIGNALS = ("verbal", "logprob")
"""The opt-in confidence signals ``eval --confidence`` and ``RunSpec.with_confidence``
take."""
LOGPROB_PARAM = "extra.logprobs"
"""The parameter that asks an OpenAI-wire server for log-probabilities."""


CONFIG_KEYS = {"seed": "exemplar_seed", "limit": "case_range"}
"""config.json's keys whose ``RunSpec`` field has another name (``seed`` at the top,
``limit`` in each session): the file keeps its keys, so its fingerprint and every folder
written before the fields had these names stay as they were."""
OLD_SPEC_KEYS = CONFIG_KEYS
"""The spec JSON's keys of the same fields before they were renamed; ``from_json`` reads
a spec written then."""
RUN_OPTION_KEYS = {"concurrency"}
"""Keys of a spec's JSON written when the spec also said how the run was carried out
(now ``RunOptions``'): ``from_json`` reads such a spec and leaves them out."""
_PROTOCOL_DEFAULT: Any = None
"""``RunSpec.domains`` and ``modes`` left out: the protocol's own (``__post_init__`` puts
them in its place, so a built spec never holds it)."""


@dataclass(frozen=True)
class RunSpec:
    """One evaluation, fully described.  Lists and dicts given to it are frozen.

    ``k`` is samples per case: one number for every domain, a per-domain mapping, or
    None for each domain's default.  ``attempts`` None means the default (2), or, for a
    ``replay:`` model, as many attempts as its file holds.  ``data`` None means
    ``resolve_source()``: ``$DEONTICBENCH_DATA``, else the hub.  ``domains`` and
    ``modes`` left out (or None) are the protocol's, as ``eval`` takes them: every domain
    and the paper's three modes, or under ``dar`` DAR's four domains and the three
    agentic modes (``data.domains.default_domains``, ``vocabulary.protocols.default_modes``).
    """

    model: str
    params: tuple[tuple[str, str], ...] = ()
    """Model parameter overrides, ``key=value`` as on the command line (``--param``)."""
    domains: tuple[str, ...] = _PROTOCOL_DEFAULT
    split: str = "hard"
    modes: tuple[Mode, ...] = _PROTOCOL_DEFAULT
    k: int | KPerDomain | None = None
    attempts: int | None = None
    exemplar_seed: int = 0
    """Chooses the few-shot exemplars (``--exemplar-seed``); config.json keeps the key
    ``seed`` (``CONFIG_KEYS``)."""
    case_range: CaseLimit | None = None
    """Which cases of each domain, by their place in the split (``--limit``): the first
    N, or ``(a, b)``: cases a to b, counted from 1.  Named for the cases it takes, apart
    from ``limits`` (the sandbox's); config.json's sessions keep the key ``limit``."""
    case_ids: tuple[str, ...] = ()
    """Only these cases (``--sample-id``); empty: every case."""
    limits: Limits = field(default_factory=Limits)
    data: DataSource | None = None
    exemplars: ExemplarChoice = DEFAULT_EXEMPLARS
    """How few-shot exemplars are chosen: ``seeded`` (by ``exemplar_seed``) or ``retrieved``.
    An older run's config.json or spec may say ``paper`` for ``seeded``; ``from_config``
    and ``from_json`` read it so."""
    distractors: int | None = None
    """Unrelated statute sections shuffled into each case's statutes (docs/settings.md)."""
    agent: AgentOptions = field(default_factory=AgentOptions)
    """The tool set and budgets of the agentic modes (unused by the paper's modes)."""
    protocol: ProtocolName = DEFAULT_PROTOCOL
    """What the prompted modes' first attempt sends and how every attempt is read
    (``vocabulary.protocols``): ``paper`` (upstream's released scripts) or ``harness``;
    or ``dar``, DAR's framing of the agentic modes."""

    def __post_init__(self) -> None:
        put = object.__setattr__  # frozen: normalise the inputs once, here
        put(self, "params", _pairs(self.params, str))
        if self.domains is not _PROTOCOL_DEFAULT:
            put(self, "domains", _domain_names(self.domains))
        if self.modes is not _PROTOCOL_DEFAULT:
            put(self, "modes", _modes(self.modes))
        if isinstance(self.k, Mapping | list | tuple):
            put(self, "k", _pairs(self.k, int))
        if isinstance(self.case_range, list | tuple):
            put(self, "case_range", _limit_range(self.case_range))
        put(self, "case_ids", tuple(dict.fromkeys(str(c) for c in self.case_ids)))
        if not isinstance(self.agent, AgentOptions):
            put(self, "agent", AgentOptions.from_json(self.agent))
        if not isinstance(self.model, str) or not self.model.strip():
            raise ConfigError("a run needs a model spec, e.g. openai:gpt-4.1 or reference.")
        if self.exemplars not in EXEMPLAR_CHOICES:
            raise ConfigError(
                f"unknown exemplar choice {self.exemplars!r}; choose from "
                f"{', '.join(EXEMPLAR_CHOICES)}."
            )
        # Left out, the protocol's own; put here, after the checks that come first, since
        # ``default_modes`` refuses an unknown protocol as ``_check_protocol`` does next.
        if self.domains is _PROTOCOL_DEFAULT:
            put(self, "domains", default_domains(self.protocol))
        if self.modes is _PROTOCOL_DEFAULT:
            put(self, "modes", default_modes(self.protocol))
        _check_protocol(self)
        if self.distractors is not None and (
            not isinstance(self.distractors, int) or self.distractors < 0
        ):
            raise ConfigError(f"distractors must be 0 or more, not {self.distractors}.")
        if self.split not in SPLITS:
            raise ConfigError(f"unknown split {self.split!r}; choose from {', '.join(SPLITS)}.")
        ks = [v for _, v in self.k] if isinstance(self.k, tuple) else [self.k]
        # Named by their command-line flags: ``eval`` and ``evaluate`` refuse alike.
        for name, value in [
            *(("-k", v) for v in ks),
            ("--attempts", self.attempts),
            ("--limit", self.case_range if not isinstance(self.case_range, tuple) else None),
        ]:
            if value is not None and (not isinstance(value, int) or value < 1):
                raise ConfigError(f"{name} must be at least 1, not {value}.")

    # --- reading it --------------------------------------------------------------

    @property
    def domain_specs(self) -> list[Domain]:
        return [get_domain(name) for name in self.domains]

    @property
    def param_overrides(self) -> dict[str, str]:
        return dict(self.params)

    def k_for(self, domain: str | Domain) -> int:
        """Samples per case of ``domain`` in this run."""
        dom = domain if isinstance(domain, Domain) else get_domain(domain)
        if isinstance(self.k, tuple):
            return dict(self.k).get(dom.name, dom.default_k)
        return self.k if self.k is not None else dom.default_k

    def with_attempts(self, attempts: int) -> RunSpec:
        return dataclasses.replace(self, attempts=attempts)

    def with_confidence(self, *signals: str) -> RunSpec:
        """This spec with opt-in confidence signals (docs/reliability.md): ``verbal`` adds
        the direct-verbal mode (its own template, a last line 'Confidence: NN%');
        ``logprob`` asks for token log-probabilities (the request field ``logprobs:
        true``, part of the response-cache key, so such runs never share cached answers)."""
        unknown = sorted(set(signals) - set(CONFIDENCE_SIGNALS))
        if unknown:
            raise ConfigError(
                f"unknown confidence signal {unknown[0]!r}; choose from "
                f"{', '.join(CONFIDENCE_SIGNALS)}."
            )
        spec = self
        if "verbal" in signals and VERBAL_MODE not in spec.modes:
            spec = dataclasses.replace(spec, modes=(*spec.modes, VERBAL_MODE))
        if "logprob" in signals:
            params = {**dict(spec.params), LOGPROB_PARAM: "true"}
            spec = dataclasses.replace(spec, params=tuple(params.items()))
        return spec

    @property
    def asks_logprobs(self) -> bool:
        """Whether the run asks for token log-probabilities (``with_confidence``)."""
        return dict(self.params).get(LOGPROB_PARAM) == "true"

    # --- carrying it -------------------------------------------------------------

    def to_json(self) -> dict[str, Any]:
        """A JSON-ready dict that ``from_json`` turns back into an equal spec."""
        return {
            "schema": SPEC_SCHEMA,
            "model": self.model,
            "params": dict(self.params),
            "domains": list(self.domains),
            "split": self.split,
            "modes": list(self.modes),
            "k": dict(self.k) if isinstance(self.k, tuple) else self.k,
            "attempts": self.attempts,
            "exemplar_seed": self.exemplar_seed,
            "case_range": (
                list(self.case_range) if isinstance(self.case_range, tuple) else self.case_range
            ),
            "case_ids": list(self.case_ids),
            "limits": dataclasses.asdict(self.limits),
            "data": _source_json(self.data),
            "exemplars": self.exemplars,
            "distractors": self.distractors,
            "agent": self.agent.to_json(),
            "protocol": self.protocol,
        }

    @classmethod
    def from_json(cls, obj: Mapping[str, Any]) -> RunSpec:
        """Rebuild a spec; a malformed one is a ConfigError naming the field.  A spec
        written before its fields were renamed reads too (``OLD_SPEC_KEYS``)."""
        if not isinstance(obj, Mapping):
            raise ConfigError("a run spec must be a JSON object.")
        if obj.get("schema") != SPEC_SCHEMA:
            raise ConfigError(
                f"run spec schema {obj.get('schema')!r} is not supported (this is {SPEC_SCHEMA})."
            )
        known = {f.name for f in dataclasses.fields(cls)}
        unknown = sorted(set(obj) - known - set(OLD_SPEC_KEYS) - RUN_OPTION_KEYS - {"schema"})
        if unknown:
            raise ConfigError(f"a run spec has no field {unknown[0]!r}.")
        renamed = {OLD_SPEC_KEYS.get(k, k): v for k, v in obj.items()}
        values = {k: v for k, v in renamed.items() if k in known}
        if "exemplars" in values:  # an older spec may say "paper"
            values["exemplars"] = current_exemplar_choice(values["exemplars"])
        try:
            if "limits" in values:
                values["limits"] = Limits(**values["limits"])
            if "data" in values:
                values["data"] = _source_from_json(values["data"])
            if "agent" in values:
                values["agent"] = AgentOptions.from_json(values["agent"])
            return cls(**values)
        except (TypeError, ValueError, KeyError) as exc:
            raise ConfigError(f"a run spec is malformed ({exc}).") from None

    @classmethod
    def from_config(cls, config: Mapping[str, Any], *, strict: bool = True) -> RunSpec:
        """What a run folder's config.json says about its run, typed.

        config.json keeps its own layout (the resolved K per domain, the model's full
        identity, the data's description); this reads back the spec's part of it.
        Raises ConfigError when the config names no model, or (``strict``) when a field
        is malformed; not strict, a malformed field is left at its default (scoring
        reads damaged folders forgivingly).
        """
        model = config.get("model")
        if isinstance(model, Mapping):
            model = model.get("spec") or model.get("model_name")
        if not isinstance(model, str) or not model:
            raise ConfigError("the run configuration names no model.")
        values: dict[str, Any] = {"model": model}
        values["protocol"] = recorded_protocol(config)
        for key in ("split", "attempts", "seed", "exemplars", "distractors"):
            if config.get(key) is not None:
                values[CONFIG_KEYS.get(key, key)] = config[key]
        if "exemplars" in values:  # an older run's config.json may say "paper"
            values["exemplars"] = current_exemplar_choice(values["exemplars"])
        for key in ("domains", "modes"):
            if isinstance(config.get(key), list):
                values[key] = tuple(config[key])
        k = config.get("k")
        if isinstance(k, Mapping):
            values["k"] = {str(d): v for d, v in k.items() if isinstance(v, int) and v > 0}
        if isinstance(config.get("limits"), Mapping):
            values["limits"] = Limits(**config["limits"])
        sessions = config.get("sessions")
        if isinstance(sessions, list) and sessions and isinstance(sessions[-1], Mapping):
            last = sessions[-1]
            if isinstance(last.get("limit"), int | list):
                values[CONFIG_KEYS["limit"]] = last["limit"]
            if isinstance(last.get("case_ids"), list):
                values["case_ids"] = tuple(last["case_ids"])
        if isinstance(config.get("agent"), Mapping):
            values["agent"] = AgentOptions.from_json(config["agent"])
        data = config.get("data")
        if isinstance(data, Mapping) and data.get("kind") in ("local", "hub"):
            values["data"] = _source_from_json(data)
        try:
            return cls(**values)
        except (TypeError, ValueError, ConfigError) as exc:
            if strict:
                raise ConfigError(f"the run configuration is malformed ({exc}).") from None
        kept: dict[str, Any] = {"model": model}
        for key, value in values.items():
            try:
                cls(model=model, **{key: value})
            except (TypeError, ValueError, ConfigError):
                continue
            kept[key] = value
        return cls(**kept)


def parse_params(items: Iterable[str]) -> tuple[tuple[str, str], ...]:
    """``key=value`` strings (``--param``) as a spec's ``params``; one sentence for an
    item that is not one."""
    out: dict[str, str] = {}
    for item in items:
        key, sep, value = item.partition("=")
        if not sep or not key.strip():
            raise ConfigError(f"--param takes key=value, not {item!r}.")
        out[key.strip()] = value.strip()
    return tuple(out.items())


def _limit_range(value: Iterable[Any]) -> tuple[int, int]:
    items = list(value)
    if (
        len(items) != 2
        or not all(isinstance(i, int) and not isinstance(i, bool) for i in items)
        or not 1 <= items[0] <= items[1]
    ):
        raise ConfigError(f"a limit range is (first, last) counted from 1, not {items!r}.")
    return items[0], items[1]


def _pairs(value: object, kind: type) -> tuple[tuple[str, Any], ...]:
    items = value.items() if isinstance(value, Mapping) else cast(Iterable[Any], value)
    out = []
    for item in items:
        key, val = item
        out.append((str(key), val if kind is int else str(val)))
    return tuple(out)


def _check_protocol(spec: RunSpec) -> None:
    """The spec's protocol is one there is; under ``dar``, see ``_check_dar_run``."""
    if check_protocol(spec.protocol) == DAR_PROTOCOL:
        _check_dar_run(spec)


def _check_dar_run(spec: RunSpec) -> None:
    """What ``--protocol dar`` refuses, in one sentence, before anything runs: a mode
    DAR never ran (its adapters are agentic tasks only), a domain not in DAR's task set
    (housing), and distractors (DAR's statute.txt is DAR's, as its adapter writes it)."""
    prompted = [m for m in spec.modes if not is_agentic(m)]
    if prompted:
        raise ConfigError(
            f"--protocol dar runs the agentic modes only (agent-direct, agent-zero-shot, "
            f"agent-few-shot), not {', '.join(prompted)}: run those under --protocol paper "
            "or harness."
        )
    outside = [d for d in spec.domains if d not in DAR_DOMAINS]
    if outside:
        kept = [d for d in spec.domains if d in DAR_DOMAINS] or list(DAR_DOMAINS)
        raise ConfigError(
            f"{', '.join(outside)} is not in DAR's task set, so --protocol dar refuses it: "
            f"pass --domains {','.join(kept)} (or run it under --protocol harness)."
        )
    if spec.distractors is not None:
        raise ConfigError(
            "--protocol dar shows DAR's statute.txt as DAR's adapter writes it, so it takes "
            "no --distractors."
        )


def _domain_names(domains: Iterable[str | Domain] | str) -> tuple[str, ...]:
    if isinstance(domains, str):
        domains = [d for d in domains.split(",") if d.strip()]
    names = [d.name if isinstance(d, Domain) else get_domain(d).name for d in domains]
    if not names:
        raise ConfigError("a run needs at least one domain.")
    return tuple(dict.fromkeys(names))  # each once, in the order given


def _modes(modes: Iterable[str] | str) -> tuple[Mode, ...]:
    return parse_modes(modes)


def _source_json(source: DataSource | None) -> dict[str, Any] | None:
    if source is None:
        return None
    if source.kind == "local":
        return {"kind": "local", "path": str(source.path)}
    return {"kind": "hub", "repo": source.repo, "revision": source.revision}


def _source_from_json(obj: Any) -> DataSource | None:
    if obj is None:
        return None
    if obj.get("kind") == "local":
        return DataSource(kind="local", path=Path(obj["path"]))
    return DataSource(
        kind="hub",
        repo=str(obj.get("repo", HUB_REPO)),
        revision=str(obj.get("revision", "main")),
        commit=obj.get("commit"),
    )
