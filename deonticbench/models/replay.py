"""``replay:<file.jsonl>``: answers from saved responses, e.g. another harness's outputs.

Each line is ``{"domain", "case_id", "mode", "sample", "response"}`` with an optional
``"attempt"`` (0, the first attempt, when absent), or a record of a run's own
``records.jsonl`` (each attempt's response is replayed as that attempt).  A sample with
no saved response becomes an error completion naming what is missing, so a partial file
gives a partial, honest run rather than a silent gap.  The whole file is validated when
the backend is built: a malformed line is one sentence naming the file and line.

``replay:<run folder>`` replays a run: its records.jsonl for the prompted modes, and for
the agentic modes its trajectories (``trajectories/...``, one ATIF file per sample), turn
by turn: each saved agent step's message and tool calls are sent again, and the tools
run again on the new workspace (``agents.scripted``).
"""

from __future__ import annotations

import hashlib
import json
from pathlib import Path
from typing import Any

from ..errors import ConfigError
from ..vocabulary.modes import ALL_MODES
from .base import Completion, GenerationParams, Model, Request

Key = tuple[str, str, str, int, int]  # domain, case_id, mode, sample, attempt


def read_replay_file(path: Path) -> dict[Key, str]:
    try:
        raw = path.read_bytes()
    except OSError as exc:
        raise ConfigError(f"replay file {path} cannot be read ({exc.strerror}).") from None
    saved: dict[Key, str] = {}
    for number, line in enumerate(raw.decode("utf-8", "replace").splitlines(), start=1):
        if not line.strip():
            continue
        where = f"replay file {path}, line {number}"
        try:
            obj = json.loads(line)
        except json.JSONDecodeError as exc:
            raise ConfigError(f"{where} is not valid JSON ({exc.msg}).") from None
        for key, response in _entries(obj, where):
            if key in saved and saved[key] != response:
                raise ConfigError(f"{where} repeats an entry with a different response.")
            saved[key] = response
    return saved


def _entries(obj: Any, where: str) -> list[tuple[Key, str]]:
    """The saved responses of one line: a replay entry, or a run's record (every attempt
    that got a response), so a run's own records.jsonl can be replayed as it is."""
    if isinstance(obj, dict) and "response" not in obj and isinstance(obj.get("attempts"), list):
        out = []
        for attempt in obj["attempts"]:
            if isinstance(attempt, dict) and isinstance(attempt.get("response"), str):
                entry = {**obj, "attempt": attempt.get("index", 0)}
                out.append((_key_of(entry, where), attempt["response"]))
        return out
    key = _key_of(obj, where)
    response = obj.get("response")
    if not isinstance(response, str):
        raise ConfigError(f"{where} has no string 'response' (nor a record's 'attempts').")
    return [(key, response)]


def _key_of(obj: Any, where: str) -> Key:
    if not isinstance(obj, dict):
        raise ConfigError(f"{where} is not a JSON object.")
    missing = [f for f in ("domain", "case_id", "mode", "sample") if f not in obj]
    if missing:
        raise ConfigError(f"{where} lacks {', '.join(missing)}.")
    if obj["mode"] not in ALL_MODES:
        raise ConfigError(f"{where} has mode {obj['mode']!r}, not one of {', '.join(ALL_MODES)}.")
    try:
        sample = _index(obj["sample"])
        attempt = _index(obj.get("attempt", 0))
    except ValueError:
        raise ConfigError(f"{where} needs non-negative integer 'sample' and 'attempt'.") from None
    return (str(obj["domain"]), str(obj["case_id"]), str(obj["mode"]), sample, attempt)


def _index(value: Any) -> int:
    if isinstance(value, bool) or not isinstance(value, int | str):
        raise ValueError
    number = int(value)
    if number < 0:
        raise ValueError
    return number


def _check_trajectories(directory: Path) -> int:
    """The number of a run folder's trajectories, each checked to be a JSON object with
    ``steps`` now: a truncated one would otherwise turn into errors mid-run, silently."""
    count = 0
    for path in sorted((directory / "trajectories").rglob("*.json")):
        try:
            obj = json.loads(path.read_bytes().decode("utf-8", errors="surrogatepass"))
        except OSError as exc:
            raise ConfigError(
                f"replay: the trajectory {path} cannot be read ({exc.strerror})."
            ) from None
        except (json.JSONDecodeError, UnicodeDecodeError):
            raise ConfigError(
                f"replay: the trajectory {path} is not valid JSON (truncated?); replay "
                "needs it whole."
            ) from None
        if not isinstance(obj, dict) or not isinstance(obj.get("steps"), list):
            raise ConfigError(
                f"replay: the trajectory {path} is not an ATIF trajectory (no steps)."
            )
        count += 1
    return count


class ReplayModel(Model):
    _cacheable = False
    tool_mode = "native"
    native_tools = True  # as a scripted agent (agents.scripted) it calls tools natively

    def __init__(self, spec: str, path: str) -> None:
        if not path:
            raise ConfigError("replay needs a file: write replay:<file.jsonl>.")
        self.path = Path(path).expanduser()
        self.spec = spec
        self.provider = "replay"
        self.model_name = str(self.path)
        self.params = GenerationParams()
        self.directory: Path | None = None
        """A run folder replayed: its trajectories replay the agentic modes."""
        if not self.path.exists():
            # Neither a file nor a folder: say so, rather than call it an unreadable file.
            raise ConfigError(
                f"replay: {self.path} does not exist; name a replay file (.jsonl) or a run folder."
            )
        if self.path.is_dir():
            self.directory = self.path
            self.path = self.path / "records.jsonl"
            if not self.path.exists() and not (self.directory / "trajectories").is_dir():
                raise ConfigError(
                    f"replay folder {self.directory} holds neither records.jsonl nor "
                    "trajectories/: name a run folder or a replay file."
                )
        # A run folder of agentic trials alone replays from its trajectories; a replay
        # file that is not there is an error (read_replay_file says so).
        folder_without_records = self.directory is not None and not self.path.exists()
        self.saved = {} if folder_without_records else read_replay_file(self.path)
        trajectories = _check_trajectories(self.directory) if self.directory else 0
        if not self.saved and not trajectories:
            # An empty file would give a run of errors and exit 0: nothing to replay.
            raise ConfigError(f"replay: {self.path} holds no saved response to replay.")
        self.misses = 0
        """Requests that found no saved response (or a saved trajectory that ended
        early): each became an error, which the run's closing output counts."""
        self.max_attempts = 1 + max((key[4] for key in self.saved), default=0)
        """Attempts the file holds responses for: the default --attempts of a replay."""
        self.sha256 = (
            hashlib.sha256(self.path.read_bytes()).hexdigest() if self.path.exists() else ""
        )

    def missed(self, error: str) -> Completion:
        """A request that found nothing saved: counted, and the sample's error."""
        self.misses += 1
        return Completion.failed(error)

    def identity(self) -> dict[str, Any]:
        ident = super().identity()
        ident["sha256"] = self.sha256
        return ident

    async def generate(self, request: Request) -> list[Completion]:
        out = []
        for sample in range(request.sample_start, request.sample_start + request.n):
            key = (request.domain, request.case_id, request.mode, sample, request.attempt)
            text = self.saved.get(key)
            if text is None:
                self.misses += 1
                out.append(
                    Completion.failed(
                        f"no saved response for {request.domain} {request.case_id} {request.mode} "
                        f"sample {sample} attempt {request.attempt}"
                    )
                )
            else:
                out.append(Completion(text=text, finish_reason="stop"))
        return out
