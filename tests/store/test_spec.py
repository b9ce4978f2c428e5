"""RunSpec: one frozen description of a run, from which config.json is built and which
scoring reads back typed."""

from __future__ import annotations

import dataclasses
import json
import os
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest

from deonticbench import RunOptions, api
from deonticbench.data.dar_files import DAR_DIR_ENV
from deonticbench.data.domains import DOMAINS, SARA_NUMERIC
from deonticbench.data.sources import DATA_ENV, DataSource
from deonticbench.errors import ConfigError
from deonticbench.solver import Limits
from deonticbench.store.config import config_mismatch, fingerprint
from deonticbench.store.run import read_run
from deonticbench.store.spec import SPEC_SCHEMA, RunSpec
from deonticbench.vocabulary.modes import MODES

DATA = os.environ.get("DEONTICBENCH_DATA") or str(
    Path(__file__).resolve().parents[3] / "shared" / "deonticbench-data"
)
DAR = Path(__file__).resolve().parents[3] / "shared" / "harbor-deonticbench"


def test_a_spec_is_frozen_and_normalises_what_it_is_given() -> None:
    spec = RunSpec(
        model="reference",
        params={"temperature": "0.5"},  # type: ignore[arg-type]
        domains=["SARA_NUMERIC", "airline", "airline"],  # type: ignore[arg-type]
        modes="zero-shot,direct",  # type: ignore[arg-type]
        k={"airline": 2},  # type: ignore[arg-type]
    )
    assert spec.params == (("temperature", "0.5"),)
    assert spec.domains == ("sara_numeric", "airline")  # canonical names, each once
    assert spec.modes == ("zero-shot", "direct")
    assert spec.k_for("airline") == 2 and spec.k_for("sara_numeric") == SARA_NUMERIC.default_k
    with pytest.raises(dataclasses.FrozenInstanceError):
        spec.split = "whole"  # type: ignore[misc]
    assert RunSpec(model="reference").modes == MODES


@pytest.mark.parametrize(
    ("fields", "message"),
    [
        ({"split": "test"}, "unknown split 'test'"),
        ({"modes": ("sideways",)}, "unknown mode sideways"),
        ({"domains": ("nowhere",)}, "nowhere"),
        ({"k": 0}, "k must be at least 1"),
        ({"attempts": 0}, "attempts must be at least 1"),
        ({"model": " "}, "needs a model spec"),
    ],
)
def test_a_bad_spec_is_one_sentence(fields: dict[str, object], message: str) -> None:
    values: dict[str, object] = {"model": "reference", **fields}
    with pytest.raises(ConfigError, match=message):
        RunSpec(**values)  # type: ignore[arg-type]


def test_to_json_and_from_json_round_trip_through_text() -> None:
    spec = RunSpec(
        model="openai:gpt-4.1",
        params=(("temperature", "0"),),
        domains=("housing",),
        split="smoke",
        modes=("few-shot",),
        k=3,
        attempts=4,
        exemplar_seed=7,
        case_range=2,
        limits=Limits(timeout_s=5.0),
        data=DataSource(kind="hub", revision="v1"),
    )
    text = json.dumps(spec.to_json())
    assert json.loads(text)["schema"] == SPEC_SCHEMA
    assert RunSpec.from_json(json.loads(text)) == spec
    local = RunSpec(model="reference", data=DataSource(kind="local", path=Path("/d")))
    assert RunSpec.from_json(local.to_json()) == local


def test_from_json_refuses_another_schema_and_unknown_fields() -> None:
    obj = RunSpec(model="reference").to_json()
    with pytest.raises(ConfigError, match="schema 99 is not supported"):
        RunSpec.from_json({**obj, "schema": 99})
    with pytest.raises(ConfigError, match="no field 'temprature'"):
        RunSpec.from_json({**obj, "temprature": 1})


@pytest.mark.slow
@pytest.mark.skipif(not Path(DATA, "data").is_dir(), reason="no data mirror")
def test_config_json_is_built_from_the_spec_and_scoring_reads_it_back(tmp_path: Path) -> None:
    out = tmp_path / "run"
    argv = [sys.executable, "-m", "deonticbench", "eval", "--model", "reference"]
    argv += ["--domains", "airline", "--split", "smoke", "--modes", "direct", "-k", "2"]
    argv += ["--limit", "2", "--exemplar-seed", "3", "--concurrency", "5", "--out", str(out)]
    env = {**os.environ, "DEONTICBENCH_DATA": DATA}
    env["DEONTICBENCH_CACHE"] = str(tmp_path / "cache.sqlite")
    done = subprocess.run(argv, env=env, capture_output=True, text=True, timeout=120)
    assert done.returncode == 0, done.stderr
    config = json.loads((out / "config.json").read_text())
    spec = RunSpec.from_config(config)
    assert spec.model == "reference"
    assert (spec.split, spec.domains, spec.modes) == ("smoke", ("airline",), ("direct",))
    assert (spec.k_for("airline"), spec.attempts, spec.exemplar_seed) == (2, 2, 3)
    assert (spec.case_range, spec.limits) == (2, Limits())
    assert config["sessions"][-1]["concurrency"] == 5  # the run's options, not its spec
    assert spec.data == DataSource(kind="local", path=Path(DATA).resolve())
    run = read_run(out)
    assert run.spec == spec and run.planned_k("airline") == 2 and run.model == "reference"


def test_a_config_or_spec_that_says_exemplars_paper_reads_as_seeded() -> None:
    """Older runs spell the seeded choice ``paper`` in config.json and in a spec's JSON;
    both read as ``seeded``.  A spec made now takes only the current names."""
    config = {"model": {"spec": "reference"}, "exemplars": "paper"}
    assert RunSpec.from_config(config).exemplars == "seeded"
    older = {**RunSpec(model="reference", exemplars="seeded").to_json(), "exemplars": "paper"}
    assert RunSpec.from_json(older) == RunSpec(model="reference", exemplars="seeded")
    with pytest.raises(ConfigError, match="unknown exemplar choice 'paper'"):
        RunSpec(model="reference", exemplars="paper")  # type: ignore[arg-type]


def test_the_exemplar_seed_and_the_case_range_have_one_name_each() -> None:
    """The spec takes ``exemplar_seed`` and ``case_range``; the old keywords ``seed`` and
    ``limit`` are no fields of it (the solver's ``limits`` is the only name near it)."""
    names = {f.name for f in dataclasses.fields(RunSpec)}
    assert {"exemplar_seed", "case_range", "limits"} <= names
    assert not {"seed", "limit"} & names
    for old in ("seed", "limit"):
        with pytest.raises(TypeError, match=old):
            RunSpec(model="reference", **{old: 5})  # type: ignore[arg-type]
    spec = RunSpec(model="reference", exemplar_seed=5, case_range=(2, 3))
    assert spec.to_json()["exemplar_seed"] == 5 and spec.to_json()["case_range"] == [2, 3]


def test_a_config_json_and_a_spec_written_before_the_renames_read() -> None:
    """config.json keeps ``seed`` and its sessions' ``limit`` (the fingerprint reads the
    file's keys), and a spec's JSON written before the renames reads too."""
    config = {
        "model": {"spec": "reference"},
        "seed": 4,
        "sessions": [{"limit": 2}, {"limit": [3, 9], "case_ids": None}],
    }
    read = RunSpec.from_config(config)
    assert (read.exemplar_seed, read.case_range) == (4, (3, 9))
    old_json = {**RunSpec(model="reference").to_json(), "seed": 6, "limit": [1, 2]}
    for key in ("exemplar_seed", "case_range"):
        del old_json[key]
    assert RunSpec.from_json(old_json) == RunSpec(
        model="reference", exemplar_seed=6, case_range=(1, 2)
    )


DAR_NAMED: dict[str, Any] = {
    "domains": ("sara_numeric", "sara_binary", "airline", "uscis"),
    "modes": ("agent-direct", "agent-zero-shot", "agent-few-shot"),
}
"""DAR's task set and its three agentic modes, named as a spec names them."""


def test_a_dar_spec_without_modes_or_domains_takes_dars_as_eval_does() -> None:
    default = RunSpec(model="reference", protocol="dar")
    named = RunSpec(model="reference", protocol="dar", **DAR_NAMED)
    assert default == named and default.to_json() == named.to_json()
    # One left out: that one is the protocol's, the other is as named.
    only_modes = RunSpec(model="reference", protocol="dar", modes=("agent-direct",))
    assert only_modes.domains == DAR_NAMED["domains"]
    only_domains = RunSpec(model="reference", protocol="dar", domains=("airline",))
    assert only_domains.modes == DAR_NAMED["modes"]
    # The other protocols keep theirs: every domain and the paper's three modes.
    for protocol in ("paper", "harness"):
        spec = RunSpec(model="reference", protocol=protocol)  # type: ignore[arg-type]
        assert (spec.domains, spec.modes) == (tuple(DOMAINS), MODES)
    # What is named is checked as before: housing is refused, and so is an empty list.
    with pytest.raises(ConfigError, match="housing is not in DAR's task set"):
        RunSpec(model="reference", protocol="dar", domains=("housing",))
    with pytest.raises(ConfigError, match="at least one domain"):
        RunSpec(model="reference", protocol="dar", domains=())


NAMED_DAR_SPEC = {
    "agent": {"max_tokens": None, "max_turns": 50, "timeout_s": 600.0, "tool_set": "prolog"},
    "attempts": None,
    "case_ids": [],
    "concurrency": 8,
    "data": None,
    "distractors": None,
    "domains": ["sara_numeric", "sara_binary", "airline", "uscis"],
    "exemplars": "seeded",
    "k": 1,
    "limit": 1,
    "limits": {
        "cpu_s": 30,
        "file_size_mb": 16,
        "memory_mb": 2048,
        "output_bytes": 65536,
        "processes": 32,
        "stack_mb": 512,
        "timeout_s": 20.0,
    },
    "model": "reference",
    "modes": ["agent-direct", "agent-zero-shot", "agent-few-shot"],
    "params": {},
    "protocol": "dar",
    "schema": 1,
    "seed": 0,
    "split": "smoke",
}
"""``to_json`` of the smoke dar spec naming DAR's modes and domains, as written before a
dar spec had defaults of its own (and before ``seed`` and ``limit`` were renamed)."""
NAMED_DAR_FINGERPRINT = {
    "attempts": 2,
    "distractors": None,
    "exemplars": None,
    "limits": NAMED_DAR_SPEC["limits"],
    "model": {
        "backend": "reference",
        "base_url": None,
        "extra": {},
        "max_tokens": None,
        "model": "reference",
        "reasoning_effort": None,
        "seed": None,
        "stop": None,
        "temperature": None,
        "top_p": None,
    },
    "protocol": "dar",
    "seed": 0,
    "split": "smoke",
}
"""Its run's config.json fingerprint, as computed then, less the template hashes and the
data's description (facts of the checkout and the mirror, compared run to run below)."""


@pytest.mark.skipif(not Path(DATA, "data").is_dir(), reason="no data mirror")
@pytest.mark.skipif(not (DAR / "adapters").is_dir(), reason="no mirror of DAR's repository")
def test_a_dar_spec_left_to_its_defaults_has_the_fingerprint_of_one_naming_them(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv(DATA_ENV, DATA)
    monkeypatch.setenv(DAR_DIR_ENV, str(DAR))
    shared: dict[str, Any] = {"split": "smoke", "case_range": 1, "k": 1}
    named = RunSpec(model="reference", protocol="dar", **shared, **DAR_NAMED)
    default = RunSpec(model="reference", protocol="dar", **shared)
    assert RunSpec.from_json(NAMED_DAR_SPEC) == named
    out = RunOptions(out=tmp_path / "run")
    configs = [api.prepare(spec, out).config for spec in (named, default)]
    named_print, default_print = (fingerprint(config) for config in configs)
    assert default_print == named_print
    left = {k: v for k, v in named_print.items() if k not in ("templates", "data")}
    assert left == NAMED_DAR_FINGERPRINT
    # The rest config.json says of the run is the same too, and either resumes the other.
    for key in ("domains", "modes", "k", "agent", "case_order"):
        assert configs[0][key] == configs[1][key], key
    assert config_mismatch(configs[0], configs[1]) is None
