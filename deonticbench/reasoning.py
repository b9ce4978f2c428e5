"""Reasoning blocks in a model response, removed before anything is read from it.

Reasoning models wrap their scratch work in ``<think>...</think>`` (or ``<thinking>``,
``<reasoning>``, ``<reflection>``, ``<thought>``).  Neither an answer nor a program is
read from inside such a block: an answer stated only there is an abstention.  An opening
tag without its closing tag runs to the end of the text (the response was cut off while
still thinking); a closing tag without an opening one (servers that strip the opening
tag, as some DeepSeek-R1 deployments do) ends reasoning that began at the start.
"""

from __future__ import annotations

import re

_TAGS = r"think|thinking|reasoning|reflection|thought"
_BLOCK = re.compile(rf"<({_TAGS})\b[^>]*>.*?(?:</\1\s*>|\Z)", re.DOTALL | re.IGNORECASE)
_ORPHAN_CLOSE = re.compile(rf"</(?:{_TAGS})\s*>", re.IGNORECASE)


def strip_reasoning(text: str) -> str:
    """The response without its reasoning blocks."""
    text = _BLOCK.sub("", text)
    closers = list(_ORPHAN_CLOSE.finditer(text))
    if closers:
        text = text[closers[-1].end() :]
    return text
