"""``replay:<file.jsonl>``: answers from saved responses, e.g. another harness's outputs.

Each line is ``{"domain", "case_id", "mode", "sample", "response"}`` with an optional
``"attempt"`` (0, the first attempt, when absent), or a record of a run's own
``records.jsonl`` (each attempt's response is replayed as that attempt).  A sample with
no saved response becomes an error completion naming what is missing, so a partial file
gives a partial, honest run rather than a silent gap.  The whole file is validated when
the backend is built: a malformed line is one sentence naming the file and line.
"""

from __future__ import annotations

import hashlib
import json
from pathlib import Path
from typing import Any

from ..errors import ConfigError
from ..prompting.modes import ALL_MODES
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


class ReplayModel(Model):
    cacheable = False

    def __init__(self, spec: str, path: str) -> None:
        if not path:
            raise ConfigError("replay needs a file: write replay:<file.jsonl>.")
        self.path = Path(path).expanduser()
        self.spec = spec
        self.provider = "replay"
        self.model_name = str(self.path)
        self.params = GenerationParams()
        self.saved = read_replay_file(self.path)
        self.max_attempts = 1 + max((key[4] for key in self.saved), default=0)
        """Attempts the file holds responses for: the default --attempts of a replay."""
        self.sha256 = hashlib.sha256(self.path.read_bytes()).hexdigest()

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
                out.append(
                    Completion.failed(
                        f"no saved response for {request.domain} {request.case_id} {request.mode} "
                        f"sample {sample} attempt {request.attempt}"
                    )
                )
            else:
                out.append(Completion(text=text, finish_reason="stop"))
        return out
