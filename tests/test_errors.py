"""A missing optional dependency is one sentence, worded once (``errors.missing_extra``),
wherever the package needs one."""

from __future__ import annotations

import ast
import sys
from pathlib import Path

import pytest

import deonticbench
from deonticbench.errors import ConfigError, MissingExtraError, missing_extra

PACKAGE = Path(deonticbench.__file__).parent


def _docstrings(tree: ast.Module) -> set[int]:
    """ids of the docstring constants (prose may say how to install a thing)."""
    found: set[int] = set()
    for node in ast.walk(tree):
        if isinstance(node, ast.Module | ast.ClassDef | ast.FunctionDef | ast.AsyncFunctionDef):
            body = node.body
            if body and isinstance(body[0], ast.Expr) and isinstance(body[0].value, ast.Constant):
                found.add(id(body[0].value))
    return found


@pytest.mark.slow
def test_only_the_helper_words_an_install_hint() -> None:
    offenders = []
    for path in sorted(PACKAGE.rglob("*.py")):
        if path.name == "errors.py" and path.parent == PACKAGE:
            continue
        tree = ast.parse(path.read_text(encoding="utf-8"))
        docs = _docstrings(tree)
        for node in ast.walk(tree):
            if (
                isinstance(node, ast.Constant)
                and isinstance(node.value, str)
                and "pip install" in node.value
                and id(node) not in docs
            ):
                offenders.append(f"{path.relative_to(PACKAGE)}:{node.lineno}")
    assert not offenders, f"install hints worded outside errors.missing_extra: {offenders}"


def test_the_sentence_names_the_extra() -> None:
    error = missing_extra("--tokenizer", "train", package="tokenizers")
    assert isinstance(error, ConfigError)
    text = str(error)
    assert text == (
        "--tokenizer needs the tokenizers package, which is not installed: "
        "pip install 'deonticbench[train]'."
    )
    assert str(missing_extra("reading inspect logs", "inspect")).startswith(
        "reading inspect logs needs the 'inspect' extra"
    )
    core = str(missing_extra("drawing figures", None, package="matplotlib"))
    assert core.endswith("pip install 'deonticbench'.")


def test_a_missing_sdk_and_tokenizers_are_that_sentence(monkeypatch: pytest.MonkeyPatch) -> None:
    from deonticbench.export.lengths import Counter
    from deonticbench.models._sdk import import_sdk

    monkeypatch.setitem(sys.modules, "tokenizers", None)  # import fails as if not installed
    with pytest.raises(MissingExtraError, match=r"pip install 'deonticbench\[train\]'\.$"):
        Counter("some-tokenizer")
    monkeypatch.setitem(sys.modules, "anthropic", None)
    with pytest.raises(MissingExtraError, match=r"deonticbench\[anthropic\]"):
        import_sdk("anthropic")
