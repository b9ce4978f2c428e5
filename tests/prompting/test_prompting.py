"""Prompt templates and few-shot exemplars, rendered against the shared mirror's cases.

Real templates from prompts/, real cases from the mirror, real swipl for the programs the
prompts demonstrate.  Edited templates are made in a temporary copy of prompts/.
"""

from __future__ import annotations

import json
import os
import re
import shutil
import subprocess
import sys
from collections.abc import Iterator
from dataclasses import replace
from pathlib import Path

import pytest

from deonticbench._paths import PROMPTS
from deonticbench.data.cases import Case, DataSource, load_cases, resolve_source
from deonticbench.data.domains import (
    AIRLINE,
    DOMAINS,
    HOUSING,
    SARA_BINARY,
    SARA_NUMERIC,
    USCIS,
    Domain,
)
from deonticbench.errors import DataError, DeonticBenchError
from deonticbench.prompting import (
    Prompt,
    choose_exemplars,
    demonstration,
    exemplar_pool,
    fill,
    render_feedback,
    template_hashes,
)
from deonticbench.prompting.exemplars import excluded_ids
from deonticbench.prompting.render import FEEDBACK_OUTPUT_LIMIT, render
from deonticbench.prompting.templates import TemplateError, placeholders, template_files
from deonticbench.reading.answers import read_direct_answer, read_program_answer
from deonticbench.vocabulary.chat import Message
from deonticbench.vocabulary.modes import MODES, VERBAL_MODE

MIRROR = Path(os.environ.get("DEONTICBENCH_DATA", "/work/shared/deonticbench-data"))
needs_mirror = pytest.mark.skipif(
    not (MIRROR / "data").is_dir(), reason="the shared data mirror is not available"
)
SYSTEM = "You are a helpful assistant trained to conduct deontic reasoning."
# Every placeholder name any template uses; none may survive rendering.
ALL_PLACEHOLDERS = (
    "statutes",
    "case_text",
    "question",
    "state",
    "exemplars",
    # rules-given.txt and facts-given.txt: the shown part of the reference program
    "given",
    "number",
    "program",
    "output",
    # feedback-report.txt and feedback-no-answer.txt (the solver's report, point 8)
    "status",
    "limit",
    "no_answer",
    "stderr",
    "stdout",
    "reason",
    "answer_line",
    # prompts/agent/ (the agentic instruction: nothing of a case, whose files hold it)
    "domain",
    "workspace",
    "finish",
    "timeout",
    "tools",
    "examples",
    "entrypoint",
    "predicate",
    "print_format",
    "output_chars",
    "tool_list",
    # constrained-protocol.txt: the worked course of calls (constrained-course-*.txt)
    "course",
    "name",
)
ENTRY_DOMAINS = ("housing", "uscis")


@pytest.fixture(scope="module")
def source() -> DataSource:
    return resolve_source(os.environ.get("DEONTICBENCH_DATA") or MIRROR)


@pytest.fixture(scope="module")
def hard(source: DataSource) -> dict[str, list[Case]]:
    return {name: load_cases(d, "hard", source) for name, d in DOMAINS.items()}


@pytest.fixture(scope="module")
def pools(source: DataSource) -> dict[str, tuple[list[Case], str]]:
    return {name: exemplar_pool(d, source) for name, d in DOMAINS.items()}


@pytest.fixture()
def prompts_copy(tmp_path: Path) -> Path:
    copy = tmp_path / "prompts"
    shutil.copytree(PROMPTS, copy)
    return copy


def _user(prompt: Prompt) -> str:
    return prompt.messages[-1].content


def _answer_forms(domain: Domain) -> list[str]:
    # "Tax result: <amount>" -> "Tax result:"; "housing_answer(yes)" stays whole.
    return [alt.split("<")[0].strip() for alt in domain.answer_line.split(" | ")]


# --- the system message and the template files ------------------------------------------


def test_system_file_is_exactly_the_papers_system_message() -> None:
    assert (PROMPTS / "system.txt").read_text(encoding="utf-8").rstrip("\n") == SYSTEM


def test_every_domain_has_every_template() -> None:
    for domain in DOMAINS.values():
        for mode in MODES:
            for relative in template_files(domain, mode):
                assert (PROMPTS / relative).is_file(), relative
    assert (PROMPTS / "feedback.txt").is_file()
    assert (PROMPTS / "feedback-no-program.txt").is_file()


def test_templates_use_only_known_placeholders() -> None:
    for path in PROMPTS.rglob("*.txt"):
        used = placeholders(path.read_text(encoding="utf-8"))
        assert used <= set(ALL_PLACEHOLDERS), (path, used - set(ALL_PLACEHOLDERS))


def test_feedback_templates_have_no_slot_for_a_label() -> None:
    assert placeholders((PROMPTS / "feedback.txt").read_text()) == {"program", "output"}
    assert placeholders((PROMPTS / "feedback-no-program.txt").read_text()) == {"output"}


# --- every domain x mode against the mirror's hard cases ---------------------------------


@needs_mirror
@pytest.mark.parametrize("mode", MODES)
@pytest.mark.parametrize("name", list(DOMAINS))
def test_renders_every_hard_case(
    name: str,
    mode: str,
    hard: dict[str, list[Case]],
    pools: dict[str, tuple[list[Case], str]],
) -> None:
    domain = DOMAINS[name]
    pool, _ = pools[name]
    leftover = re.compile(r"\{(" + "|".join(ALL_PLACEHOLDERS) + r")\}")
    for case in hard[name]:
        shots = choose_exemplars(domain, pool, case, None, seed=0) if mode == "few-shot" else []
        prompt = render(case, mode, shots)  # type: ignore[arg-type]
        system, user = prompt.messages
        assert system == Message(role="system", content=SYSTEM)
        assert user.role == "user"
        text = user.content
        assert not leftover.search(text), (case.id, leftover.search(text))
        assert case.question.strip() in text
        assert case.statutes.strip() in text
        assert case.text.strip() in text
        assert str(case.extra.get("state", "")) in text
        # The gold never leaks: no upstream Label line, and not the case's own program.
        assert "Label:" not in text, case.id
        assert case.reference_prolog.strip() not in text
        assert prompt.template == f"{name}/{mode}"
        assert re.fullmatch(r"[0-9a-f]{64}", prompt.template_hash)
        assert re.fullmatch(r"[0-9a-f]{64}", prompt.prompt_hash)
        if mode == "direct":
            assert "Answer:" in text
            assert "```prolog" not in text
        else:
            for form in _answer_forms(domain):
                assert form in text, (case.id, form)
            assert "```prolog" in text
            if name in ENTRY_DOMAINS:
                assert ":- initialization(main, main)." in text
                assert re.search(r"main/0|^main :-", text, re.MULTILINE)
        if mode == "few-shot":
            for shot in shots:
                assert demonstration(domain, shot) in text


@needs_mirror
def test_binary_prompts_carry_no_label_line_and_hard_labels_do_not_leak(
    hard: dict[str, list[Case]],
) -> None:
    # The mirror's housing programs open with `:- format("Label: ~w~n", ["yes"]).`; that
    # program must never reach a prompt, and neither may any line naming the label.
    for name in ("sara_binary", "housing", "uscis"):
        for case in hard[name]:
            for mode in ("direct", "zero-shot"):
                text = _user(render(case, mode))
                assert not re.search(r"^.*Label:.*$", text, re.MULTILINE)


@needs_mirror
@pytest.mark.parametrize("name", list(DOMAINS))
def test_direct_answer_forms_are_read_by_the_direct_reader(
    name: str, hard: dict[str, list[Case]]
) -> None:
    """The forms the direct prompt asks for are the ones answers.read_direct_answer reads."""
    domain = DOMAINS[name]
    text = _user(render(hard[name][0], "direct"))
    forms = [ln.strip() for ln in text.splitlines() if ln.strip().startswith("Answer:")]
    assert forms
    seen = set()
    for form in forms:
        reply = "Let me work through the statutes.\n" + form.replace("<amount>", "1234")
        value = read_direct_answer(domain, reply).value
        assert value is not None, form
        seen.add(value)
    expected = {1234.0} if domain.label_kind == "numeric" else set(domain.classes)
    assert seen == expected


# --- placeholders and braces ------------------------------------------------------------


def test_fill_is_one_pass_and_rejects_unknown_placeholders() -> None:
    assert fill("a {x} b", {"x": "{y} {{z}} foo({A})"}) == "a {y} {{z}} foo({A}) b"
    with pytest.raises(TemplateError, match=r"\{y\}"):
        fill("a {y}", {"x": "1"})
    # Not placeholders (not a lower-case name): left alone.
    assert fill("{X} { x } {1}", {}) == "{X} { x } {1}"


def _braced_case(domain: Domain, case_id: str, gold: int | str) -> Case:
    return Case(
        domain=domain.name,
        id=case_id,
        question="Does {question} stay literal in {X}?",
        gold=gold,
        reference_prolog="p({A}) :- q(A).\n:- p({1}), format('Total cost: ~w~n', [1]).\n",
        statutes="Rule {statutes} {case_text}: {{braces}} and {} and X = {a, b}.",
        text="Alice wrote {exemplars} and {program} in her notes {",
        extra={"state": "{state}"},
    )


@pytest.mark.parametrize("name", list(DOMAINS))
def test_braces_in_content_survive(name: str) -> None:
    domain = DOMAINS[name]
    gold: int | str = 1 if domain.label_kind == "numeric" else domain.positive
    case = _braced_case(domain, "target", gold)
    shot = _braced_case(domain, "shot", gold)
    shot = replace(shot, text="Shot text {x}.", question="Shot question {y}?")
    for mode in MODES:
        text = _user(render(case, mode, [shot] if mode == "few-shot" else []))
        assert case.statutes in text
        assert case.question in text
        if name != "housing":  # housing cases have no narrative
            assert case.text in text
        if mode == "few-shot":
            assert "p({A}) :- q(A)." in text
            assert "Shot question {y}?" in text


def test_unknown_placeholder_in_a_template_fails_loudly(prompts_copy: Path) -> None:
    path = prompts_copy / "airline" / "zero-shot.txt"
    path.write_text(path.read_text() + "\n{passenger}\n")
    case = _braced_case(AIRLINE, "c", 1)
    with pytest.raises(TemplateError, match=r"\{passenger\}"):
        render(case, "zero-shot", prompts_dir=prompts_copy)
    assert issubclass(TemplateError, DeonticBenchError)


def test_missing_template_is_a_clear_error(prompts_copy: Path) -> None:
    (prompts_copy / "uscis" / "direct.txt").unlink()
    with pytest.raises(TemplateError, match="does not exist"):
        render(_braced_case(USCIS, "c", "Accepted"), "direct", prompts_dir=prompts_copy)


def test_mode_and_exemplar_misuse_is_refused() -> None:
    case = _braced_case(AIRLINE, "c", 1)
    other = _braced_case(AIRLINE, "d", 2)
    other = replace(other, text="another passenger")
    with pytest.raises(ValueError, match="at least one exemplar"):
        render(case, "few-shot", [])
    with pytest.raises(ValueError, match="own exemplar"):
        render(case, "few-shot", [case])
    with pytest.raises(ValueError, match="only used in few-shot"):
        render(case, "zero-shot", [other])
    with pytest.raises(ValueError, match="from sara_numeric"):
        render(case, "few-shot", [replace(other, domain="sara_numeric")])


# --- hashes -----------------------------------------------------------------------------


def test_template_hash_follows_the_files(prompts_copy: Path) -> None:
    before = template_hashes(prompts_dir=prompts_copy)
    assert before == template_hashes()  # a byte-identical copy hashes the same
    # the paper's modes by default; a run adds the variants and settings it uses
    assert len(before) == len(DOMAINS) * len(MODES) + 1
    with_verbal = template_hashes(prompts_dir=prompts_copy, modes=(*MODES, VERBAL_MODE))
    assert len(with_verbal) == len(DOMAINS) * (len(MODES) + 1) + 1

    case = _braced_case(AIRLINE, "c", 1)
    assert (
        render(case, "zero-shot", prompts_dir=prompts_copy).template_hash
        == (before["airline/zero-shot"])
    )

    few = prompts_copy / "airline" / "few-shot.txt"
    few.write_text(few.read_text() + "\nOne more sentence.\n")
    after = template_hashes(prompts_dir=prompts_copy)
    changed = {k for k in before if before[k] != after[k]}
    assert changed == {"airline/few-shot"}

    exemplar = prompts_copy / "housing" / "exemplar.txt"
    exemplar.write_text(exemplar.read_text() + "\n")
    changed = {k for k, v in template_hashes(prompts_dir=prompts_copy).items() if after[k] != v}
    assert changed == {"housing/few-shot"}

    (prompts_copy / "system.txt").write_text(SYSTEM + " Be brief.\n")
    final = template_hashes(prompts_dir=prompts_copy)
    assert all(final[k] != before[k] for k in before if k != "feedback")
    assert final["feedback"] == before["feedback"]
    prompt = render(case, "zero-shot", prompts_dir=prompts_copy)
    assert prompt.messages[0].content == SYSTEM + " Be brief."
    assert prompt.template_hash == final["airline/zero-shot"]


def test_template_hashes_for_chosen_domains() -> None:
    hashes = template_hashes(["airline", HOUSING])
    assert set(hashes) == {f"{d}/{m}" for d in ("airline", "housing") for m in MODES} | {"feedback"}


def test_prompt_hash_is_stable_and_content_sensitive() -> None:
    a = render(_braced_case(SARA_NUMERIC, "c", 1), "zero-shot")
    b = render(_braced_case(SARA_NUMERIC, "c", 1), "zero-shot")
    assert a == b
    c = render(replace(_braced_case(SARA_NUMERIC, "c", 1), question="Another?"), "zero-shot")
    assert c.prompt_hash != a.prompt_hash
    assert c.template_hash == a.template_hash
    # The gold is not part of the prompt, so it cannot change the hash.
    d = render(_braced_case(SARA_NUMERIC, "c", 99999), "zero-shot")
    assert d.prompt_hash == a.prompt_hash


# --- exemplar pools and choice ------------------------------------------------------------


@needs_mirror
def test_pools_never_hold_hard_cases(
    hard: dict[str, list[Case]], pools: dict[str, tuple[list[Case], str]]
) -> None:
    for name, (pool, note) in pools.items():
        hard_ids = {c.id for c in hard[name]}
        hard_texts = {(c.text, c.question) for c in hard[name]}
        assert pool, name
        assert not {c.id for c in pool} & hard_ids
        assert not {(c.text, c.question) for c in pool} & hard_texts
        assert not {c.id for c in pool} & excluded_ids(DOMAINS[name])
        assert note.startswith(f"{name}: ")


@needs_mirror
def test_housing_falls_back_to_synthetic_exemplars_offline(
    hard: dict[str, list[Case]], pools: dict[str, tuple[list[Case], str]]
) -> None:
    pool, note = pools["housing"]
    assert "synthetic" in note and "not available" in note and "exemplars.json" in note
    assert {c.id for c in pool} == {"synthetic_housing_yes", "synthetic_housing_no"}
    assert {c.gold for c in pool} == {"yes", "no"}
    hard_questions = {c.question for c in hard["housing"]}
    hard_statutes = {c.statutes for c in hard["housing"]}
    for case in pool:
        assert case.question not in hard_questions
        assert case.statutes not in hard_statutes


@needs_mirror
def test_housing_uses_whole_minus_hard_when_whole_exists(tmp_path: Path) -> None:
    """With a whole split present, housing takes its pool from it like every domain."""
    hard_rows = json.loads((MIRROR / "data" / "housing" / "hard.json").read_text())[:3]
    extra = [
        {**hard_rows[0], "id": "housing_train_1", "question": "Is a train question one?"},
        {**hard_rows[1], "id": "housing_train_2", "question": "Is a second one fine?"},
        # the same question and state as a hard case under a new id: a copy, dropped
        {**hard_rows[2], "id": "housing_copy"},
    ]
    folder = tmp_path / "data" / "housing"
    folder.mkdir(parents=True)
    (folder / "hard.json").write_text(json.dumps(hard_rows))
    (folder / "whole.json").write_text(json.dumps(hard_rows + extra))
    pool, note = exemplar_pool(HOUSING, resolve_source(tmp_path))
    assert [c.id for c in pool] == ["housing_train_1", "housing_train_2"]
    assert "whole split minus the hard split" in note and "1 copies" in note


def test_no_whole_and_no_synthetic_pool_is_a_clear_error(
    tmp_path: Path, prompts_copy: Path
) -> None:
    (tmp_path / "data" / "housing").mkdir(parents=True)
    (prompts_copy / "housing" / "exemplars.json").unlink()
    with pytest.raises(DataError, match="no few-shot exemplars"):
        exemplar_pool(HOUSING, resolve_source(tmp_path), prompts_dir=prompts_copy)


@needs_mirror
@pytest.mark.parametrize("name", list(DOMAINS))
def test_exemplar_choice_is_deterministic_and_seeded(
    name: str, hard: dict[str, list[Case]], pools: dict[str, tuple[list[Case], str]]
) -> None:
    domain = DOMAINS[name]
    pool, _ = pools[name]
    hard_ids = {c.id for c in hard[name]}
    varied = 0
    for case in hard[name]:
        picks = [choose_exemplars(domain, pool, case, None, seed) for seed in range(4)]
        for chosen in picks:
            assert len(chosen) == domain.few_shot_count
            assert len({c.id for c in chosen}) == len(chosen)
            assert all(c.id not in hard_ids and c.id != case.id for c in chosen)
        assert [c.id for c in choose_exemplars(domain, pool, case, None, 0)] == [
            c.id for c in picks[0]
        ]
        varied += len({tuple(c.id for c in p) for p in picks}) > 1
    # Different seeds give different exemplars in general (housing's pool holds two).
    assert varied >= 0.5 * len(hard[name]), varied


@needs_mirror
def test_binary_domains_mix_classes(
    hard: dict[str, list[Case]], pools: dict[str, tuple[list[Case], str]]
) -> None:
    for name in ("sara_binary", "uscis", "housing"):
        domain = DOMAINS[name]
        pool, _ = pools[name]
        for case in hard[name][:10]:
            for seed in range(3):
                chosen = choose_exemplars(domain, pool, case, 2, seed)
                assert {c.gold for c in chosen} == set(domain.classes), (name, case.id, seed)


def test_choice_excludes_the_case_and_its_copies() -> None:
    pool = [_braced_case(AIRLINE, f"a{i}", i) for i in range(5)]
    pool = [replace(c, text=f"passenger {c.id}") for c in pool]
    target = pool[2]
    copy = replace(target, id="copy-of-a2")
    for seed in range(20):
        chosen = choose_exemplars(AIRLINE, [*pool, copy], target, 4, seed)
        assert {c.id for c in chosen} == {"a0", "a1", "a3", "a4"}
    assert choose_exemplars(AIRLINE, pool, target, 0, 0) == []
    with pytest.raises(DataError):
        choose_exemplars(AIRLINE, [target], target, 1, 0)


@needs_mirror
def test_choice_does_not_depend_on_pythons_hash_seed(
    hard: dict[str, list[Case]], pools: dict[str, tuple[list[Case], str]]
) -> None:
    script = (
        "import os\n"
        "from deonticbench.data.cases import load_cases, resolve_source\n"
        "from deonticbench.data.domains import SARA_BINARY as d\n"
        "from deonticbench.prompting import choose_exemplars, exemplar_pool\n"
        "s = resolve_source(os.environ['DEONTICBENCH_DATA'])\n"
        "pool, _ = exemplar_pool(d, s)\n"
        "case = load_cases(d, 'hard', s)[3]\n"
        "print(' '.join(c.id for c in choose_exemplars(d, pool, case, 3, 7)))\n"
    )
    env = {**os.environ, "PYTHONHASHSEED": "12345", "DEONTICBENCH_DATA": str(MIRROR)}
    out = subprocess.run(
        [sys.executable, "-c", script], env=env, capture_output=True, text=True, check=True
    ).stdout.split()
    here = choose_exemplars(SARA_BINARY, pools["sara_binary"][0], hard["sara_binary"][3], 3, 7)
    assert out == [c.id for c in here]


# --- demonstrated programs ----------------------------------------------------------------


@needs_mirror
def test_demonstrations_carry_no_label_lines_or_fences(
    hard: dict[str, list[Case]], pools: dict[str, tuple[list[Case], str]]
) -> None:
    for name, (pool, _) in pools.items():
        domain = DOMAINS[name]
        # Hard cases hold the Label directives; use them as exemplar material here too.
        for case in [*pool, *hard[name]]:
            shown = demonstration(domain, case)
            assert "Label:" not in shown, case.id
            assert not re.search(r"^\s*(```|~~~)", shown, re.MULTILINE), case.id
            if name in ENTRY_DOMAINS:
                assert re.search(r"^main\s*:-", shown, re.MULTILINE), case.id
                assert shown.rstrip().endswith(":- initialization(main, main).")


def _run_swipl(program: str, tmp_path: Path) -> subprocess.CompletedProcess[str]:
    path = tmp_path / "program.pl"
    path.write_text(program + "\n")
    return subprocess.run(
        ["swipl", str(path)],
        stdin=subprocess.DEVNULL,
        capture_output=True,
        text=True,
        timeout=30,
    )


needs_swipl = pytest.mark.skipif(shutil.which("swipl") is None, reason="swipl is not installed")


def _demonstrated_cases(
    hard: dict[str, list[Case]], pools: dict[str, tuple[list[Case], str]]
) -> Iterator[tuple[Domain, Case]]:
    # The exemplars the first two hard cases of each domain actually get at seed 0.
    for name, (pool, _) in pools.items():
        domain = DOMAINS[name]
        seen: set[str] = set()
        for case in hard[name][:2]:
            for shot in choose_exemplars(domain, pool, case, None, 0):
                if shot.id not in seen:
                    seen.add(shot.id)
                    yield domain, shot


@needs_mirror
@needs_swipl
def test_demonstrated_programs_run_cleanly_and_print_their_gold(
    hard: dict[str, list[Case]], pools: dict[str, tuple[list[Case], str]], tmp_path: Path
) -> None:
    checked = 0
    for domain, shot in _demonstrated_cases(hard, pools):
        done = _run_swipl(demonstration(domain, shot), tmp_path)
        assert done.returncode == 0 and not done.stderr.strip(), (shot.id, done.stderr)
        answer = read_program_answer(domain, done.stdout)
        if domain.label_kind == "numeric":
            assert answer.value is not None and abs(round(float(answer.value)) - int(shot.gold)) < 1
        else:
            assert answer.value == shot.gold, (shot.id, done.stdout)
        checked += 1
    assert checked >= len(DOMAINS)


@needs_swipl
def test_synthetic_housing_exemplars_run_and_print_their_gold(tmp_path: Path) -> None:
    rows = json.loads((PROMPTS / "housing" / "exemplars.json").read_text())
    assert len(rows) >= 2
    for row in rows:
        case = Case(
            domain="housing",
            id=row["id"],
            question=row["question"],
            gold=row["label"],
            reference_prolog=row["reference_prolog"],
            statutes=row["statutes"],
            extra={"state": row["state"]},
        )
        done = _run_swipl(demonstration(HOUSING, case), tmp_path)
        assert done.returncode == 0 and not done.stderr.strip(), done.stderr
        assert done.stdout.strip() == f"housing_answer({row['label']})."


@needs_mirror
@needs_swipl
def test_excluded_pool_programs_really_fail(
    source: DataSource, hard: dict[str, list[Case]], tmp_path: Path
) -> None:
    """The exclusion lists are not stale: each listed id is a non-hard whole case whose
    demonstration does not run cleanly (a sample of five per domain is run)."""
    for name, domain in DOMAINS.items():
        listed = excluded_ids(domain)
        if not listed:
            continue
        whole = {c.id: c for c in load_cases(domain, "whole", source)}
        assert listed <= set(whole), sorted(listed - set(whole))[:5]
        assert not listed & {c.id for c in hard[name]}
        for case_id in sorted(listed)[:5]:
            case = whole[case_id]
            done = _run_swipl(demonstration(domain, case), tmp_path)
            answer = read_program_answer(domain, done.stdout)
            if domain.label_kind == "numeric":
                right = (
                    answer.value is not None
                    and abs(round(float(answer.value)) - int(case.gold)) < 1
                )
            else:
                right = answer.value == case.gold
            clean = done.returncode == 0 and not done.stderr.strip()
            assert not (right and clean), case_id


# --- retry with feedback ------------------------------------------------------------------


@needs_mirror
@pytest.mark.parametrize("name", list(DOMAINS))
def test_feedback_prompt_quotes_program_and_output_but_not_the_gold(
    name: str, hard: dict[str, list[Case]]
) -> None:
    case = hard[name][0]
    prompt = render(case, "zero-shot")
    program = "main :- undefined_thing(X), format('~w~n', [X]).\n:- initialization(main, main)."
    output = (
        "Warning: goal (initialization) raised exception:\nUnknown procedure: undefined_thing/1"
    )
    response = f"Here is my program:\n```prolog\n{program}\n```"
    retry = render_feedback(prompt, response, program, output)
    assert retry.messages[: len(prompt.messages)] == prompt.messages
    assert retry.messages[-2] == Message(role="assistant", content=response)
    last = retry.messages[-1]
    assert last.role == "user"
    assert program in last.content and output in last.content
    assert "Label:" not in last.content
    if case.domain != "housing":  # "yes"/"no" are everyday words; the rest are not
        assert str(case.gold) not in last.content
    assert retry.template == f"{name}/zero-shot+feedback"
    assert retry.template_hash != prompt.template_hash
    assert retry.prompt_hash != prompt.prompt_hash
    assert render_feedback(prompt, response, program, output) == retry


def test_feedback_without_a_program_and_with_long_output() -> None:
    prompt = render(_braced_case(AIRLINE, "c", 1), "zero-shot")
    retry = render_feedback(prompt, "I think the answer is 12.", None, "no ```prolog block found")
    assert "nothing was run" in retry.messages[-1].content
    assert "no ```prolog block found" in retry.messages[-1].content

    noisy = "".join(f"line {i}\n" for i in range(5000))
    retry = render_feedback(prompt, "x", "p.", noisy)
    content = retry.messages[-1].content
    assert "line 0\n" in content and "line 4999" in content
    assert "characters omitted" in content
    assert len(content) < FEEDBACK_OUTPUT_LIMIT + 2000


def test_the_solver_report_is_worded_by_its_templates() -> None:
    from deonticbench.prompting import solver_report

    airline = AIRLINE
    crashed = solver_report(
        airline,
        status="error",
        limit=None,
        stdout="",
        stderr="ERROR: /tmp/job-81/program.pl:3:\n  Unknown procedure: foo/0",
        no_answer=None,
    )
    assert crashed == (
        "Running the program with SWI-Prolog ended with status error.\n\n"
        "stderr:\nERROR: program.pl:3:\n  Unknown procedure: foo/0\n\n"
        "stdout:\n(empty)"
    )
    silent = solver_report(
        airline, status="ok", limit=None, stdout="hello {x}", stderr="", no_answer="no output"
    )
    assert silent == (
        "Running the program with SWI-Prolog ended with status ok.\n\n"
        "It printed no readable answer (no output); the program must print exactly one "
        f"line of the form {airline.answer_line}.\n\nstdout:\nhello {{x}}"
    )
    killed = solver_report(
        airline, status="timeout", limit="wall", stdout="x" * 2000, stderr="", no_answer=None
    )
    assert killed.startswith(
        "Running the program with SWI-Prolog ended with status timeout (limit hit: wall)."
    )
    assert killed.endswith("stdout:\n(cut) ...\n" + "x" * 1500)


def test_modes_parse_the_agentic_ones_and_all_stays_the_papers_three() -> None:
    from deonticbench.errors import ConfigError
    from deonticbench.vocabulary.modes import (
        MODES,
        agentic_counterpart,
        is_agentic,
        parse_modes,
        prompted_counterpart,
    )

    assert parse_modes("all") == MODES
    assert parse_modes("agent-zero-shot,direct,agent-zero-shot") == ("agent-zero-shot", "direct")
    assert is_agentic("agent-direct") and not is_agentic("direct")
    assert prompted_counterpart("agent-few-shot") == "few-shot"
    assert agentic_counterpart("zero-shot") == "agent-zero-shot"
    with pytest.raises(ConfigError, match="agent-few-shot"):
        parse_modes("agent-two-shot")
