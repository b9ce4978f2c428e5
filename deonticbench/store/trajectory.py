"""Trajectories: the one owner of the sidecar format of an agentic trial.

A trial's conversation is kept as ATIF (Harbor's Agent Trajectory Interchange Format,
``ATIF_VERSION``): a root with ``schema_version``, ``session_id``, ``agent`` and ``steps``;
each step has ``step_id`` (1, 2, ...), ``source`` (system, user or agent), ``message``,
and an agent step its ``tool_calls`` (``tool_call_id``, ``function_name``, ``arguments``
as an object), the ``observation`` of those calls (``results`` with ``source_call_id``)
and its ``metrics`` (``prompt_tokens``, ``completion_tokens``).  Anything else goes in an
``extra`` object, so a file validates under Harbor's own models.

One file per sample, ``trajectories/<domain>/<case>/<mode>-<sample>.json`` under the run
folder, named by ``trajectory_path`` and hashed into the record (``AgentInfo``).
"""

from __future__ import annotations

import hashlib
import json
import os
import re
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any

from ..errors import DataError

ATIF_VERSION = "ATIF-v1.8"
TRAJECTORIES_DIR = "trajectories"
_UNSAFE = re.compile(r"[^A-Za-z0-9._-]")


def _part(name: str) -> str:
    # A case id becomes one path component: nothing in it can climb out of the folder.
    safe = _UNSAFE.sub("_", name)
    return safe if safe not in ("", ".", "..") else f"_{safe}"


def trajectory_path(domain: str, case_id: str, mode: str, sample: int) -> str:
    """Where a sample's trajectory lives, relative to the run folder."""
    return f"{TRAJECTORIES_DIR}/{_part(domain)}/{_part(case_id)}/{_part(mode)}-{int(sample)}.json"


def encode_trajectory(atif: dict[str, Any]) -> bytes:
    """The bytes a trajectory is stored as (and hashed over)."""
    return (json.dumps(atif, ensure_ascii=False, indent=1) + "\n").encode(
        "utf-8", errors="surrogatepass"
    )


def _inside(run_dir: Path, rel_path: str) -> Path:
    path = (run_dir / rel_path).resolve()
    if not path.is_relative_to(run_dir.resolve()) or Path(rel_path).is_absolute():
        raise DataError(f"the trajectory path {rel_path!r} leaves the run folder {run_dir}.")
    return path


def write_trajectory(run_dir: Path | str, rel_path: str, atif: dict[str, Any]) -> str:
    """Write a trajectory (atomically: a crash leaves the old file or none) and return
    the sha256 of its bytes, which the record keeps."""
    path = _inside(Path(run_dir), rel_path)
    data = encode_trajectory(atif)
    path.parent.mkdir(parents=True, exist_ok=True)
    tmp = path.with_name(path.name + ".tmp")
    tmp.write_bytes(data)
    os.replace(tmp, path)
    return hashlib.sha256(data).hexdigest()


def read_trajectory(
    run_dir: Path | str, rel_path: str, sha256: str | None = None
) -> dict[str, Any]:
    """Read a trajectory back; with ``sha256``, check it is the file the record names."""
    path = _inside(Path(run_dir), rel_path)
    try:
        data = path.read_bytes()
    except OSError as exc:
        raise DataError(f"the trajectory {path} cannot be read ({exc.strerror}).") from None
    if sha256 is not None and hashlib.sha256(data).hexdigest() != sha256:
        raise DataError(f"the trajectory {path} was changed after its run (sha256 differs).")
    try:
        obj = json.loads(data.decode("utf-8", errors="surrogatepass"))
    except (json.JSONDecodeError, UnicodeDecodeError):
        raise DataError(f"the trajectory {path} is not valid JSON.") from None
    if not isinstance(obj, dict) or not isinstance(obj.get("steps"), list):
        raise DataError(f"the trajectory {path} is not an ATIF trajectory (no steps).")
    return obj


def new_trajectory(
    session_id: str,
    *,
    agent_name: str,
    agent_version: str,
    model_name: str | None,
    tool_definitions: list[dict[str, Any]] | None = None,
) -> dict[str, Any]:
    """An ATIF root with no steps yet (``add_step`` appends them)."""
    agent: dict[str, Any] = {"name": agent_name, "version": agent_version}
    if model_name is not None:
        agent["model_name"] = model_name
    if tool_definitions:
        agent["tool_definitions"] = tool_definitions
    return {"schema_version": ATIF_VERSION, "session_id": session_id, "agent": agent, "steps": []}


def add_step(
    atif: dict[str, Any],
    source: str,
    message: str,
    *,
    tool_calls: list[dict[str, Any]] | None = None,
    observations: list[tuple[str, str]] | None = None,
    metrics: dict[str, Any] | None = None,
    timestamp: str | None = None,
    model_name: str | None = None,
    extra: dict[str, Any] | None = None,
) -> dict[str, Any]:
    """Append one step.  ``tool_calls`` are ``{"tool_call_id", "function_name",
    "arguments"}``; ``observations`` are (call id, text) pairs answering them."""
    step: dict[str, Any] = {"step_id": len(atif["steps"]) + 1, "source": source}
    if timestamp is not None:
        step["timestamp"] = timestamp
    if model_name is not None and source == "agent":
        step["model_name"] = model_name
    step["message"] = message
    if tool_calls:
        step["tool_calls"] = tool_calls
    if observations:
        step["observation"] = {
            "results": [{"source_call_id": cid, "content": text} for cid, text in observations]
        }
    if metrics is not None and source == "agent":
        step["metrics"] = metrics
    if extra:
        step["extra"] = extra
    atif["steps"].append(step)
    return step


def add_agent_turn(
    atif: dict[str, Any],
    turn: int,
    message: str,
    calls: Sequence[tuple[str, str, Mapping[str, Any]]],
    observations: Sequence[str],
    *,
    tokens: tuple[int, int],
    model_name: str | None,
    timestamp: str | None = None,
    extra: dict[str, Any] | None = None,
    cache: tuple[int, int] = (0, 0),
) -> dict[str, Any]:
    """Append one model turn: its message, its calls (id, tool, arguments) and what each
    returned (in the same order; a call cut short has none), its (prompt, completion)
    tokens and, of the prompt tokens, those (read from, written to) the provider's prompt
    cache: ATIF's ``cached_tokens`` and, in the metrics' ``extra``, ``cache_write_tokens``
    (each only when not 0).  Call ids are made unique within the step, as ATIF requires (a
    model may reuse one): ``<turn>:<n>:<id>``."""
    ids = [f"{turn}:{n}:{call_id}" for n, (call_id, _, _) in enumerate(calls)]
    metrics: dict[str, Any] = {"prompt_tokens": tokens[0], "completion_tokens": tokens[1]}
    if cache[0]:
        metrics["cached_tokens"] = cache[0]
    if cache[1]:
        metrics["extra"] = {"cache_write_tokens": cache[1]}
    return add_step(
        atif,
        "agent",
        message,
        tool_calls=[
            {"tool_call_id": i, "function_name": name, "arguments": dict(arguments)}
            for i, (_, name, arguments) in zip(ids, calls, strict=True)
        ],
        observations=list(zip(ids, observations, strict=False)),
        metrics=metrics,
        timestamp=timestamp,
        model_name=model_name,
        extra=extra,
    )


def finish_trajectory(atif: dict[str, Any], *, extra: dict[str, Any] | None = None) -> None:
    """Add ``final_metrics`` (token totals over the agent steps) and the trial's facts."""
    agent_steps = [s for s in atif["steps"] if s.get("source") == "agent"]
    metrics = [s.get("metrics") or {} for s in agent_steps]
    atif["final_metrics"] = {
        "total_prompt_tokens": sum(int(m.get("prompt_tokens") or 0) for m in metrics),
        "total_completion_tokens": sum(int(m.get("completion_tokens") or 0) for m in metrics),
        "total_steps": len(atif["steps"]),
    }
    cached = sum(int(m.get("cached_tokens") or 0) for m in metrics)
    if cached:
        atif["final_metrics"]["total_cached_tokens"] = cached
    if extra:
        atif["extra"] = {**atif.get("extra", {}), **extra}


def trajectory_problems(atif: Any) -> list[str]:
    """What makes ``atif`` not a valid ATIF trajectory in the rules the harness relies on
    (sequential step ids, tool calls only on agent steps, every observation answering a
    call of its own step, arguments as objects); empty when it is valid."""
    problems: list[str] = []
    if not isinstance(atif, dict):
        return ["not a JSON object"]
    if not str(atif.get("schema_version", "")).startswith("ATIF-v1."):
        problems.append(f"schema_version {atif.get('schema_version')!r}")
    agent = atif.get("agent")
    if not isinstance(agent, dict) or "name" not in agent or "version" not in agent:
        problems.append("agent lacks name or version")
    steps = atif.get("steps")
    if not isinstance(steps, list) or not steps:
        return [*problems, "no steps"]
    for number, step in enumerate(steps, start=1):
        where = f"step {number}"
        if not isinstance(step, dict):
            problems.append(f"{where} is not an object")
            continue
        if step.get("step_id") != number:
            problems.append(f"{where} has step_id {step.get('step_id')!r}")
        if step.get("source") not in ("system", "user", "agent"):
            problems.append(f"{where} has source {step.get('source')!r}")
        if "message" not in step:
            problems.append(f"{where} has no message")
        calls = step.get("tool_calls") or []
        if calls and step.get("source") != "agent":
            problems.append(f"{where} has tool calls but is not an agent step")
        ids = set()
        for call in calls:
            if not isinstance(call.get("arguments"), dict):
                problems.append(f"{where}: arguments of {call.get('tool_call_id')} not an object")
            ids.add(call.get("tool_call_id"))
        for result in (step.get("observation") or {}).get("results", []):
            cid = result.get("source_call_id")
            if cid is not None and cid not in ids:
                problems.append(f"{where}: observation answers unknown call {cid!r}")
    return problems
