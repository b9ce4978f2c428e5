"""Text that UTF-8 cannot encode, and what the harness does with it.

A model reply may hold a lone surrogate (``"\\ud800"`` is valid JSON and a valid Python
str, but no UTF-8 encoder accepts it).  The response itself is always stored losslessly
(``records_file.json_line`` and the response cache); only where text must leave as UTF-8, as a
program file for SWI-Prolog or a message to a provider, is each such character replaced
by U+FFFD, and the program's notes record the replacement.
"""

from __future__ import annotations

import re

_SURROGATE = re.compile("[\ud800-\udfff]")
REPLACEMENT = "\ufffd"


def utf8_encodable(text: str) -> tuple[str, int]:
    """The text with every character UTF-8 cannot encode replaced by U+FFFD, and how many
    were replaced (0: the text is returned as it is)."""
    replaced, count = _SURROGATE.subn(REPLACEMENT, text)
    return replaced, count
