"""RunSpec: one frozen description of a run, from which config.json is built and which
scoring reads back typed."""

from __future__ import annotations

import dataclasses
import json
import os
import subprocess
import sys
import warnings
from pathlib import Path

import pytest

from deonticbench.data.domains import SARA_NUMERIC
from deonticbench.data.sources import DataSource
from deonticbench.errors import ConfigError
from deonticbench.solver import Limits
from deonticbench.store.run import load_run
from deonticbench.store.spec import SPEC_SCHEMA, RunSpec
from deonticbench.vocabulary.modes import MODES

DATA = os.environ.get("DEONTICBENCH_DATA") or str(
    Path(__file__).resolve().parents[3] / "shared" / "deonticbench-data"
)


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
        ({"concurrency": 0}, "concurrency must be at least 1"),
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
        limit=2,
        limits=Limits(timeout_s=5.0),
        concurrency=3,
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
    assert (spec.limit, spec.concurrency, spec.limits) == (2, 5, Limits())
    assert spec.data == DataSource(kind="local", path=Path(DATA).resolve())
    run = load_run(out)
    assert run.spec == spec and run.planned_k("airline") == 2 and run.model == "reference"


def test_the_old_exemplars_spelling_warns_and_reads_as_seeded() -> None:
    with pytest.warns(DeprecationWarning, match='exemplars="seeded"'):
        old = RunSpec(model="reference", exemplars="paper")  # type: ignore[arg-type]
    assert old == RunSpec(model="reference", exemplars="seeded")
    assert old.exemplars == "seeded"
    config = {"model": {"spec": "reference"}, "exemplars": "paper"}
    assert RunSpec.from_config(config).exemplars == "seeded"


def test_the_old_seed_keyword_and_attribute_warn_and_mean_the_exemplar_seed() -> None:
    with pytest.warns(DeprecationWarning, match="exemplar_seed"):
        old = RunSpec(model="reference", seed=5)
    assert old == RunSpec(model="reference", exemplar_seed=5)
    with warnings.catch_warnings():
        warnings.simplefilter("error")  # a copy of a spec made the new way never warns
        assert dataclasses.replace(old, attempts=2).exemplar_seed == 5
    # The spec's JSON and config.json keep the key "seed": older files read unchanged.
    assert old.to_json()["seed"] == 5
    assert RunSpec.from_json(old.to_json()).exemplar_seed == 5
    assert RunSpec.from_config({"model": {"spec": "reference"}, "seed": 4}).exemplar_seed == 4
