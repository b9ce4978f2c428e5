"""Loading cases from a local folder in the upstream layout: counts, smoke, and errors."""

from __future__ import annotations

import json
import os
from pathlib import Path
from typing import Any

import pytest

from deonticbench.data.cases import (
    SPLITS,
    Case,
    cases_from_rows,
    describe_source,
    load_cases,
    normalise_gold,
    pin_source,
)
from deonticbench.data.domains import DOMAINS, HOUSING, SARA_BINARY, SARA_NUMERIC, USCIS
from deonticbench.data.sources import DataSource, resolve_source
from deonticbench.errors import DataError

MIRROR = Path(os.environ.get("DEONTICBENCH_DATA", "/work/shared/deonticbench-data"))
needs_mirror = pytest.mark.skipif(
    not (MIRROR / "data").is_dir(), reason="the shared data mirror is not available"
)

# The mirror README's counts (paper Table 1 for hard; housing whole is hub-only).
COUNTS = {
    ("sara_numeric", "hard"): 35,
    ("sara_binary", "hard"): 30,
    ("airline", "hard"): 80,
    ("housing", "hard"): 78,
    ("uscis", "hard"): 28,
    ("sara_numeric", "whole"): 100,
    ("sara_binary", "whole"): 276,
    ("airline", "whole"): 300,
    ("uscis", "whole"): 242,
}


def mirror() -> DataSource:
    return DataSource(kind="local", path=MIRROR)


def make_folder(root: Path, folder: str, split: str, content: str) -> DataSource:
    """A local data folder holding one split file; statutes/ copied would not matter here."""
    (root / "data" / folder).mkdir(parents=True)
    (root / "data" / folder / f"{split}.json").write_text(content, encoding="utf-8")
    return DataSource(kind="local", path=root)


def uscis_row(case_id: str, **changes: Any) -> dict[str, Any]:
    row = {
        "id": case_id,
        "text": "The petitioner appeals.",
        "statutes": "8 CFR 103.3",
        "question": "Is the appeal accepted?",
        "label": "Dismissed",
        "reference_prolog": "main :- writeln('Dismissed').",
        "case_number": "A-1",
    }
    row.update(changes)
    return row


@needs_mirror
@pytest.mark.parametrize(("domain", "split"), sorted(COUNTS))
def test_counts_match_the_mirror_readme(domain: str, split: str) -> None:
    cases = load_cases(domain, split, mirror())
    assert len(cases) == COUNTS[(domain, split)]
    assert len({c.id for c in cases}) == len(cases)
    assert all(isinstance(c, Case) and c.domain == DOMAINS[domain].name for c in cases)


@needs_mirror
@pytest.mark.parametrize("domain", list(DOMAINS))
def test_smoke_is_the_first_five_of_hard(domain: str) -> None:
    smoke = load_cases(domain, "smoke", mirror())
    assert len(smoke) == 5
    assert smoke == load_cases(domain, "hard", mirror())[:5]


def test_smoke_is_derived_from_hard_when_no_smoke_file(tmp_path: Path) -> None:
    rows = [uscis_row(f"u{i}") for i in range(7)]
    src = make_folder(tmp_path, "uscis-aao", "hard", json.dumps(rows))
    assert [c.id for c in load_cases("uscis", "smoke", src)] == ["u0", "u1", "u2", "u3", "u4"]


@needs_mirror
def test_case_fields_per_domain() -> None:
    sara = load_cases("sara_numeric", "hard", mirror())
    # The shared statutes are the same text for every case; labels become ints even
    # where the release stores them as strings.
    assert len({c.statutes for c in sara}) == 1
    assert sara[0].statutes.startswith((MIRROR / "statutes/sara/section1").read_text()[:200])
    assert all(isinstance(c.gold, int) for c in sara)

    binary = load_cases("sara_binary", "hard", mirror())
    assert {c.gold for c in binary} == {"Entailment", "Contradiction"}

    housing = load_cases("housing", "hard", mirror())
    raw = json.loads((MIRROR / "data/housing/hard.json").read_text(encoding="utf-8"))
    assert [c.statutes for c in housing] == [r["statutes"] for r in raw]
    assert [c.extra["state"] for c in housing] == [r["state"] for r in raw]
    assert all(c.text == "" for c in housing)
    assert {c.gold for c in housing} <= {"yes", "no"}

    uscis = load_cases("uscis", "hard", mirror())
    assert all(c.extra["case_number"] for c in uscis)
    assert {c.gold for c in uscis} <= {"Accepted", "Dismissed"}


def test_unknown_domain_is_a_data_error() -> None:
    with pytest.raises(DataError, match=r"unknown domain 'tax'; choose from sara_numeric"):
        load_cases("tax", "hard", DataSource(kind="local", path=Path("/nonexistent")))


def test_unknown_split_is_a_data_error() -> None:
    with pytest.raises(DataError, match=r"unknown split 'test'; choose from smoke, hard, whole"):
        load_cases("airline", "test", DataSource(kind="local", path=Path("/nonexistent")))
    assert SPLITS == ("smoke", "hard", "whole")


def test_missing_file_names_it(tmp_path: Path) -> None:
    (tmp_path / "data").mkdir()
    with pytest.raises(DataError) as info:
        load_cases("airline", "hard", DataSource(kind="local", path=tmp_path))
    assert str(info.value) == f"{tmp_path}/data/airline/hard.json does not exist."


@needs_mirror
def test_housing_whole_offline_points_to_the_hub() -> None:
    with pytest.raises(DataError) as info:
        load_cases("housing", "whole", mirror())
    message = str(info.value)
    assert message.startswith(f"{MIRROR}/data/housing/whole.json does not exist.")
    assert "only on the hub" in message and "--hub" in message


def test_malformed_json_names_file_and_line(tmp_path: Path) -> None:
    src = make_folder(tmp_path, "airline", "hard", '[\n  {"id": "a1",\n  oops\n]')
    with pytest.raises(DataError) as info:
        load_cases("airline", "hard", src)
    assert str(info.value).startswith(
        f"{tmp_path}/data/airline/hard.json is not valid JSON (line 3"
    )


def test_json_that_is_not_a_list(tmp_path: Path) -> None:
    src = make_folder(tmp_path, "airline", "hard", '{"id": "a1"}')
    with pytest.raises(DataError, match=r"hard.json should hold a JSON list of cases"):
        load_cases("airline", "hard", src)


def test_missing_required_field_names_case_and_field(tmp_path: Path) -> None:
    rows = [uscis_row("ok"), uscis_row("bad-7", reference_prolog="")]
    src = make_folder(tmp_path, "uscis-aao", "hard", json.dumps(rows))
    with pytest.raises(DataError) as info:
        load_cases("uscis", "hard", src)
    assert str(info.value) == (
        f"{tmp_path}/data/uscis-aao/hard.json: case bad-7 lacks required field(s) reference_prolog."
    )


def test_duplicate_id_names_it(tmp_path: Path) -> None:
    rows = [uscis_row("u1"), uscis_row("u2"), uscis_row("u1")]
    src = make_folder(tmp_path, "uscis-aao", "whole", json.dumps(rows))
    with pytest.raises(DataError, match=r"whole.json: case id u1 appears twice"):
        load_cases("uscis", "whole", src)


def test_bad_label_names_case(tmp_path: Path) -> None:
    rows = [uscis_row("u1", label="Remanded")]
    src = make_folder(tmp_path, "uscis-aao", "hard", json.dumps(rows))
    with pytest.raises(DataError, match=r"case u1 has label 'Remanded', which is not one of"):
        load_cases("uscis", "hard", src)


def test_entry_that_is_not_an_object(tmp_path: Path) -> None:
    src = make_folder(tmp_path, "uscis-aao", "hard", json.dumps([uscis_row("u1"), "u2"]))
    with pytest.raises(DataError, match=r"hard.json: entry 1 is not a JSON object"):
        load_cases("uscis", "hard", src)


def test_gold_normalisation() -> None:
    assert normalise_gold(SARA_NUMERIC, "81487") == 81487
    assert normalise_gold(SARA_NUMERIC, "1,166.00") == 1166
    assert normalise_gold(SARA_BINARY, 1) == "Entailment"
    assert normalise_gold(SARA_BINARY, "0") == "Contradiction"
    assert normalise_gold(HOUSING, "Yes") == "yes"
    with pytest.raises(DataError, match=r"non-numeric label 'n/a'"):
        normalise_gold(SARA_NUMERIC, "n/a")


def test_rows_from_the_hub_with_null_columns() -> None:
    # A hub table may carry every config's columns, null where a config has none.
    row = uscis_row("u1")
    row["state"] = None
    (case,) = cases_from_rows(USCIS, [row], "hub", None)
    assert case.extra == {"case_number": "A-1"}
    assert case.statutes == "8 CFR 103.3"


def test_resolve_source(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv("DEONTICBENCH_DATA", raising=False)
    monkeypatch.delenv("HF_ENDPOINT", raising=False)
    assert resolve_source().kind == "hub"
    hub = resolve_source(hub=True, revision="v1")
    assert (hub.kind, hub.revision) == ("hub", "v1")
    pinned = "guangyaodou/DeonticBench@2b4e4ea114295fdf7151d4122c5ebbd5a2bf277e"
    assert describe_source(hub) == {
        "kind": "hub",
        "repo": "gydou/DeonticBench",
        "revision": "v1",
        "statutes": pinned,
    }

    (tmp_path / "data").mkdir()
    monkeypatch.setenv("DEONTICBENCH_DATA", str(tmp_path))
    local = resolve_source()
    assert (local.kind, local.path) == ("local", tmp_path.resolve())
    assert describe_source(local) == {
        "kind": "local",
        "path": str(tmp_path.resolve()),
        "statutes": pinned,  # no statutes/ folder: the pinned files would be downloaded
    }
    with pytest.raises(DataError, match=r"is not a DeonticBench data folder"):
        resolve_source(tmp_path / "data")


def test_a_data_source_is_immutable_and_pinning_returns_a_copy() -> None:
    import dataclasses

    local = DataSource(kind="local", path=Path("/somewhere"))
    assert pin_source(local) is local  # a local folder is its own snapshot
    hub = DataSource(kind="hub", revision="v1")
    with pytest.raises(dataclasses.FrozenInstanceError):
        hub.commit = "0" * 40  # type: ignore[misc]
    pinned = dataclasses.replace(hub, commit="0" * 40)
    assert pin_source(pinned) is pinned  # already pinned: the hub is not asked again
    assert pinned == hub and hash(pinned) == hash(hub)  # the same source, now pinned
    assert hub.commit is None and not hub.pinned and pinned.pinned
    # No field holds a mutable container that loading could write into.
    assert all(
        not isinstance(getattr(hub, f.name), dict | list | set) for f in dataclasses.fields(hub)
    )
