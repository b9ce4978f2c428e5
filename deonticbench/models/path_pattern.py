"""The canonical workspace path a schema-decoded ``write_file`` may name: a JSON-schema
``pattern`` (``path_pattern``) that Python's ``re`` and llama.cpp's grammar converter
read alike, and the most characters it admits (``PATH_CHARS``)."""

from __future__ import annotations

import functools
import string
from collections.abc import Sequence

_FIRST = string.ascii_letters + string.digits + "_-"
_REST = _FIRST + "."
_SEGMENT_TAIL = 30
_SEGMENTS = 4
PATH_CHARS = _SEGMENTS * (_SEGMENT_TAIL + 1) + _SEGMENTS - 1
"""The bound on a ``path`` argument (at most a quarter of a call's, and the most a
``path_pattern`` admits): a path of the workspace needs no more, and the rest is left
to the free text beside it."""


@functools.cache
def path_pattern(excluded_files: tuple[str, ...] = (), excluded_dirs: tuple[str, ...] = ()) -> str:
    """A JSON-schema ``pattern`` (anchored, as llama.cpp's converter needs) for a
    workspace path in canonical form, so that one file has one spelling: up to four
    segments joined by "/", each a letter, digit, "_" or "-" then up to 30 of those or
    "." (no leading "/", no "." or ".." segment, no empty one), none of
    ``excluded_files`` (single names) and nothing in ``excluded_dirs`` or the folder
    itself.  Regular expressions have no "not", so the exclusions are spelled out as a
    trie of the names: each step either follows a name or leaves it for good."""
    if any("/" in name for name in (*excluded_files, *excluded_dirs)):
        raise ValueError("path_pattern excludes single names, not paths with '/'")
    any_segment = f"{_klass(_FIRST)}{_klass(_REST)}{{0,{_SEGMENT_TAIL}}}"
    alone = _segment_except([*excluded_files, *excluded_dirs])
    first = _segment_except(list(excluded_dirs))
    more = f"(/{any_segment}){{1,{_SEGMENTS - 1}}}"
    return f"^({alone}|{first}{more})$"


def _segment_except(words: Sequence[str]) -> str:
    """A regular expression for one path segment other than each of ``words``."""

    def node(prefix: str) -> str:
        depth = len(prefix)
        alphabet = _FIRST if depth == 0 else _REST
        children = sorted({w[depth] for w in words if w.startswith(prefix) and len(w) > depth})
        branches = [_klass([c]) if c == "." else c for c in children]
        branches = [b + node(prefix + c) for b, c in zip(branches, children, strict=True)]
        others = [c for c in alphabet if c not in children]
        left = _SEGMENT_TAIL - depth  # characters the segment may still have after this one
        if others and left >= 0:
            branches.append(_klass(others) + (f"{_klass(_REST)}{{0,{left}}}" if left else ""))
        if not branches:
            return ""
        group = f"({'|'.join(branches)})"
        # A segment may end once it has left the names, or short of one of them.
        return group if depth == 0 or prefix in words else group + "?"

    return node("")


def _klass(chars: Sequence[str]) -> str:
    """A character class of exactly ``chars`` (letters, digits, "_", "-", "."), written
    so that Python's ``re`` and llama.cpp's grammar read it alike: no escapes (the
    grammar knows few), "-" first, "." as itself, runs of letters or digits as ranges."""
    runs: list[list[str]] = []
    for char in sorted(set(chars) - {"-"}):
        last = runs[-1][1] if runs else None
        if last is not None and ord(char) == ord(last) + 1 and char.isalnum() and last.isalnum():
            runs[-1][1] = char
        else:
            runs.append([char, char])
    parts = [a if a == b else f"{a}-{b}" for a, b in runs]
    return "[" + ("-" if "-" in chars else "") + "".join(parts) + "]"
