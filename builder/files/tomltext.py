"""TOML settings parsed within bounds: a budget file, a pyproject.toml, a tree's metallib.toml.

These files may come from a pull request (docs/security.md). ``tomllib`` raises more than its
``TOMLDecodeError``: an integer of more than Python's 4,300 digits is a ``ValueError`` from
``int()``, and arrays or inline tables nested some hundreds deep a ``RecursionError``. Both
would end the run in a traceback with exit 1, which ``budget`` uses for "over budget". Here
each is one ``UsageError`` (exit 2) naming the file, the line and the key written there.
How the bytes are read (regular files only, a size bound) is the caller's; this is the text.
"""

from __future__ import annotations

import re
import sys
from typing import Any

from builder.errors import UsageError

__all__ = ["parse_toml"]

_LONG_NUMBER = re.compile(r"[0-9][0-9_]{4300,}")
_KEY = re.compile(r"\s*([A-Za-z0-9_.\-\"' ]+?)\s*=")
_DEEP = 64
"""Nesting depth past which a line is named as the too-deep one (tomllib stops near 490)."""


def parse_toml(data: bytes, path: object, error: type[UsageError] = UsageError) -> dict[str, Any]:
    """The TOML document in ``data`` (the bytes of ``path``), or ``error`` (a UsageError
    subclass) with one line naming ``path`` and what is wrong where."""
    if sys.version_info >= (3, 11):  # imported here: most runs read no TOML at all
        import tomllib
    else:  # pragma: no cover - Python 3.10
        import tomli as tomllib
    try:
        text = data.decode("utf-8")
    except UnicodeDecodeError as exc:
        raise error(f"{path}: not UTF-8 text (byte {exc.start})") from None
    try:
        return tomllib.loads(text)
    except tomllib.TOMLDecodeError as exc:
        raise error(f"{path}: invalid TOML: {exc}") from None
    except RecursionError:
        where = _place(text, _deep_position(text))
        raise error(f"{path}: {where}arrays or tables nested too deeply") from None
    except ValueError as exc:  # int() past Python's digit limit: tomllib does not catch it
        if "integer string conversion" not in str(exc):
            raise error(f"{path}: invalid TOML: {exc}") from None
        found = _LONG_NUMBER.search(text)
        where = _place(text, found.start() if found else None)
        raise error(f"{path}: {where}a number has more than 4,300 digits") from None


def _place(text: str, position: int | None) -> str:
    """``line N, key 'k': `` for ``position`` in ``text`` (the key written at the start of that
    line, when one is), or nothing when the position is unknown."""
    if position is None:
        return ""
    start = text.rfind("\n", 0, position) + 1
    line = text.count("\n", 0, position) + 1
    key = _KEY.match(text, start, position + 1)
    named = f", key {key.group(1).strip()!r}" if key else ""
    return f"line {line}{named}: "


def _deep_position(text: str) -> int | None:
    """Where ``text`` first opens its ``_DEEP``-th nested bracket or brace, skipping strings
    and comments well enough to name the line (only called once tomllib has refused it)."""
    depth, at, quote = 0, 0, ""
    while at < len(text):
        char = text[at]
        if quote:
            if char == "\\" and quote == '"':
                at += 1
            elif char == quote or char == "\n" and quote == "#":
                quote = ""
        elif char in "\"'#":
            quote = char
        elif char in "[{":
            depth += 1
            if depth >= _DEEP:
                return at
        elif char in "]}":
            depth = max(depth - 1, 0)
        at += 1
    return None
