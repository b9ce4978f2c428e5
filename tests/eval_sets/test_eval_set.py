"""``deonticbench eval-set`` as a user runs it, against the loopback fakes of OpenAI,
Anthropic and an OpenAI-compatible server (``fakeproviders``: the real clients, the
providers' billing of prompt caching), each set written into a temporary folder and run
in a subprocess with placeholder keys and a response cache of its own.

What a set promises, each checked on the fakes' own logs and bills:

* a set's run records what the same run records alone, and sends the same requests;
* the set's dry run is the sum of its runs' ``eval --dry-run`` and is the bill's input
  within 2 %;
* under ``--max-usd`` the bill ends within one request of the cap (past it by at most
  one), the set stops with exit 3 saying what is left and keeping a record of every
  sample it paid for, and the same command
  with a higher cap completes having paid, over both invocations, exactly what one
  uncapped set pays: no request answered twice (and the budget reaches its cap when
  nothing is in flight, whatever the float residue of its reservations);
* killed mid-set, the same command completes and pays again at most the requests that
  were in flight at the kill;
* a bad set file is refused in one sentence naming the entry, before any request;
* a finished set's spend (per run, the set's, the ledger's) adds up, and is the bill.
"""

from __future__ import annotations

import asyncio
import json
import re
import time
from collections import Counter
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest
from cost_runs import DATA, KEY, claude_stand_in, o200k, price_bill
from fakeproviders import Billed, FakeProvider
from set_runs import (
    answered,
    eval_set,
    json_of,
    kill_group,
    ledger_usd,
    records_of,
    run_cli,
    scripted_answer,
    start_eval_set,
    urls_of,
    write_set,
)

pytestmark = pytest.mark.skipif(
    not Path(DATA, "data").is_dir(), reason="the shared data mirror is not available"
)

GPT = "openai:gpt-4.1"
CLAUDE = "anthropic:claude-sonnet-4-5"
API_OF = {GPT: "openai", CLAUDE: "anthropic"}


def billing_fake(**kwargs: Any) -> FakeProvider:
    """A fake that bills as the providers do: gpt-4.1's own encoding, the denser Claude
    stand-in, and scripted answers that differ from case to case."""
    return FakeProvider(
        scripted_answer,
        api_key=KEY,
        tokenizer=o200k(),
        claude_tokenizer=claude_stand_in(),
        **kwargs,
    )


def bill_of(fake: FakeProvider, spec: str) -> list[Billed]:
    return [b for b in fake.bill if b.api == API_OF[spec]]


def usd_of(fake: FakeProvider) -> float:
    """The fake's whole bill at the published prices (both providers)."""
    return sum(price_bill(bill_of(fake, spec), spec).usd for spec in (GPT, CLAUDE))


# --- one set of three providers, run once for the tests that read it -----------------

SELECTION = {"split": "smoke", "domains": "airline", "modes": "direct,zero-shot", "k": 2,
             "attempts": 1}  # fmt: skip
COMPATIBLE_MODEL = "open-weights-7b"


@dataclass
class FinishedSet:
    home: Path
    set_file: Path
    folder: Path
    runs: list[dict[str, Any]]
    """The set file's entries, each with its spec (``model``) and its folder ``name``."""
    dry: dict[str, Any]
    done: dict[str, Any]
    fake: FakeProvider
    server: FakeProvider
    """The OpenAI-compatible server."""
    sent_by_set: Counter[str]
    sent_to_server_by_set: Counter[str]


@pytest.fixture(scope="module")
def finished(tmp_path_factory: pytest.TempPathFactory) -> Iterator[FinishedSet]:
    """A set of gpt-4.1, claude-sonnet-4-5 and a model behind an OpenAI-compatible
    server (a second fake), priced by a dry run and then run to the end."""
    home = tmp_path_factory.mktemp("set")
    with billing_fake() as fake, FakeProvider(scripted_answer) as server:
        compatible = f"openai-compatible:{COMPATIBLE_MODEL}@{server.openai_url}"
        runs = [
            {"model": GPT},
            {"model": CLAUDE, "name": "sonnet"},
            {"model": compatible, "name": "open", "k": 1},
        ]
        set_file = write_set(home / "three.yaml", runs, **SELECTION)
        folder = home / "three"
        dry = eval_set(urls_of(fake), home, set_file, "--out", str(folder), "--dry-run", "--json")
        assert dry.returncode == 0, dry.stderr
        # A dry run generates nothing (Anthropic's free count_tokens aside).
        assert fake.generation_requests() == [] and server.log == []
        assert not (folder / "spend.jsonl").exists()
        done = eval_set(urls_of(fake), home, set_file, "--out", str(folder), "--json")
        assert done.returncode == 0, done.stderr
        named = [{**r, "name": r.get("name", "gpt-4.1")} for r in runs]
        yield FinishedSet(
            home, set_file, folder, named, json_of(dry), json_of(done), fake, server,
            answered(fake), answered(server),
        )  # fmt: skip


def entry_args(entry: dict[str, Any]) -> list[str]:
    """A set entry (with the defaults) as eval's command line."""
    merged = {**SELECTION, **{k: v for k, v in entry.items() if k != "name"}}
    args: list[str] = []
    for key, value in merged.items():
        args += [f"-{key}" if key == "k" else f"--{key}", str(value)]
    return args


@pytest.mark.slow
def test_each_run_of_a_set_records_and_sends_what_it_does_alone(
    finished: FinishedSet, tmp_path: Path
) -> None:
    for entry in finished.runs:
        home = tmp_path / entry["name"]
        home.mkdir()
        # The same run alone: a fresh fake, a response cache of its own.
        with billing_fake() as fake, FakeProvider(scripted_answer) as server:
            args = entry_args(entry)
            if entry["name"] == "open":
                model = f"openai-compatible:{COMPATIBLE_MODEL}@{server.openai_url}"
                args[args.index("--model") + 1] = model
            alone = home / "alone"
            done = run_cli(urls_of(fake), home, "eval", *args, "--out", str(alone))
            assert done.returncode == 0, done.stderr
            in_set = records_of(finished.folder / entry["name"])
            assert len(in_set) == 5 * 2 * int(entry.get("k", 2))  # cases x modes x K
            assert records_of(alone) == in_set, entry["name"]
            # The same requests went out, each as often (the set's run is not sent twice,
            # the server's run not sent to the providers' fake, nor theirs to it).
            if entry["name"] == "open":
                assert answered(server) == finished.sent_to_server_by_set
                assert fake.log == []
            else:
                api = API_OF[entry["model"]]
                mine = Counter(
                    {k: n for k, n in finished.sent_by_set.items() if k.startswith(api + " ")}
                )
                assert answered(fake) == mine and sum(mine.values()) > 0
                assert server.log == []
    # The set's runs are distinct answers, not copies of one another.
    answers = {e["name"]: [r["answer"] for r in records_of(finished.folder / e["name"])]
               for e in finished.runs}  # fmt: skip
    assert answers["gpt-4.1"] != answers["sonnet"]


@pytest.mark.slow
def test_the_set_dry_run_is_its_runs_dry_runs_summed_and_the_bill_within_2_percent(
    finished: FinishedSet, tmp_path: Path
) -> None:
    # Each run's own eval --dry-run, against the same fake (Anthropic's count_tokens).
    alone = []
    for entry in finished.runs:
        args = entry_args(entry)
        out = tmp_path / entry["name"]
        done = run_cli(
            urls_of(finished.fake), tmp_path, "eval", *args, "--out", str(out), "--dry-run",
            "--json",
        )  # fmt: skip
        assert done.returncode == 0, done.stderr
        alone.append(json_of(done))
    total = finished.dry["total"]
    for key in ("calls", "prompt_tokens", "samples_left"):
        assert total[key] == sum(int(doc[key]) for doc in alone), key
    assert total["usd_input"] == pytest.approx(sum(d["usd_input"] or 0 for d in alone), abs=2e-6)
    by_run = {r["name"]: r for r in finished.dry["runs"]}
    for entry, doc in zip(finished.runs, alone, strict=True):
        assert by_run[entry["name"]]["calls"] == doc["calls"]
        assert by_run[entry["name"]]["usd_input"] == doc["usd_input"]
    # Calls: n = K on OpenAI (one call a case and mode), K calls on Anthropic.
    assert [by_run[e["name"]]["calls"] for e in finished.runs] == [10, 20, 10]
    # The server's model has no price: counted as $0, and named.
    assert finished.dry["unpriced_runs"] == ["open"]
    assert by_run["open"]["usd"] is None
    # The priced runs' input against what the fakes billed for it.
    bills = {spec: price_bill(bill_of(finished.fake, spec), spec) for spec in (GPT, CLAUDE)}
    assert by_run["gpt-4.1"]["calls"] == bills[GPT].calls
    assert by_run["sonnet"]["calls"] == bills[CLAUDE].calls
    assert by_run["gpt-4.1"]["usd_input"] == pytest.approx(bills[GPT].input_usd, rel=0.02)
    assert by_run["sonnet"]["usd_input"] == pytest.approx(bills[CLAUDE].input_usd, rel=0.02)
    billed_input = sum(b.input_usd for b in bills.values())
    assert total["usd_input"] == pytest.approx(billed_input, rel=0.02)
    assert total["prompt_tokens"] - by_run["open"]["prompt_tokens"] == pytest.approx(
        sum(b.input_tokens for b in bills.values()), rel=0.02
    )
    # With output assumed: every sample's N tokens at each model's output price.
    done = eval_set(
        urls_of(finished.fake), tmp_path, finished.set_file, "--out", str(tmp_path / "fresh"),
        "--dry-run", "--json", "--assume-output-tokens", "100",
    )  # fmt: skip
    assert done.returncode == 0, done.stderr
    assumed = json_of(done)["total"]
    output = 20 * 100 * 8.00 / 1e6 + 20 * 100 * 15.00 / 1e6  # gpt-4.1, claude-sonnet-4-5
    assert assumed["usd_output"] == pytest.approx(output, abs=2e-6)
    assert assumed["usd"] == pytest.approx(total["usd"] + output, abs=2e-6)
    # The finished set's dry run: nothing left to pay, and what it spent.
    done = eval_set(
        urls_of(finished.fake), tmp_path, finished.set_file, "--out", str(finished.folder),
        "--dry-run", "--json",
    )  # fmt: skip
    assert done.returncode == 0, done.stderr
    left = json_of(done)
    assert left["total"]["calls"] == 0 and left["total"]["usd"] == 0
    assert left["spent_usd"] == finished.done["spent_usd"]
    # No dry run sent a generation.
    assert len(finished.fake.bill) == bills[GPT].calls + bills[CLAUDE].calls


@pytest.mark.slow
def test_a_finished_sets_spend_adds_up_per_run_in_the_ledger_and_on_the_bill(
    finished: FinishedSet,
) -> None:
    done = finished.done
    assert done["complete"] is True and done["stopped_by"] is None
    runs = {r["name"]: r for r in done["runs"]}
    assert [r["state"] for r in done["runs"]] == ["done"] * 3
    assert sum(r["spent_usd"] for r in done["runs"]) == pytest.approx(done["spent_usd"], abs=3e-6)
    assert ledger_usd(finished.folder) == pytest.approx(done["spent_usd"], abs=1e-6)
    # What the set says it spent is what the fake billed, at the registry's prices.
    assert runs["gpt-4.1"]["spent_usd"] == pytest.approx(
        price_bill(bill_of(finished.fake, GPT), GPT).usd, rel=1e-4
    )
    assert runs["sonnet"]["spent_usd"] == pytest.approx(
        price_bill(bill_of(finished.fake, CLAUDE), CLAUDE).usd, rel=1e-4
    )
    assert done["spent_usd"] == pytest.approx(usd_of(finished.fake), rel=1e-4)
    assert done["spent_usd"] > 0.05
    # The unpriced run spent nothing against the budget, and the set says so.
    assert runs["open"]["priced"] is False and runs["open"]["spent_usd"] == 0
    assert done["unpriced_runs"] == ["open"]
    assert runs["open"]["calls"] == len(finished.server.generation_requests()) == 10
    # Every provider a lane of its own: the two fakes' endpoints and the server.
    assert len(done["lanes"]) == 3


# --- refusals: one sentence naming the entry, before any request --------------------

REFUSED = {
    "an unknown key": (
        {"model": CLAUDE, "temprature": 0},
        r"run 2 \(anthropic:claude-sonnet-4-5\): unknown key 'temprature'",
    ),
    "the same run twice": (
        {"model": GPT, "name": "again"},
        r"run 2 \(openai:gpt-4.1\) is the same run as .*run 1 \(openai:gpt-4.1\)",
    ),
    "two runs into one folder": (
        {"model": GPT, "k": 2},
        r"run 2 \(openai:gpt-4.1\) would write the folder 'gpt-4.1', as .*run 1",
    ),
    "a bad value": (
        {"model": CLAUDE, "split": "nope"},
        r"run 2 \(anthropic:claude-sonnet-4-5\): .*'nope' is not one of",
    ),
    "a key of the whole set": (
        {"model": CLAUDE, "out": "elsewhere"},
        r"run 2 \(anthropic:claude-sonnet-4-5\): out is for the whole set",
    ),
}


@pytest.mark.parametrize("case", list(REFUSED))
def test_a_bad_set_is_refused_in_one_sentence_naming_the_entry_before_any_request(
    case: str, tmp_path: Path
) -> None:
    second, said = REFUSED[case]
    runs = [{"model": GPT}, second]
    set_file = write_set(tmp_path / "bad.yaml", runs, split="smoke", domains="airline",
                         modes="direct", k=1, attempts=1)  # fmt: skip
    with FakeProvider(scripted_answer, api_key=KEY) as fake:
        done = eval_set(urls_of(fake), tmp_path, set_file, "--out", str(tmp_path / "set"))
        sent = fake.log
    assert done.returncode == 2, done.stderr
    lines = done.stderr.strip().splitlines()
    assert len(lines) == 1, done.stderr
    assert lines[0].startswith("error: ") and lines[0].endswith("."), lines[0]
    assert re.search(said, lines[0]), lines[0]
    # One sentence: no full stop inside it but in the names of the models.
    assert ". " not in lines[0].removeprefix("error: ").rstrip("."), lines[0]
    assert done.stdout == ""
    assert sent == [] and not (tmp_path / "set").exists()


# --- one budget across invocations ---------------------------------------------------


async def test_the_cap_is_reached_when_nothing_is_in_flight_whatever_the_float_residue() -> None:
    """Reservations of 0.1 and 0.2 released leave 2.8e-17 of 0.3 - 0.1 - 0.2: a request
    that does not fit with none in flight reaches the cap; it does not wait for ever."""
    from deonticbench.evaluation.spending import Budget

    reached = asyncio.Event()
    budget = Budget(0.35, on_exhausted=reached.set)
    await budget.reserve(0.1, 0.1)
    await budget.reserve(0.2, 0.2)
    await budget.settle("run", 0.1, 0.1)
    await budget.settle("run", 0.2, 0.2)
    refused = asyncio.ensure_future(budget.reserve(0.1, 0.1))
    await asyncio.wait_for(reached.wait(), timeout=2)
    refused.cancel()
    assert budget.refused_usd == 0.1 and budget.spent_usd == pytest.approx(0.3)
    assert budget.reserved_usd == 0.0


async def test_near_the_cap_requests_go_one_at_a_time_each_when_its_expectation_fits() -> None:
    """Worst cases of 0.4 under a cap of 0.5: the first goes at once; the second has no
    room for its worst case, so it waits for the first, then goes alone on its expected
    0.15; a third waits for the second though it is asked meanwhile; the fourth, whose
    expectation no longer fits, reaches the cap.  The spend passes the cap by less than
    the last request."""
    from deonticbench.evaluation.spending import Budget

    reached = asyncio.Event()
    budget = Budget(0.5, on_exhausted=reached.set)
    await budget.reserve(0.4, 0.15)
    second = asyncio.ensure_future(budget.reserve(0.4, 0.15))
    await asyncio.sleep(0.01)
    assert not second.done()  # no room for its worst case beside the first's
    await budget.settle("run", 0.4, 0.15)
    await asyncio.wait_for(second, timeout=2)  # alone now, on its expectation
    third = asyncio.ensure_future(budget.reserve(0.4, 0.15))
    await asyncio.sleep(0.01)
    assert not third.done() and budget.in_flight == 1  # one at a time near the cap
    await budget.settle("run", 0.4, 0.2)
    await asyncio.wait_for(third, timeout=2)  # 0.35 spent + 0.15 expected fits 0.5
    await budget.settle("run", 0.4, 0.2)
    fourth = asyncio.ensure_future(budget.reserve(0.4, 0.15))
    await asyncio.wait_for(reached.wait(), timeout=2)
    fourth.cancel()
    assert budget.spent_usd == pytest.approx(0.55) and budget.spent_usd - 0.5 < 0.2
    assert budget.refused_usd == 0.15 and budget.left_usd == 0.0


# Housing's prompts (about 720 tokens) are under both providers' prompt-cache minimum
# (1,024): every call is billed the same whatever the order of sending, so two
# invocations and one can be compared to the nano-dollar.
HOUSING = {"protocol": "harness", "split": "hard", "domains": "housing", "limit": 10,
           "modes": "direct", "k": 2, "attempts": 1, "params": {"max_tokens": 64}}  # fmt: skip
LEFT = re.compile(
    r"stopped at the cap: \$([\d.]+) spent of \$([\d.]+); \$([\d.]+) left, less than the "
    r"next request is expected to cost \(\$([\d.]+)\)"
)


def samples_answered(fake: FakeProvider) -> int:
    """The samples the fake answered: n each OpenAI call, one each Anthropic call."""
    return sum(
        int(r.body.get("n") or 1) if r.api == "openai" else 1
        for r in fake.generation_requests()
        if r.billed
    )


def housing_set(home: Path) -> Path:
    return write_set(home / "budget.yaml", [{"model": GPT}, {"model": CLAUDE}], **HOUSING)


@pytest.mark.slow
def test_a_capped_set_ends_within_a_request_of_its_cap_and_a_higher_cap_pays_nothing_twice(
    tmp_path: Path,
) -> None:
    # The whole set, uncapped, on a fake of its own: what it costs and what it sends.
    full_home, capped_home = tmp_path / "full", tmp_path / "capped"
    full_home.mkdir(), capped_home.mkdir()
    with billing_fake() as fake:
        done = eval_set(urls_of(fake), full_home, housing_set(full_home), "--out", "set")
        assert done.returncode == 0, done.stderr
        full_usd, full_sent, full_bill = usd_of(fake), answered(fake), fake.bill
    assert len(full_bill) == 10 + 20  # OpenAI: n = K, a call a case; Anthropic: K calls
    dearest = max(price_bill([b], GPT if b.api == "openai" else CLAUDE).usd for b in full_bill)
    full_records = {n: records_of(full_home / "set" / n) for n in ("gpt-4.1", "claude-sonnet-4-5")}

    cap = round(full_usd / 2, 4)
    with billing_fake() as fake:
        set_file = housing_set(capped_home)
        done = eval_set(urls_of(fake), capped_home, set_file, "--out", "set", "--max-usd", str(cap))
        assert done.returncode == 3, done.stderr
        capped_usd, capped_calls = usd_of(fake), len(fake.bill)
        # Past the cap by at most one request: near it requests go one at a time, each
        # only when what it is expected to cost fits.
        assert 0 < capped_usd <= cap + dearest
        assert 0 < capped_calls < len(full_bill)
        # It says what is spent and what is left, and the figures are the bill's.
        said = LEFT.search(done.stderr)
        assert said, done.stderr
        spent, of, left, refused = map(float, said.groups())
        assert spent == pytest.approx(capped_usd, abs=5e-5) and of == pytest.approx(cap, abs=5e-5)
        assert left == pytest.approx(max(cap - capped_usd, 0.0), abs=5e-5) and left < refused
        # The last stretch spends the cap, not a fraction of it: what is left is less
        # than one request (the worst-case reservation alone stopped at a tenth of it).
        assert cap - capped_usd < dearest
        assert ledger_usd(capped_home / "set") == pytest.approx(capped_usd, abs=1e-6)
        kept = sum(
            len(records_of(capped_home / "set" / n)) for n in ("gpt-4.1", "claude-sonnet-4-5")
            if (capped_home / "set" / n / "records.jsonl").is_file()
        )  # fmt: skip
        assert 0 < kept < 2 * 10 * 2
        # Every sample paid for is a record: the cap stopped no run between a reply
        # and its record (the reply would be paid again).
        assert kept == samples_answered(fake)

        # The same command with a higher cap: it completes, and over both invocations the
        # fake answered each request as often as the uncapped set sent it.
        done = eval_set(
            urls_of(fake), capped_home, set_file, "--out", "set", "--max-usd", str(2 * full_usd),
            "--json",
        )  # fmt: skip
        assert done.returncode == 0, done.stderr
        doc = json_of(done)
        assert answered(fake) == full_sent
        assert usd_of(fake) == pytest.approx(full_usd, abs=1e-9)
    assert doc["complete"] is True and doc["spent_usd"] == pytest.approx(full_usd, abs=5e-6)
    assert ledger_usd(capped_home / "set") == pytest.approx(full_usd, abs=1e-6)
    assert {r["name"]: r["kept"] for r in doc["runs"]} != {"gpt-4.1": 0, "claude-sonnet-4-5": 0}
    for name, records in full_records.items():
        assert records_of(capped_home / "set" / name) == records


# --- a kill, then the same command -----------------------------------------------------

KILLED = {**HOUSING, "k": 1, "concurrency": 2}
LATENCY_S = 0.3


def records_on_disk(folder: Path) -> int:
    """The whole records in a set's run folders (a line a kill cut short is none)."""

    def whole(line: str) -> bool:
        try:
            return isinstance(json.loads(line), dict)
        except ValueError:
            return False

    return sum(
        sum(1 for line in path.read_text().splitlines() if whole(line))
        for path in folder.glob("*/records.jsonl")
    )


@pytest.mark.slow
def test_a_set_killed_mid_way_resumes_paying_again_only_what_was_in_flight(
    tmp_path: Path,
) -> None:
    set_file = write_set(tmp_path / "killed.yaml", [{"model": GPT}, {"model": CLAUDE}], **KILLED)
    folder = tmp_path / "set"
    with billing_fake(latency_s=LATENCY_S) as fake:
        process = start_eval_set(urls_of(fake), tmp_path, set_file, "--out", str(folder))
        try:
            deadline = time.monotonic() + 300
            while records_on_disk(folder) < 4:
                assert process.poll() is None, (tmp_path / "started.stderr").read_text()
                assert time.monotonic() < deadline, "no records in 300 s"
                time.sleep(0.05)
        finally:
            kill_group(process)
        kept = records_on_disk(folder)
        before = answered(fake)
        # The fake bills a request as it arrives: those it billed that are no record yet
        # were in flight at the kill (K = 1, direct: a request is one record).
        in_flight = sum(before.values()) - kept
        # Mid-way: some records kept, some requests never sent.
        assert 4 <= kept < 20 and sum(before.values()) < 20, (kept, before)
        paid_before = usd_of(fake)
        ledger_before = ledger_usd(folder)
        time.sleep(LATENCY_S + 0.2)  # the fake answers what was in flight to nobody

        done = eval_set(urls_of(fake), tmp_path, set_file, "--out", str(folder), "--json")
        assert done.returncode == 0, done.stderr
        doc = json_of(done)
        after = answered(fake)
        total_usd = usd_of(fake)
    assert doc["complete"] is True
    # Every request of the set answered (housing, K = 1: twenty distinct requests) ...
    assert len(after) == 20
    # ... and the ones answered twice are at most those in flight at the kill: never
    # more than the runs' concurrency (2 + 2).
    twice = sum(after.values()) - len(after)
    assert twice <= in_flight <= 2 + 2, (twice, in_flight)
    # The records on disk at the kill were kept, the others made now.
    assert sum(r["kept"] for r in doc["runs"]) == kept
    assert [r["kept"] + r["new"] for r in doc["runs"]] == [10, 10]
    for name in ("gpt-4.1", "claude-sonnet-4-5"):
        records = records_of(folder / name)
        assert len(records) == 10 == len({(r["case_id"], r["sample"]) for r in records})
    # The ledger heard of every reply that arrived, and of nothing else: what it says is
    # the bill less at most the replies in flight at the kill.
    assert ledger_before <= paid_before + 1e-9
    assert ledger_usd(folder) <= total_usd + 1e-9
    assert ledger_usd(folder) == pytest.approx(doc["spent_usd"], abs=1e-6)
    assert total_usd - ledger_usd(folder) <= 4 * max(
        price_bill([b], GPT if b.api == "openai" else CLAUDE).usd for b in fake.bill
    )
