"""The page's data as JSON a browser accepts: no NaN or infinity, valid UTF-8, and safe to
put inside a ``<script>`` element."""

from __future__ import annotations

import json
import math
from typing import Any


def json_value(x: Any) -> Any:
    if isinstance(x, float) and not math.isfinite(x):
        return None
    return x


def _finite(obj: Any) -> Any:
    """JSON has no NaN or infinity (the browser's JSON.parse rejects them): null instead.
    Analysis rows come from another tool, so every value is checked, not only ours."""
    if isinstance(obj, float):
        return obj if math.isfinite(obj) else None
    if isinstance(obj, dict):
        return {k: _finite(v) for k, v in obj.items()}
    if isinstance(obj, list | tuple):
        return [_finite(v) for v in obj]
    return obj


def dumps(obj: Any) -> str:
    """Compact JSON that is valid UTF-8 and valid for JSON.parse.

    A model's reply may hold a lone surrogate (records keep it losslessly); UTF-8 cannot
    carry one, so such a document is written with ASCII escapes, which JSON.parse turns
    back into the same string."""
    text = json.dumps(_finite(obj), ensure_ascii=False, separators=(",", ":"), allow_nan=False)
    try:
        text.encode("utf-8")
    except UnicodeEncodeError:
        text = json.dumps(_finite(obj), ensure_ascii=True, separators=(",", ":"), allow_nan=False)
    return text


def json_in_script(obj: Any) -> str:
    # Inside <script>, "</" could end the element early; "\u2028" breaks old parsers.
    text = dumps(obj)
    return text.replace("</", "<\\/").replace("\u2028", "\\u2028").replace("\u2029", "\\u2029")
