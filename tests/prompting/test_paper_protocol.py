"""The paper protocol's prompts are upstream's: each compared with upstream's own composers.

Upstream's generate_e2e.py is imported as released in a subprocess (its composers,
load_cases_from_json, load_statutes, the airline retrieval) and asked for the prompt of
every hard case in every task; the plan of ``--protocol paper`` must render the same text
byte for byte.  Also: the files are refused when they differ from the pinned sums, and
downloaded and cached when the data folder has no upstream code.
"""

from __future__ import annotations

import shutil
from pathlib import Path
from typing import Any

import pytest
import upstream_scripts
from fakehub import FileHost

from deonticbench.data import statutes
from deonticbench.data import upstream as upstream_module
from deonticbench.data.domains import get_domain
from deonticbench.data.sources import DataSource
from deonticbench.data.upstream import UPSTREAM_FILES, upstream_files
from deonticbench.errors import DataError
from deonticbench.prompting import plan_run
from deonticbench.prompting.paper import (
    UPSTREAM_DATASETS,
    UPSTREAM_TASKS,
    load_paper_texts,
    paper_sampling,
)
from deonticbench.vocabulary import MODES, Mode

MIRROR = upstream_scripts.MIRROR
pytestmark = pytest.mark.skipif(
    not upstream_scripts.available(), reason="upstream's scripts are not in the data mirror"
)
DOMAINS = ["sara_numeric", "sara_binary", "airline", "housing", "uscis"]


@pytest.fixture(scope="module")
def upstream_hard() -> dict[str, Any]:
    return upstream_scripts.composer_prompts("hard", [UPSTREAM_DATASETS[d] for d in DOMAINS])


def _source() -> DataSource:
    return DataSource(kind="local", path=MIRROR)


@pytest.mark.parametrize("domain", DOMAINS)
def test_every_hard_prompt_is_upstreams_byte_for_byte(
    domain: str, upstream_hard: dict[str, Any]
) -> None:
    plan = plan_run(
        [get_domain(domain)], split="hard", modes=MODES, source=_source(), protocol="paper"
    )
    theirs = {row["id"]: row for row in upstream_hard[UPSTREAM_DATASETS[domain]]["cases"]}
    assert len(plan.units) == 3 * len(theirs)
    for unit in plan.units:
        prompt = unit.render()
        system, user = prompt.messages
        assert system.role == "system" and user.role == "user"
        expected = theirs[unit.case.id][UPSTREAM_TASKS[unit.mode]]
        assert user.content == expected, f"{domain} {unit.case.id} {unit.mode}"
        assert unit.protocol == "paper"
        assert unit.shows_reference_programs == (domain == "airline" and unit.mode == "few-shot")


def test_paper_statutes_are_joined_in_sorted_file_name_order() -> None:
    """Upstream joins in directory-listing order; the paper protocol fixes plain sorted
    order (section151 before section2), not the harness's natural order."""
    folder = MIRROR / "statutes" / "sara"
    names = sorted(p.name for p in folder.iterdir() if p.is_file())
    assert names.index("section151") < names.index("section2")
    expected = statutes.SEPARATOR.join((folder / n).read_text(encoding="utf-8") for n in names)
    plan = plan_run(
        [get_domain("sara_numeric")], split="smoke", modes=("direct",), source=_source(),
        protocol="paper",
    )  # fmt: skip
    for unit in plan.units:
        user = unit.render().messages[1].content
        assert user.startswith(f"Statutes:\n{expected}\n\nCase: ")
        # the harness keeps its own order for the same case
        assert unit.case.statutes != expected


def test_harness_protocol_is_unchanged_and_other_modes_keep_the_harness() -> None:
    modes: list[Mode] = ["direct", "direct-verbal", "agent-zero-shot"]
    paper = plan_run(
        [get_domain("sara_numeric")], split="smoke", modes=modes, source=_source(), protocol="paper"
    )
    harness = plan_run([get_domain("sara_numeric")], split="smoke", modes=modes, source=_source())
    for ours, theirs in zip(paper.units, harness.units, strict=True):
        if ours.mode == "direct":
            assert ours.render().prompt_hash != theirs.render().prompt_hash
            assert ours.render().messages[1].content.startswith("Statutes:\n")
            assert theirs.protocol == "harness"
        elif ours.mode == "direct-verbal":  # the verbal variant keeps the harness's template
            assert ours.paper is None and ours.render() == theirs.render()
        else:  # agentic: the harness's workspace and tools
            assert ours.paper is None and ours.protocol == "harness"


def test_airline_few_shot_shows_another_evaluated_cases_reference_program() -> None:
    plan = plan_run(
        [get_domain("airline")],
        split="hard",
        modes=["few-shot"],
        source=_source(),
        protocol="paper",
    )
    assert "reference program" in plan.pool_notes["airline"]
    hard_ids = {u.case.id for u in plan.units}
    for unit in plan.units:
        (shown,) = unit.exemplars
        assert shown.id in hard_ids and shown.text != unit.case.text
        assert shown.reference_prolog.strip().splitlines()[-1] in unit.render().messages[1].content
    assert all(unit.shows_reference_programs for unit in plan.units)


def test_sampling_follows_upstreams_model_lists() -> None:
    texts = load_paper_texts(_source())
    gpt41 = paper_sampling(texts, "gpt-4.1", None)
    assert dict(gpt41.fields) == {"temperature": 0.7, "max_completion_tokens": 8192}
    assert not gpt41.one_per_call
    o3 = paper_sampling(texts, "o3-2025-04-16", None)
    assert dict(o3.fields) == {"reasoning_effort": "medium"}
    kimi = paper_sampling(texts, "moonshotai/Kimi-K2-Thinking", "http://127.0.0.1:9/v1")
    assert dict(kimi.fields) == {"reasoning_effort": "medium", "temperature": 0.6, "top_p": 0.95}
    deepseek = paper_sampling(texts, "deepseek-chat", "https://api.deepseek.com")
    assert dict(deepseek.fields) == {"temperature": 0.7, "top_p": 0.95, "max_tokens": 8192}
    assert deepseek.one_per_call
    assert paper_sampling(texts, "gpt-4o", "https://openrouter.ai/api/v1").one_per_call
    assert paper_sampling(texts, "x", "https://api.together.xyz/v1").one_per_call


def _copy_layout(tmp_path: Path) -> Path:
    root = tmp_path / "layout"
    shutil.copytree(MIRROR / "data", root / "data")
    shutil.copytree(MIRROR / "statutes", root / "statutes")
    for path in UPSTREAM_FILES:
        (root / path).parent.mkdir(parents=True, exist_ok=True)
        shutil.copy(MIRROR / path, root / path)
    return root


def test_a_tampered_upstream_file_is_refused_in_one_sentence(tmp_path: Path) -> None:
    root = _copy_layout(tmp_path)
    script = root / "prompts" / "case_exemplars.py"
    script.write_text(
        script.read_text(encoding="utf-8").replace("Text", "Txet", 1), encoding="utf-8"
    )
    with pytest.raises(DataError) as caught:
        plan_run(
            [get_domain("housing")],
            split="smoke",
            modes=["few-shot"],
            source=DataSource(kind="local", path=root),
            protocol="paper",
        )
    message = str(caught.value)
    assert "prompts/case_exemplars.py" in message and "not the pinned" in message
    assert message.count(". ") == 0 and "\n" not in message


@pytest.fixture
def cache(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    root = tmp_path / "cache"
    monkeypatch.setenv(statutes.CACHE_ENV, str(root))
    return root


def test_files_are_downloaded_at_the_pinned_commit_verified_and_cached(
    tmp_path: Path, cache: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    # a data folder without upstream's code: the files come from the repository
    root = tmp_path / "bare"
    shutil.copytree(MIRROR / "data" / "housing", root / "data" / "housing")
    bare = DataSource(kind="local", path=root)
    with FileHost(MIRROR).running() as served:
        monkeypatch.setenv(statutes.STATUTES_URL_ENV, served.url)
        files = upstream_files(bare)
        assert sorted(p for _, p in served.log.requests) == sorted(UPSTREAM_FILES)
        for path in UPSTREAM_FILES:
            assert files.text(path) == (MIRROR / path).read_text(encoding="utf-8")
            assert list(cache.glob(f"upstream/*/{path}"))
    # a tampered download is refused and not cached
    for cached in cache.glob("upstream/**/*.py"):
        cached.unlink()
    upstream_module._downloaded.cache_clear()  # the same base URL is read again
    with FileHost(MIRROR).running() as served:
        served.tampered.add("prompts/dataset_prompts.py")
        monkeypatch.setenv(statutes.STATUTES_URL_ENV, served.url)
        with pytest.raises(
            DataError, match=r"dataset_prompts.py downloaded from .* not the pinned"
        ):
            upstream_files(bare)
    assert not list(cache.glob("upstream/*/prompts/dataset_prompts.py"))
