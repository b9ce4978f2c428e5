"""``deonticbench import-upstream``: outputs in the layout upstream's generate_e2e.py writes,
built from real hard cases (replies made from reference programs, some broken), become a
run folder whose ``upstream_bootstrap`` equals what upstream's own scripts give for the
same outputs (process_generated_prolog.py, run_swipl.sh, bootstrap_outputs.py's parsers
and bootstrap_accuracy, run from the shared mirror)."""

from __future__ import annotations

import importlib.util
import json
import os
import shutil
import subprocess
import sys
from dataclasses import dataclass
from pathlib import Path
from types import ModuleType
from typing import Any

import pytest
from shared_work import shared_folder

from deonticbench.cli import main
from deonticbench.data.cases import Case, load_cases
from deonticbench.data.domains import DOMAINS
from deonticbench.data.sources import resolve_source

DATA = Path(
    os.environ.get("DEONTICBENCH_DATA")
    or Path(__file__).resolve().parents[3] / "shared" / "deonticbench-data"
)
SCRIPTS = DATA / "scripts"
CASES_PER_DOMAIN = 5
MODEL = "openai/gpt-test"
FILES = {"direct": "source.json", "few_shot": "prolog.json", "zero_shot": "standalone_prolog.json"}
OUR_MODE = {"direct": "direct", "few_shot": "few-shot", "zero_shot": "zero-shot"}

pytestmark = [
    pytest.mark.skipif(not (SCRIPTS / "run_swipl.sh").is_file(), reason="no upstream scripts"),
    pytest.mark.skipif(shutil.which("swipl") is None, reason="swipl is not installed"),
]


def upstream_script() -> ModuleType:
    spec = importlib.util.spec_from_file_location(
        "upstream_bootstrap_outputs", SCRIPTS / "bootstrap_outputs.py"
    )
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def program_reply(case: Case, other: Case, sample: int, index: int) -> tuple[str, str]:
    """(reply, status) of a program mode: the reference program in several wrappings,
    another case's (mostly a wrong answer), and broken ones."""
    kind = (sample + index) % 6
    if kind == 5:
        return f"```prolog\n{other.reference_prolog}\n```\n```prolog\nfoo.\n```", "ok"
    if kind == 0:
        return f"Here is the program.\n```prolog\n{case.reference_prolog}\n```\n", "ok"
    if kind == 1:
        return f"```\n{case.reference_prolog}\n```", "ok"
    if kind == 2:
        return "```prolog\nthis is ( not prolog.\n```", "ok"
    if kind == 3:
        return "I cannot write this program.", "ok"
    return "", "empty_output"


def direct_reply(case: Case, sample: int, index: int) -> tuple[str, str]:
    kind = (sample + index) % 5
    gold = case.gold
    if kind == 0:
        return f"Reasoning...\n\\boxed{{{gold}}}", "ok"
    if kind == 1:
        wrong = (
            gold + 500
            if isinstance(gold, int)
            else next(c for c in DOMAINS[case.domain].classes if c != gold)
        )
        return f"The answer is {wrong}.", "ok"
    if kind == 2:
        return "I am not sure.", "ok"
    if kind == 3:
        return f"Answer: {gold}", "ok"
    return "", "request_error"


def upstream_label(upstream: ModuleType, domain: str, raw: Any) -> Any:
    if domain == "housing":
        return upstream._norm_housing(raw)
    if domain == "uscis":
        return upstream._norm_uscis(raw)
    return int(raw)


def build_outputs(root: Path, upstream: ModuleType) -> None:
    source = resolve_source(DATA)
    for dom in DOMAINS.values():
        raw = json.loads((DATA / "data" / dom.mirror_dir / "hard.json").read_text())
        cases = load_cases(dom, "hard", source)[:CASES_PER_DOMAIN]
        for folder, file_name in FILES.items():
            rows = []
            for index, (case, row) in enumerate(zip(cases, raw, strict=False)):
                other = cases[(index + 1) % len(cases)]
                replies = [
                    direct_reply(case, s, index)
                    if folder == "direct"
                    else program_reply(case, other, s, index)
                    for s in range(dom.default_k)
                ]
                rows.append(
                    {
                        "text": row.get("text", ""),
                        "question": row["question"],
                        "label": upstream_label(upstream, dom.name, row["label"]),
                        "prompt": f"prompt of {case.id}",
                        "dataset": dom.name,
                        "id": case.id,
                        "answers": [r for r, _ in replies],
                        "generation_statuses": [s for _, s in replies],
                        "generation_errors": [None if s == "ok" else s for _, s in replies],
                        "generated_tokens": 100,
                        "prompt_tokens": 1000,
                    }
                )
            target = root / dom.name / folder / MODEL / file_name
            target.parent.mkdir(parents=True)
            target.write_text(json.dumps(rows, indent=2))


def upstream_swipl_outputs(root: Path, work: Path) -> dict[tuple[str, str], str]:
    """What upstream's process_generated_prolog.py then run_swipl.sh print for each
    program-mode output file of ``root``, by (domain, folder): the ten pipelines run at
    once, each as released."""
    running = {}
    for dom in DOMAINS.values():
        for folder in ("few_shot", "zero_shot"):
            pl_dir = work / dom.name / folder
            script = (
                '"$PYTHON" "$SCRIPTS/process_generated_prolog.py" --llm-output "$SOURCE"'
                ' --save-dir "$PROGRAMS" --dataset "$DATASET" > /dev/null'
                ' && bash "$SCRIPTS/run_swipl.sh" "$PROGRAMS"'
            )
            env = {**os.environ, "TIMEOUT_DURATION": "10", "PYTHON": sys.executable,
                   "SCRIPTS": str(SCRIPTS), "PROGRAMS": str(pl_dir), "DATASET": dom.name,
                   "SOURCE": str(root / dom.name / folder / MODEL / FILES[folder])}  # fmt: skip
            running[(dom.name, folder)] = subprocess.Popen(
                ["bash", "-c", script],
                env=env,
                stdout=subprocess.PIPE,
                stderr=subprocess.PIPE,
                text=True,
            )
    out = {}
    for key, process in running.items():
        stdout, stderr = process.communicate(timeout=600)
        assert process.returncode == 0, f"{key}: upstream's scripts failed: {stderr[-2000:]}"
        out[key] = stdout
    return out


@dataclass(frozen=True)
class Upstream:
    """The outputs folder ``build_outputs`` writes (read only: a test that adds to it
    copies it) and what upstream's scripts print for its programs, made once per session
    for both tests that read them (``shared_work``)."""

    outputs: Path
    swipl: dict[tuple[str, str], str]

    def copy(self, to: Path) -> Path:
        shutil.copytree(self.outputs, to)
        return to


def _made(folder: Path) -> None:
    build_outputs(folder / "outputs", upstream_script())
    printed = upstream_swipl_outputs(folder / "outputs", folder / "pl")
    for (domain, mode), text in printed.items():
        (folder / f"{domain}-{mode}.txt").write_text(text, encoding="utf-8")


@pytest.fixture(scope="session")
def made_upstream(tmp_path_factory: pytest.TempPathFactory) -> Upstream:
    folder = shared_folder(tmp_path_factory, "import-upstream-outputs", _made)
    swipl = {
        (dom, mode): (folder / f"{dom}-{mode}.txt").read_text(encoding="utf-8")
        for dom in DOMAINS
        for mode in ("few_shot", "zero_shot")
    }
    return Upstream(folder / "outputs", swipl)


def upstream_figures(
    made: Upstream, work: Path, upstream: ModuleType
) -> dict[tuple[str, str], Any]:
    """What upstream's scripts give for every file of the outputs folder."""
    out = {}
    work.mkdir(parents=True, exist_ok=True)
    for dom in DOMAINS.values():
        labels = upstream.load_labels(dom.name)
        for folder, file_name in FILES.items():
            path = made.outputs / dom.name / folder / MODEL / file_name
            if folder == "direct":
                combined = upstream.parse_source_json(str(path), dom.name)
            else:
                txt = work / f"{dom.name}-{folder}.txt"
                txt.write_text(made.swipl[(dom.name, folder)])
                combined = upstream.parse_swipl_txt(str(txt), dom.name, labels)
            out[(dom.name, OUR_MODE[folder])] = upstream.bootstrap_accuracy(combined, dom.name)
    return out


def replay_lines(root: Path) -> str:
    """The generated replies of ``root`` as a replay file (a reply upstream recorded as not
    generated has none: the replay model then fails that request, as upstream's did)."""
    lines = []
    for path in sorted(root.rglob("*.json")):
        domain, folder = path.relative_to(root).parts[:2]
        for row in json.loads(path.read_text()):
            for sample, (reply, status) in enumerate(
                zip(row["answers"], row["generation_statuses"], strict=True)
            ):
                if status == "ok":
                    entry = {"domain": domain, "case_id": row["id"], "mode": OUR_MODE[folder],
                             "sample": sample, "response": reply}  # fmt: skip
                    lines.append(json.dumps(entry) + "\n")
    return "".join(lines)


def first_outcomes(run: Path) -> dict[tuple[str, str, str, int], tuple[Any, Any]]:
    return {
        (r["domain"], r["case_id"], r["mode"], r["sample"]): (r["first_outcome"], r["first_answer"])
        for r in map(json.loads, (run / "records.jsonl").read_text().splitlines())
    }


@pytest.mark.slow
def test_imported_outputs_score_as_upstreams_scripts_score_them(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], made_upstream: Upstream
) -> None:
    upstream = upstream_script()
    outputs = made_upstream.copy(tmp_path / "outputs")
    run = tmp_path / "run"
    argv = [
        "import-upstream",
        str(outputs),
        "--out",
        str(run),
        "--data-dir",
        str(DATA),
        "--timeout",
        "10",
    ]
    assert main(argv) in (None, 0)
    config = json.loads((run / "config.json").read_text())
    assert config["protocol"] == "paper" and config["model"]["spec"] == MODEL
    assert config["k"] == {d.name: d.default_k for d in DOMAINS.values()}

    expected = upstream_figures(made_upstream, tmp_path / "upstream", upstream)
    assert main(["score", str(run), "--out", str(tmp_path / "scored")]) in (None, 0)
    results = json.loads((tmp_path / "scored" / "results.json").read_text())
    got = results["upstream_bootstrap"]
    for (domain, mode), stats in expected.items():
        assert got[domain][mode] == stats, (domain, mode)
    assert len(expected) == 15
    # Its empty generations are failed requests, to be redone where they were made.
    failed = [n for n in results["notes"] if "because the request failed" in n]
    assert failed and all("import again" in n and "--retry-errors" not in n for n in failed)

    # the same replies sent through eval --protocol paper (replayed) give the same records
    replay = tmp_path / "replay.jsonl"
    replay.write_text(replay_lines(outputs))
    live = tmp_path / "live"
    sent = ["eval", "--model", f"replay:{replay}", "--protocol", "paper", "--split", "hard",
            "--limit", str(CASES_PER_DOMAIN), "--attempts", "1", "--timeout", "10",
            "--data-dir", str(DATA), "--no-cache", "--out", str(live)]  # fmt: skip
    assert main(sent) in (None, 0)
    imported, replayed = first_outcomes(run), first_outcomes(live)
    assert imported.keys() == replayed.keys() and len(imported) == 270
    assert imported == replayed

    # the same folder again is refused, and nothing of it is lost
    before = (run / "records.jsonl").read_bytes()
    with pytest.raises(SystemExit) as stop:
        main(argv)
    assert stop.value.code == 2 and "already holds a run" in capsys.readouterr().err
    assert (run / "records.jsonl").read_bytes() == before


def _write(path: Path, rows: Any) -> Path:
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(json.dumps(rows))
    return path


@pytest.mark.parametrize(
    ("layout", "says"),
    [
        ({}, "holds no output of upstream's generate_e2e.py"),
        ({"bogus/direct/openai/m/source.json": []}, "unknown domain(s) bogus"),
        ({"airline/direct/source.json": []}, "its model cannot be told"),
        (
            {"airline/direct/a/m/source.json": [], "airline/direct/b/m/source.json": []},
            "outputs of 2 models (a/m, b/m); choose one with --model",
        ),
        ({"airline/direct/a/m/source.json": {"not": "a list"}}, "is not an output of"),
        (
            {"airline/direct/a/m/source.json": [{"id": "nope", "answers": []}]},
            "case nope is not a case of the hard split of airline",
        ),
    ],
)
def test_a_folder_that_is_not_upstreams_layout_is_one_sentence_and_exit_2(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], layout: dict[str, Any], says: str
) -> None:
    root = tmp_path / "outputs"
    root.mkdir()
    for relative, rows in layout.items():
        _write(root / relative, rows)
    with pytest.raises(SystemExit) as stop:
        main(
            ["import-upstream", str(root), "--out", str(tmp_path / "run"), "--data-dir", str(DATA)]
        )
    err = capsys.readouterr().err
    assert stop.value.code == 2 and says in err and "Traceback" not in err
    assert err.count("\n") == 1
    assert not (tmp_path / "run").exists()


def _other_machine(txt: str, domain: str, labels: list[Any]) -> str:
    """``txt`` as another machine's run might have printed it: every other program's
    output replaced, alternately by the right verdict and by an error (what this
    sandbox prints for these programs is the untouched ``txt``)."""
    verdicts = {
        "sara_numeric": lambda g: f"Tax result: {g}",
        "airline": lambda g: f"Total cost: {g}",
        "sara_binary": lambda g: "Result: " + ("Entailment" if g == 1 else "Contradiction"),
        "uscis": lambda g: "Accepted" if g == 1 else "Dismissed",
        "housing": lambda g: f"housing_answer({'yes' if g == 1 else 'no'}).",
    }
    out: list[str] = []
    block = 0
    skipping = False
    for line in txt.splitlines():
        if line.strip().endswith(".pl") and "/" in line:
            out.append(line)
            block += 1
            case = int(line.rsplit("_case_", 1)[1].split("_")[0])
            skipping = block % 2 == 0
            if skipping:
                right = block % 4 == 0
                out.append(verdicts[domain](labels[case - 1]) if right else "ERROR: out of stack")
            continue
        if not skipping or line.startswith("Label:"):
            out.append(line)
    return "".join(f"{line}\n" for line in out)


@pytest.mark.slow
def test_upstreams_own_program_outputs_are_read_not_run_again(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], made_upstream: Upstream
) -> None:
    """With ``<domain>/swipl/<mode>/<model>-<mode>.txt`` in the outputs
    folder, an imported run equals bootstrap_outputs.py's figures for those very files,
    here outputs that differ from what this sandbox prints for the same programs; a
    mode without such a file is run again here, and config.json and the command say so."""
    upstream = upstream_script()
    outputs = made_upstream.copy(tmp_path / "outputs")
    plain: dict[tuple[str, str], Any] = {}
    for dom in DOMAINS.values():
        labels = upstream.load_labels(dom.name)
        for folder in ("few_shot", "zero_shot"):
            txt = made_upstream.swipl[(dom.name, folder)]
            suffix = folder.replace("_", "")
            target = outputs / dom.name / "swipl" / folder / f"gpt-test-{suffix}.txt"
            target.parent.mkdir(parents=True)
            target.write_text(txt)
            combined = upstream.parse_swipl_txt(str(target), dom.name, labels)
            plain[(dom.name, folder)] = upstream.bootstrap_accuracy(combined, dom.name)
            target.write_text(_other_machine(txt, dom.name, labels))
    # One mode keeps no output of upstream's: its programs are run again here.
    (outputs / "airline" / "swipl" / "zero_shot" / "gpt-test-zeroshot.txt").unlink()

    run = tmp_path / "run"
    argv = ["import-upstream", str(outputs), "--out", str(run), "--data-dir", str(DATA)]
    assert main(argv) in (None, 0)
    said = capsys.readouterr().out
    assert "programs of airline zero-shot: run again in this machine's sandbox" in said
    assert "programs of airline few-shot: airline/swipl/few_shot/gpt-test-fewshot.txt" in said
    assert "12 programs were run again in this machine's sandbox" in said
    config = json.loads((run / "config.json").read_text())
    assert config["upstream"]["programs_run_again"] == 12
    assert config["upstream"]["programs"]["housing few-shot"].endswith("gpt-test-fewshot.txt")

    expected: dict[tuple[str, str], Any] = {}
    labels_of = {d: upstream.load_labels(d) for d in DOMAINS}
    for domain, mode, _, path in upstream.discover_runs(outputs, list(DOMAINS), upstream.ALL_MODES):
        combined = (
            upstream.parse_swipl_txt(path, domain, labels_of[domain])
            if mode != "direct"
            else upstream.parse_source_json(path, domain)
        )
        expected[(domain, mode)] = upstream.bootstrap_accuracy(combined, domain)
    # airline zero-shot: upstream's figures for the programs as this sandbox runs them
    expected[("airline", "zero_shot")] = plain[("airline", "zero_shot")]
    assert len(expected) == 15
    assert main(["score", str(run), "--out", str(tmp_path / "scored")]) in (None, 0)
    got = json.loads((tmp_path / "scored" / "results.json").read_text())["upstream_bootstrap"]
    for (domain, folder), stats in expected.items():
        assert got[domain][OUR_MODE[folder]] == stats, (domain, folder)
    # and those files are not what this sandbox prints: run again, they would score otherwise
    changed = [k for k, v in plain.items() if k != ("airline", "zero_shot") and expected[k] != v]
    assert len(changed) >= 7, changed
