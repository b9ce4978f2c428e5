"""Reasoning blocks in a model response, removed before anything is read from it.

Reasoning models wrap their scratch work in tags: ``<think>...</think>`` (also
``<thinking>``, ``<reasoning>``, ``<reflection>``, ``<thought>``, ``<seed:think>``),
``[THINK]...[/THINK]``, ``◁think▷...◁/think▷``, ``<|begin_of_thought|>...
<|end_of_thought|>``, or a harmony ``analysis`` channel.  Neither an answer nor a program
is read from inside such a block: an answer stated only there is an abstention.  An
opening tag without its closing tag runs to the end of the text (the response was cut
off while still thinking); a closing tag without an opening one (servers that strip the
opening tag, as some DeepSeek-R1 deployments do) ends reasoning that began at the start.
"""

from __future__ import annotations

import re

# (opening, closing) pairs, as regular expressions.
_WRAPPERS: tuple[tuple[str, str], ...] = (
    (
        r"<(?P<tag>think|thinking|reasoning|reflection|thought|seed:think)\b[^>]*>",
        r"</(?P=tag)\s*>",
    ),
    (r"\[THINK\]", r"\[/THINK\]"),
    (r"◁think▷", r"◁/think▷"),
    (r"<\|begin_of_thought\|>", r"<\|end_of_thought\|>"),
    (r"<\|channel\|>\s*analysis\s*<\|message\|>", r"<\|end\|>"),
)
_BLOCKS = [
    re.compile(f"{opening}.*?(?:{closing}|\\Z)", re.DOTALL | re.IGNORECASE)
    for opening, closing in _WRAPPERS
]
_ORPHAN_CLOSERS = re.compile(
    r"</(?:think|thinking|reasoning|reflection|thought|seed:think)\s*>|\[/THINK\]|◁/think▷"
    r"|<\|end_of_thought\|>",
    re.IGNORECASE,
)
# What a harmony-format response puts around its final answer, once analysis is gone.
_HARMONY_FINAL = re.compile(
    r"(?:<\|start\|>\s*assistant\s*)?<\|channel\|>\s*final\s*<\|message\|>|<\|(?:return|end)\|>",
    re.IGNORECASE,
)


def strip_reasoning(text: str) -> str:
    """The response without its reasoning blocks."""
    for block in _BLOCKS:
        text = block.sub("", text)
    closers = list(_ORPHAN_CLOSERS.finditer(text))
    if closers:
        text = text[closers[-1].end() :]
    return _HARMONY_FINAL.sub("", text)
