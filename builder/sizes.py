"""Byte counts and names for people: parse ``10KB`` / ``2.5MiB`` / ``5%``, print ``1.2 MB``, and
show untrusted names (``visible``) without letting them drive the terminal.

Gates are given on the command line in whatever unit is convenient, so parsing accepts both decimal
(KB, MB, GB = 1000^n) and binary (KiB, MiB, GiB = 1024^n) suffixes; a bare number is bytes. Human
output uses decimal units, matching what ``ls -lh --si`` and package indexes show.
"""

from __future__ import annotations

import re
from typing import NamedTuple

from builder.errors import UsageError

__all__ = ["Limit", "human_delta", "human_size", "parse_limit", "parse_size", "visible"]

_UNITS: dict[str, int] = {
    "": 1,
    "b": 1,
    "k": 1000,
    "kb": 1000,
    "m": 1000**2,
    "mb": 1000**2,
    "g": 1000**3,
    "gb": 1000**3,
    "kib": 1024,
    "mib": 1024**2,
    "gib": 1024**3,
}
_SIZE = re.compile(r"^\s*(?P<num>[+-]?\d+(?:\.\d+)?)\s*(?P<unit>[A-Za-z]*)\s*$")


def parse_size(text: str) -> int:
    """``"512"`` -> 512, ``"10KB"`` -> 10000, ``"1.5MiB"`` -> 1572864; bad text -> UsageError."""
    match = _SIZE.match(text)
    unit = match["unit"].lower() if match else ""
    if match is None or unit not in _UNITS:
        raise UsageError(
            f"{text!r} is not a size; use bytes or a number with KB, MB, GB, KiB, MiB or GiB"
        )
    value = float(match["num"]) * _UNITS[unit]
    return round(value)


class Limit(NamedTuple):
    """A growth limit: either an absolute byte count or a percentage of the base size."""

    bytes: int | None = None
    percent: float | None = None

    def allowed(self, base_size: int) -> float:
        """The largest allowed growth in bytes for a base of ``base_size`` bytes."""
        if self.percent is not None:
            return base_size * self.percent / 100.0
        return float(self.bytes or 0)

    def __str__(self) -> str:
        if self.percent is not None:
            return f"{self.percent:g}%"
        return human_size(self.bytes or 0)


def parse_limit(text: str) -> Limit:
    """``"5%"`` -> Limit(percent=5); ``"100KB"`` -> Limit(bytes=100000)."""
    stripped = text.strip()
    if stripped.endswith("%"):
        try:
            percent = float(stripped[:-1])
        except ValueError:
            raise UsageError(f"{text!r} is not a percentage") from None
        return Limit(percent=percent)
    return Limit(bytes=parse_size(stripped))


def human_size(n: float) -> str:
    """``1234567`` -> ``"1.23 MB"``; below 1000 bytes the exact count, ``"999 B"``."""
    value = float(abs(n))
    sign = "-" if n < 0 else ""
    if value < 1000:
        return f"{sign}{int(value)} B"
    for unit in ("kB", "MB", "GB", "TB"):
        value /= 1000.0
        if value < 999.995 or unit == "TB":
            return f"{sign}{value:.2f} {unit}" if value < 100 else f"{sign}{value:.1f} {unit}"
    raise AssertionError("unreachable")


def human_delta(n: int) -> str:
    """A signed human size: ``+1.20 MB``, ``-512 B``, ``0 B``."""
    if n == 0:
        return "0 B"
    return ("+" if n > 0 else "") + human_size(n)


# Characters a terminal or a text viewer acts on instead of showing: C0 controls (ESC starts
# escape sequences, BEL rings, CR/LF fake new rows), DEL, C1 controls (U+009B is a one-byte CSI),
# line/paragraph separators, and the invisible format characters used to disguise text (soft
# hyphen, zero-width spaces and joiners, bidirectional overrides and isolates, BOM). The
# backslash is escaped too, so a name spelling ``\x1b`` literally cannot pass for an escaped ESC.
_UNSAFE = re.compile(
    r"[\\\x00-\x1f\x7f-\x9f\xad\u061c\u180e\u200b-\u200f\u2028-\u202e\u2060-\u206f"
    r"\ufeff\ufff9-\ufffb]"
)
_NAMED = {"\\": "\\\\", "\n": "\\n", "\r": "\\r", "\t": "\\t"}


def _escape_char(match: re.Match[str]) -> str:
    char = match.group()
    named = _NAMED.get(char)
    if named is not None:
        return named
    code = ord(char)
    return f"\\x{code:02x}" if code < 0x100 else f"\\u{code:04x}"


def visible(text: str) -> str:
    """``text`` with every control or invisible format character shown as an escape.

    Names in a metallib, a saved report or a build manifest are untrusted bytes; every
    human-facing output (tables, text, markdown) passes them through here so that ESC, BEL or a
    newline in a name shows as ``\\x1b``, ``\\x07``, ``\\n`` instead of acting. Ordinary names are
    returned unchanged (the same object). JSON output does not need this: its own escaping
    already covers control characters.
    """
    if _UNSAFE.search(text) is None:
        return text
    return _UNSAFE.sub(_escape_char, text)
