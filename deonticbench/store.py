"""Where a run lives: its folder (config.json + records.jsonl) and the response cache.

A run folder holds

* ``config.json``: everything that produced the numbers (model identity, split, K,
  templates, data revision, versions).  Written once; checked on resume, so that a
  resumed run never silently mixes two configurations.
* ``records.jsonl``: one ``Record`` per domain x case x mode x sample, appended and
  fsync'd as each finishes.  A crash can leave at most a truncated last line, which
  ``RunFolder.open`` cuts off (that sample is simply done again).
* ``.lock``: an advisory lock so that two processes never append to one run at once.

The response cache is a sqlite file shared by every run (WAL mode, so concurrent runs
can write to it); a re-run never pays twice for the same request.
"""

from __future__ import annotations

import contextlib
import fcntl
import hashlib
import json
import os
import sqlite3
import time
from collections import Counter
from collections.abc import Iterable, Iterator, Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import IO, Any, Literal

from ._paths import RESPONSES_FILE, cache_root
from .domains import DOMAINS
from .errors import ConfigError, DataError
from .records import Record, parse_record_line

CONFIG_NAME = "config.json"
RECORDS_NAME = "records.jsonl"
LOCK_NAME = ".lock"

# The config fields that decide what a record means.  Resuming with any of them changed
# would mix two experiments in one file; everything else (domains and modes added,
# --limit, concurrency, versions) may differ between sessions of one run.
FINGERPRINT_FIELDS = ("model", "split", "attempts", "seed", "templates", "data", "limits")

RecordKey = tuple[str, str, str, int]


def _describe_difference(field: str, old: Any, new: Any) -> str:
    if field == "data":
        return "the data source or its revision differs"
    if field == "templates":
        return "the prompt templates have changed"
    return f"{field} differs ({_short(old)} before, {_short(new)} now)"


def _describe_model_difference(old: Any, new: Any) -> str:
    """Name both models; when the spec is the same, name the parameters that differ."""

    def spec(model: Any) -> str:
        return str(model.get("spec")) if isinstance(model, Mapping) else _short(model)

    def identity(model: Any) -> Mapping[str, Any]:
        value = model.get("identity") if isinstance(model, Mapping) else None
        return value if isinstance(value, Mapping) else {}

    if spec(old) != spec(new):
        return f"the model differs ({spec(old)} before, {spec(new)} now)"
    a, b = identity(old), identity(new)
    changed = [
        f"{key} {_short(a.get(key))} before, {_short(b.get(key))} now"
        for key in sorted({*a, *b})
        if a.get(key) != b.get(key)
    ]
    return f"the model {spec(new)} has other sampling parameters ({'; '.join(changed)})"


def set_aside(folder: Path) -> Path:
    """Move a run folder out of the way for ``--fresh``: renamed beside itself to
    ``<name>.replaced-<time>``, nothing deleted.  Refused while another process writes it."""
    lock = _take_lock(folder)
    try:
        stamp = time.strftime("%Y%m%d-%H%M%S")
        target = folder.with_name(f"{folder.name}.replaced-{stamp}")
        number = 1
        while target.exists():
            number += 1
            target = folder.with_name(f"{folder.name}.replaced-{stamp}-{number}")
        try:
            folder.rename(target)
        except OSError as exc:
            raise ConfigError(f"cannot move {folder} aside for --fresh ({exc.strerror}).") from None
        return target
    finally:
        lock.close()


def is_run_folder(folder: Path) -> bool:
    return (folder / CONFIG_NAME).exists() or (folder / RECORDS_NAME).exists()


def _short(value: Any) -> str:
    text = json.dumps(value, sort_keys=True)
    return text if len(text) <= 60 else text[:57] + "..."


def fingerprint(config: Mapping[str, Any]) -> dict[str, Any]:
    """The part of a config that must match for records to be comparable."""
    out: dict[str, Any] = {}
    for key in FINGERPRINT_FIELDS:
        value = config.get(key)
        if key == "model" and isinstance(value, Mapping):
            # The spec string is a spelling; the identity (model, every sampling
            # parameter, endpoint) is what decides the responses.
            value = value.get("identity")
        if key == "data" and isinstance(value, Mapping):
            # A local mirror may sit at another path on another machine: same content.
            value = {k: v for k, v in value.items() if k != "path"}
        out[key] = value
    return out


def config_mismatch(old: Mapping[str, Any], new: Mapping[str, Any]) -> str | None:
    """One clause saying why ``new`` cannot resume a run made with ``old`` (None: it can)."""
    a, b = fingerprint(old), fingerprint(new)
    for name in FINGERPRINT_FIELDS:
        if a[name] != b[name]:
            if name == "model":
                return _describe_model_difference(old.get("model"), new.get("model"))
            return _describe_difference(name, a[name], b[name])
    old_k = old.get("k") or {}
    for domain, k in (new.get("k") or {}).items():
        if domain in old_k and old_k[domain] != k:
            return f"K for {domain} differs ({old_k[domain]} before, {k} now)"
    return None


@dataclass
class LoadedRecords:
    records: dict[RecordKey, Record]
    truncated: bool
    """A partial last line (from a crash) was found and cut off."""
    duplicates: int
    dropped_errors: int = 0
    """Records taken out by ``retry_errors`` (their samples will be done again)."""
    lines: int = 0
    """Lines read, blank ones not counted."""
    skipped: Counter[str] = field(default_factory=Counter)
    """Forgiving reading: lines left out, by reason."""


class RunFolder:
    """An open run folder.  Use ``RunFolder.open(path, config)`` as a context manager."""

    def __init__(self, path: Path, config: dict[str, Any], loaded: LoadedRecords) -> None:
        self.path = path
        self.config = config
        self.loaded = loaded
        self._lock: IO[str] | None = None
        self._records: IO[bytes] | None = None

    @property
    def records_path(self) -> Path:
        return self.path / RECORDS_NAME

    @property
    def done(self) -> dict[RecordKey, Record]:
        return self.loaded.records

    @classmethod
    def open(
        cls, path: str | os.PathLike[str], config: dict[str, Any], *, retry_errors: bool = False
    ) -> RunFolder:
        """Create the folder or resume it; raises ConfigError on a mismatched config.

        With ``retry_errors``, records whose last attempt is a failed request (an outage,
        a spent quota) are taken out of records.jsonl, so that those samples are done
        again; the file is rewritten atomically and keeps one line per sample."""
        folder = Path(path)
        # A refused start leaves every file as it was: everything that can refuse (another
        # configuration, a damaged records.jsonl) is checked read-only before anything is
        # written, first without the lock (so a refusal creates no lock file either),
        # then again under it, where another process can no longer change the answer.
        if (folder / CONFIG_NAME).exists():
            check_resumable(folder, config)
            read_records(folder / RECORDS_NAME)
        try:
            folder.mkdir(parents=True, exist_ok=True)
        except OSError as exc:
            raise ConfigError(f"cannot create the run folder {folder} ({exc.strerror}).") from None
        lock = _take_lock(folder)
        try:
            loaded = read_records(folder / RECORDS_NAME)
            merged = _merge_config(folder, config)
            if loaded.truncated:
                loaded = read_records(folder / RECORDS_NAME, repair=True)
            if retry_errors:
                _drop_error_records(folder / RECORDS_NAME, loaded)
        except BaseException:
            lock.close()
            raise
        run = cls(folder, merged, loaded)
        run._lock = lock
        run._records = open(folder / RECORDS_NAME, "ab")  # noqa: SIM115 - closed in close()
        return run

    def append(self, record: Record) -> None:
        """Append one record and make it durable before returning."""
        assert self._records is not None, "run folder is closed"
        # One write of the whole line: a crash leaves at most a truncated last line.
        self._records.write(_record_line(record))
        self._records.flush()
        os.fsync(self._records.fileno())
        self.loaded.records.setdefault(record.key, record)

    def close(self) -> None:
        if self._records is not None:
            self._records.close()
            self._records = None
        if self._lock is not None:
            self._lock.close()  # closing the descriptor releases the flock
            self._lock = None

    def __enter__(self) -> RunFolder:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()


def _drop_error_records(path: Path, loaded: LoadedRecords) -> None:
    failed = [key for key, r in loaded.records.items() if r.final.error is not None]
    if not failed:
        return
    for key in failed:
        del loaded.records[key]
    tmp = path.with_suffix(".jsonl.tmp")
    with open(tmp, "wb") as fh:
        for record in loaded.records.values():
            fh.write(_record_line(record))
        fh.flush()
        os.fsync(fh.fileno())
    # Atomic: a crash leaves either the old file or the new one, never a mixture.
    os.replace(tmp, path)
    loaded.dropped_errors = len(failed)


def _record_line(record: Record) -> bytes:
    return json_line(record.to_json())


def json_line(obj: Any) -> bytes:
    """One JSON line as UTF-8 bytes, lossless for any text a model can send.

    Text is written as itself (``ensure_ascii=False``) so records stay readable, except
    when it holds something UTF-8 cannot encode (a lone surrogate such as ``\\ud800``,
    valid in JSON and in a Python str): then the line is written with JSON's ``\\u``
    escapes, which are pure ASCII, and reads back to the very same string.
    """
    line = json.dumps(obj, ensure_ascii=False, separators=(",", ":"))
    try:
        return line.encode("utf-8") + b"\n"
    except UnicodeEncodeError:
        return json.dumps(obj, ensure_ascii=True, separators=(",", ":")).encode("ascii") + b"\n"


def _take_lock(folder: Path) -> IO[str]:
    lock = open(folder / LOCK_NAME, "w")  # noqa: SIM115 - held for the run's lifetime
    try:
        fcntl.flock(lock.fileno(), fcntl.LOCK_EX | fcntl.LOCK_NB)
    except BlockingIOError:
        lock.close()
        raise ConfigError(
            f"another deonticbench process is writing to {folder}; wait for it or use --out."
        ) from None
    return lock


def _merge_config(folder: Path, config: dict[str, Any]) -> dict[str, Any]:
    path = folder / CONFIG_NAME
    if not path.exists():
        _write_json_atomic(path, config)
        return config
    old = check_resumable(folder, config)
    # Domains and modes may be added to a run; their union is what the folder holds.
    merged = dict(old)
    merged["domains"] = _union(old.get("domains", []), config.get("domains", []))
    merged["modes"] = _union(old.get("modes", []), config.get("modes", []))
    merged["k"] = {**config.get("k", {}), **old.get("k", {})}
    merged["sessions"] = [*old.get("sessions", []), *config.get("sessions", [])]
    if merged != old:
        _write_json_atomic(path, merged)
    return merged


def check_resumable(folder: Path, config: Mapping[str, Any]) -> dict[str, Any]:
    """The folder's config, if ``config`` may resume it; else one sentence why not."""
    old = read_config(folder)
    why = config_mismatch(old, config)
    if why is not None:
        raise ConfigError(
            f"{folder} holds a run with another configuration ({why}); "
            "use another --out folder, --fresh to start this one afresh (the old run is "
            "moved aside, not deleted), or the original settings."
        )
    return old


def _union(a: list[Any], b: list[Any]) -> list[Any]:
    return list(dict.fromkeys([*a, *b]))


def read_config(folder: str | os.PathLike[str]) -> dict[str, Any]:
    path = Path(folder) / CONFIG_NAME
    try:
        data = json.loads(path.read_text(encoding="utf-8"))
    except (OSError, json.JSONDecodeError) as exc:
        raise DataError(f"{path} cannot be read as a run configuration ({exc}).") from None
    if not isinstance(data, dict):
        raise DataError(f"{path} is not a JSON object.")
    return data


def _write_json_atomic(path: Path, obj: Any) -> None:
    tmp = path.with_suffix(path.suffix + ".tmp")
    with open(tmp, "w", encoding="utf-8") as fh:
        json.dump(obj, fh, indent=2, sort_keys=False, ensure_ascii=False)
        fh.write("\n")
        fh.flush()
        os.fsync(fh.fileno())
    os.replace(tmp, path)


ReadPolicy = Literal["strict", "forgiving"]
"""How a records.jsonl is read.  ``strict`` (resuming a run): a damaged line other than
a crash's last one is an error, since appending to it would bury the damage.
``forgiving`` (scoring): every line that is not a usable record is skipped and counted
with its reason, so that what is left can still be scored."""


def read_records(
    path: str | os.PathLike[str], *, repair: bool = False, policy: ReadPolicy = "strict"
) -> LoadedRecords:
    """Read a records.jsonl: the first record of each key wins.

    Strict: a last line without its newline, or that does not parse, is what a crash
    mid-write leaves: it is dropped (and with ``repair`` cut from the file so appends
    start on a clean line).  A bad line anywhere else raises DataError.

    Forgiving: every line is tried, a last one without its newline too; a line that does
    not parse, names an unknown domain, repeats a key or gives a case another gold
    label than its earlier records is skipped, its reason counted in ``skipped``.
    """
    file = Path(path)
    records: dict[RecordKey, Record] = {}
    if not file.exists():
        return LoadedRecords(records, truncated=False, duplicates=0)
    raw = file.read_bytes()
    lines = raw.split(b"\n")
    # After a final newline, split leaves an empty last piece; otherwise the last piece
    # is a line the crash cut short.
    tail = lines.pop()
    forgiving = policy == "forgiving"
    if forgiving and tail:
        lines.append(tail)  # read it too: it may be a whole record without its newline
    truncated = bool(tail.strip()) and not forgiving
    good_end = len(raw) - len(tail)
    duplicates = 0
    counted = 0
    skipped: Counter[str] = Counter()
    gold_of: dict[tuple[str, str], Any] = {}
    offset = 0
    for number, line in enumerate(lines, start=1):
        start = offset
        offset += len(line) + 1
        try:
            record = parse_record_line(line)
        except ValueError as exc:
            if forgiving:
                counted += 1
                skipped[str(exc)] += 1
                continue
            if number == len(lines) and not tail:
                # The last complete line is unreadable: a crash between writes of a
                # multi-block line on some filesystems.  Treat it as the truncated tail.
                truncated, good_end = True, start
                break
            raise DataError(f"{file}: line {number} is not a valid record ({exc}).") from None
        if record is None:  # a blank line
            continue
        counted += 1
        if forgiving and record.domain not in DOMAINS:
            skipped[f"unknown domain {record.domain!r}"] += 1
            continue
        if record.key in records:
            duplicates += 1
            skipped["duplicate key (kept the first)"] += 1
            continue
        case = (record.domain, record.case_id)
        if forgiving and case in gold_of and gold_of[case] != record.gold:
            skipped["gold differs from an earlier record of the case"] += 1
            continue
        gold_of.setdefault(case, record.gold)
        records[record.key] = record
    if truncated and repair:
        with open(file, "r+b") as fh:
            fh.truncate(good_end)
            fh.flush()
            os.fsync(fh.fileno())
    return LoadedRecords(
        records,
        truncated=truncated,
        duplicates=duplicates,
        lines=counted,
        skipped=skipped if forgiving else Counter(),
    )


def iter_records(path: str | os.PathLike[str]) -> Iterator[Record]:
    """The records of a run folder (or a records.jsonl path), one per sample."""
    file = Path(path)
    if file.is_dir():
        file = file / RECORDS_NAME
    yield from read_records(file).records.values()


# --- response cache ------------------------------------------------------------------


@dataclass(frozen=True)
class CachedResponse:
    text: str
    tokens_in: int
    tokens_out: int
    latency_s: float
    finish_reason: str | None


def default_cache_path() -> Path:
    """``responses.sqlite`` in the cache folder (``$DEONTICBENCH_CACHE`` or the user's
    cache folder, see ``_paths.cache_root``); ``--cache FILE`` names another file."""
    return cache_root() / RESPONSES_FILE


def cache_key(identity: Mapping[str, Any], prompt_hash: str, sample: int, attempt: int) -> str:
    """The key of one response: backend identity, prompt, sample index and attempt.

    The sample index is part of the key because K samples of one prompt are K different
    draws; the attempt index because a request-error retry repeats the same prompt.
    """
    payload = json.dumps(
        {"identity": identity, "prompt": prompt_hash, "sample": sample, "attempt": attempt},
        sort_keys=True,
        separators=(",", ":"),
        default=str,
    )
    return hashlib.sha256(payload.encode("utf-8", errors="surrogatepass")).hexdigest()


_SCHEMA = """
CREATE TABLE IF NOT EXISTS responses (
    key TEXT PRIMARY KEY,
    text TEXT NOT NULL,
    tokens_in INTEGER NOT NULL,
    tokens_out INTEGER NOT NULL,
    latency_s REAL NOT NULL,
    finish_reason TEXT,
    created REAL NOT NULL
)
"""


class ResponseCache:
    """A sqlite table of successful responses.  Errors are never stored.

    WAL mode lets readers proceed while another process writes, and the busy timeout
    makes concurrent writers wait for each other instead of failing.
    """

    def __init__(self, path: str | os.PathLike[str]) -> None:
        self.path = Path(path).expanduser()
        try:
            self.path.parent.mkdir(parents=True, exist_ok=True)
            self._db = sqlite3.connect(self.path, timeout=60.0, isolation_level=None)
            self._db.execute("PRAGMA busy_timeout=60000")
            self._db.execute("PRAGMA journal_mode=WAL")
            self._db.execute("PRAGMA synchronous=NORMAL")
            self._db.execute(_SCHEMA)
        except (OSError, sqlite3.Error) as exc:
            raise ConfigError(f"cannot open the response cache {self.path} ({exc}).") from None
        self.hits = 0
        self.stores = 0

    def get(self, key: str) -> CachedResponse | None:
        row = self._db.execute(
            "SELECT text, tokens_in, tokens_out, latency_s, finish_reason "
            "FROM responses WHERE key = ?",
            (key,),
        ).fetchone()
        if row is None:
            return None
        text, *rest = row
        if isinstance(text, bytes):  # stored by put() as a blob: see there
            text = text.decode("utf-8", errors="surrogatepass")
        self.hits += 1
        return CachedResponse(text, *rest)

    def put(self, key: str, response: CachedResponse) -> None:
        """Store a response's text (never anything else: a reply that is not text was
        an error, and errors are not cached)."""
        if not isinstance(response.text, str):
            return
        text: str | bytes = response.text
        try:
            response.text.encode("utf-8")
        except UnicodeEncodeError:
            # sqlite's TEXT is UTF-8; a lone surrogate is kept losslessly as a blob.
            text = response.text.encode("utf-8", errors="surrogatepass")
        for delay in (0.05, 0.2, 1.0, None):
            try:
                self._db.execute(
                    "INSERT OR REPLACE INTO responses VALUES (?, ?, ?, ?, ?, ?, ?)",
                    (
                        key,
                        text,
                        response.tokens_in,
                        response.tokens_out,
                        response.latency_s,
                        response.finish_reason,
                        time.time(),
                    ),
                )
                self.stores += 1
                return
            except sqlite3.OperationalError:
                # "database is locked" past the busy timeout: a cache miss later costs
                # one request, losing the run costs more, so retry briefly then give up.
                if delay is None:
                    return
                time.sleep(delay)

    def __len__(self) -> int:
        row = self._db.execute("SELECT COUNT(*) FROM responses").fetchone()
        return int(row[0])

    def close(self) -> None:
        with contextlib.suppress(sqlite3.Error):
            self._db.close()

    def __enter__(self) -> ResponseCache:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()


# --- naming and describing runs ----------------------------------------------------------

RUNS_DIR = Path("runs")


def model_slug(spec: str) -> str:
    """A folder-name form of a model spec: ``openai:gpt-4.1`` -> ``openai-gpt-4.1``."""
    import re

    slug = re.sub(r"[^A-Za-z0-9._]+", "-", spec.split("@", 1)[0]).strip("-.").lower()
    return (slug or "model")[:60]


def new_run_path(spec: str, split: str, *, root: Path = RUNS_DIR) -> Path:
    stamp = time.strftime("%Y%m%dT%H%M%SZ", time.gmtime())
    return root / f"{model_slug(spec)}-{split}-{stamp}"


def find_resumable(config: Mapping[str, Any], *, root: Path = RUNS_DIR) -> Path | None:
    """The newest run folder of this model and split whose configuration matches, so
    that the same command without --out picks up where it stopped."""
    spec = str((config.get("model") or {}).get("spec", ""))
    prefix = f"{model_slug(spec)}-{config.get('split')}-"
    if not root.is_dir():
        return None
    candidates = sorted(
        (p for p in root.iterdir() if p.is_dir() and p.name.startswith(prefix)),
        key=lambda p: p.name,
        reverse=True,
    )
    for folder in candidates:
        if not (folder / CONFIG_NAME).exists():
            continue
        try:
            old = read_config(folder)
        except DataError:
            continue
        if config_mismatch(old, config) is None:
            return folder
    return None


def environment_facts() -> dict[str, Any]:
    """Versions that produced a run: Python, packages, SWI-Prolog, the harness commit."""
    import platform
    import subprocess
    import sys
    from importlib import metadata

    from ._paths import ROOT

    packages: dict[str, str | None] = {}
    for name in ("deonticbench", "openai", "anthropic", "click", "numpy", "datasets"):
        try:
            packages[name] = metadata.version(name)
        except metadata.PackageNotFoundError:
            packages[name] = None

    def run(*argv: str) -> str | None:
        try:
            done = subprocess.run(argv, capture_output=True, text=True, timeout=10, check=False)
        except (OSError, subprocess.SubprocessError):
            return None
        return done.stdout.strip() if done.returncode == 0 else None

    commit = run("git", "-C", str(ROOT), "rev-parse", "HEAD")
    dirty = None
    if commit is not None:
        status = run("git", "-C", str(ROOT), "status", "--porcelain", "--untracked-files=no")
        dirty = bool(status)
    return {
        "python": sys.version.split()[0],
        "platform": platform.platform(),
        "packages": packages,
        "swipl": run("swipl", "--version"),
        "git_commit": commit,
        "git_dirty": dirty,
    }


def write_replay_file(records: Iterable[Record], path: str | os.PathLike[str]) -> int:
    """Write every response of these records in the ``replay:`` backend's format, one
    line per sample and attempt (failed requests have no response and are left out, so
    a replay reports them as missing).  Returns the number of lines written."""
    count = 0
    with open(path, "wb") as fh:
        for record in records:
            for attempt in record.attempts:
                if attempt.response is None:
                    continue
                line = {
                    "domain": record.domain,
                    "case_id": record.case_id,
                    "mode": record.mode,
                    "sample": record.sample,
                    "attempt": attempt.index,
                    "response": attempt.response,
                }
                fh.write(json_line(line))
                count += 1
    return count
