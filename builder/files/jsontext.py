"""JSON text every parser accepts, even when a file name is not UTF-8.

Python reads a file name whose bytes are not UTF-8 with "surrogate escapes": byte 0xE9 becomes
the lone surrogate U+DCE9. ``json.dumps`` writes that as ``"\\udce9"``, which strict parsers
(and any UTF-8 encoder) reject. Every JSON document the tool prints goes through :func:`dumps`,
which writes such a byte as the four characters ``\\xe9`` instead, as Python's
``backslashreplace`` shows it (docs/report-schema.md, "Names that are not UTF-8"); any other lone
surrogate (from a JSON input) as ``\\udXXX`` text. Documents without them are written exactly as
``json.dumps`` writes them, at the same cost.
"""

from __future__ import annotations

import json
import re
from typing import Any

__all__ = ["clean", "dumps"]

_SURROGATE = re.compile("[\ud800-\udfff]")
# In ensure_ascii output a surrogate is an escape; any \ud8xx-\udfxx escape sends the document
# through clean() (a real non-BMP character costs only that detour).
_ESCAPED_SURROGATE = re.compile(r"\\ud[89a-f]", re.IGNORECASE)


def _escape(match: re.Match[str]) -> str:
    code = ord(match.group())
    return f"\\x{code - 0xDC00:02x}" if 0xDC80 <= code <= 0xDCFF else f"\\u{code:04x}"


def clean(value: Any) -> Any:
    """``value`` (JSON data: dicts, lists, strings, numbers) with every string's lone surrogates
    written as escape text; strings without them are returned as they are."""
    if isinstance(value, str):
        return _SURROGATE.sub(_escape, value) if _SURROGATE.search(value) else value
    if isinstance(value, dict):
        return {clean(k): clean(v) for k, v in value.items()}
    if isinstance(value, (list, tuple)):
        return [clean(v) for v in value]
    return value


def dumps(value: Any, **options: Any) -> str:
    """``json.dumps(value, **options)``, with file names that are not UTF-8 made valid
    (:func:`clean`)."""
    text = json.dumps(value, **options)
    if _ESCAPED_SURROGATE.search(text) is None and _SURROGATE.search(text) is None:
        return text
    return json.dumps(clean(value), **options)
