"""Harbor's ``task.toml`` reads back through ``tomllib`` as it was written, whatever the
metadata's strings hold: characters outside the Basic Multilingual Plane (written by
hand with ``json.dumps`` they became surrogate pairs that ``tomllib`` rejects), control
characters, quotes and backslashes."""

from __future__ import annotations

import tomllib

from deonticbench.integrations.harbor.tasks import AGENT_TIMEOUT_S, VERIFIER_TIMEOUT_S, task_toml
from deonticbench.integrations.harbor.verifier import TASK_WORKDIR

AWKWARD = [
    "emoji \U0001f600 and a clef \U0001d11e",
    "controls \x00\x01\x07\x08\x0b\x0c\x1b\x1f\x7f end",
    'quotes " and \' and backslash \\ and """ triple',
    "newline\nand tab\tand carriage return\r",
    "plain ASCII",
]


def test_every_string_round_trips_through_tomllib() -> None:
    metadata = {
        "case_id": AWKWARD[0],
        "notes": AWKWARD,
        "nested": {"text": AWKWARD[1], "count": 3, "ratio": 0.5, "flag": True},
    }
    for direct in (True, False):
        document = tomllib.loads(task_toml(metadata, direct))
        assert document["metadata"] == metadata
        assert document["agent"]["timeout_sec"] == AGENT_TIMEOUT_S
        assert document["verifier"]["timeout_sec"] == VERIFIER_TIMEOUT_S
        assert document["environment"]["workdir"] == TASK_WORKDIR
        assert document["environment"]["network_mode"] == "no-network"
        artifact = document["artifacts"][0]
        assert artifact.startswith(TASK_WORKDIR) and artifact.endswith(".txt" if direct else ".pl")
