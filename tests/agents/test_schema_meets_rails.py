"""A schema-decoded turn's tools are derived from the same statements as the rails that
judge the call, so the schema admits nothing a rail refuses: a direct
``submit``'s answer (``guards.ANSWER_BLANKS``) and a ``write_file``'s path within the
call's character budget (``constrained.bounded``)."""

from __future__ import annotations

from pathlib import Path

import jsonschema
import pytest

from deonticbench.agents.guards import NO_ANSWER, admitted, early_submit
from deonticbench.agents.tool_table import tool_specs
from deonticbench.models.constrained import argument_chars, bounded, call_schema
from deonticbench.vocabulary.chat import ToolCall

CANDIDATES = ["", " ", "   ", "\t", "\n", " \t\n ", "0", " 1 ", "yes", "\u00a0", "a\tb", "$1,234"]


def submit_schema(root: Path) -> dict[str, object]:
    (submit,) = [t for t in admitted(tool_specs("prolog"), "agent-direct", root)
                 if t.name == "submit"]  # fmt: skip
    return dict(submit.parameters)


@pytest.mark.parametrize("answer", CANDIDATES)
def test_a_submit_the_schema_admits_is_one_the_rail_runs(answer: str, tmp_path: Path) -> None:
    schema = submit_schema(tmp_path)
    admits = jsonschema.Draft202012Validator(schema).is_valid({"answer": answer})
    refused = early_submit(ToolCall("c1", "submit", {"answer": answer}), "agent-direct", tmp_path)
    if admits:
        assert refused is None, f"the schema admits {answer!r}, the rail refuses it"
    if not answer.strip(" \t\r\n"):
        assert not admits and refused == NO_ANSWER


@pytest.mark.parametrize("max_tokens", [128, 200, 512, 4096])
def test_a_write_file_call_fits_its_budget_whatever_narrowed_its_path(max_tokens: int) -> None:
    """The input-file rail narrows the path to the pattern's 127 characters; the call's
    budget still bounds it (with 128 tokens: 64 characters, not 127 + 1)."""
    chars = argument_chars(max_tokens)
    assert chars is not None
    tools = bounded(admitted(tool_specs("prolog"), "agent-zero-shot", Path(".")), chars)
    (write,) = [t for t in tools if t.name == "write_file"]
    properties = write.parameters["properties"]
    bounds = {k: v["maxLength"] for k, v in properties.items() if v.get("type") == "string"}
    assert sum(bounds.values()) <= chars
    assert bounds["path"] <= chars // 4 and bounds["content"] >= chars // 2
    # The union the engine decodes under carries those bounds.
    branches = call_schema(tools)["anyOf"]
    (branch,) = [b for b in branches if b["properties"]["name"]["const"] == "write_file"]
    assert branch["properties"]["arguments"]["properties"]["path"]["maxLength"] == bounds["path"]
