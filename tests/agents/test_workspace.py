"""A trial's workspace and instruction: what an agent is shown, and what it never is."""

from __future__ import annotations

import os
from pathlib import Path

import pytest

from deonticbench.agents import build_workspace, instruction_text
from deonticbench.agents.workspace import instruction_hash
from deonticbench.data.cases import load_cases, resolve_source
from deonticbench.data.domains import DOMAINS, get_domain
from deonticbench.prompting.exemplars import choose_exemplars, exemplar_pool
from deonticbench.vocabulary.modes import AGENT_MODES

DATA = os.environ.get("DEONTICBENCH_DATA", "/work/shared/deonticbench-data")
pytestmark = pytest.mark.skipif(not Path(DATA, "data").is_dir(), reason="no data mirror")


def _first(domain: str):  # type: ignore[no-untyped-def]
    return load_cases(domain, "smoke", resolve_source(DATA))[0]


def _all_text(root: Path) -> str:
    return "\n".join(p.read_text() for p in sorted(root.rglob("*")) if p.is_file())


@pytest.mark.parametrize("domain", list(DOMAINS))
def test_a_workspace_holds_the_statutes_and_the_case_and_never_the_gold(
    domain: str, tmp_path: Path
) -> None:
    case = _first(domain)
    ws = build_workspace(case, "agent-zero-shot", tmp_path / "ws")
    assert ws.files == ("case.txt", "statute.txt")
    assert (ws.root / "statute.txt").read_text().strip() == case.statutes.strip()
    assert case.question.strip() in (ws.root / "case.txt").read_text()
    assert (ws.root / "output").is_dir() and not any((ws.root / "output").iterdir())
    everything = _all_text(ws.root)
    # The case's own reference program is never there (its first clause line is unique).
    signature = max(case.reference_prolog.splitlines(), key=len).strip()
    assert signature not in everything
    assert "solution.pl" not in {p.name for p in ws.root.rglob("*")}


def test_few_shot_examples_are_leak_free_and_show_the_prepared_program(tmp_path: Path) -> None:
    source = resolve_source(DATA)
    domain = get_domain("uscis")
    case = load_cases(domain, "smoke", source)[0]
    pool, _ = exemplar_pool(domain, source)
    exemplars = choose_exemplars(domain, pool, case)
    ws = build_workspace(case, "agent-few-shot", tmp_path / "ws", exemplars)
    example = ws.root / "examples" / "1"
    assert sorted(p.name for p in example.iterdir()) == ["answer.txt", "case.txt", "solution.pl"]
    program = (example / "solution.pl").read_text()
    assert ":- initialization(main, main)." in program and "```" not in program
    assert (example / "answer.txt").read_text().strip() == str(exemplars[0].gold)
    with pytest.raises(ValueError, match="own exemplar"):
        build_workspace(case, "agent-few-shot", tmp_path / "again", [case])
    with pytest.raises(ValueError, match="not empty"):
        build_workspace(case, "agent-few-shot", ws.root, exemplars)


@pytest.mark.parametrize("mode", AGENT_MODES)
@pytest.mark.parametrize("tools", ["prolog", "shell", "terminal"])
def test_the_instruction_names_the_files_the_answer_line_and_how_to_finish(
    mode: str, tools: str
) -> None:
    case = _first("housing")
    text = instruction_text(case, mode, tools, workspace="/app")  # type: ignore[arg-type]
    assert "statute.txt" in text and "case.txt" in text and "/app" in text
    assert ("examples/" in text) == (mode == "agent-few-shot")
    if mode == "agent-direct":
        assert "output/answer.txt" in text and "Answer: yes or Answer: no" in text
    else:
        assert "solution.pl" in text and "housing_answer(yes)" in text
        assert ":- initialization(main, main)." in text
    assert ("run_prolog" in text) == (tools == "prolog")
    assert ("bash" in text) == (tools == "shell")
    assert "{" not in text.replace("{answer", "")  # every placeholder filled
    # Nothing of the case is in it (the case is in the files): so neither is its gold.
    other = load_cases("housing", "smoke", resolve_source(DATA))[1]
    assert instruction_text(other, mode, tools, workspace="/app") == text  # type: ignore[arg-type]
    assert len(instruction_hash(mode, tools)) == 64  # type: ignore[arg-type]
