"""The words every other view builds on, with nothing of its own to import: a byte count for
people (``human_size``) and untrusted text shown with its control characters escaped
(``visible``). ``builder.render.text`` re-exports both; they live here so that the gates' words
(``builder.render.verdict_words``), which ``text`` uses, can use them too without a cycle.
"""

from __future__ import annotations

import re

__all__ = ["human_size", "visible"]


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


# Characters a terminal or a text viewer acts on instead of showing: C0 controls (ESC starts
# escape sequences, BEL rings, CR/LF fake new rows), DEL, C1 controls (U+009B is a one-byte CSI),
# line/paragraph separators, and the invisible format characters used to disguise text (soft
# hyphen, zero-width spaces and joiners, bidirectional overrides and isolates, BOM), and lone
# surrogates: a file name byte that is not UTF-8 (U+DC80-U+DCFF from surrogateescape) is shown as
# the byte, ``\xe9``, as JSON output writes it (builder.files.dataclass_json). The backslash is
# escaped too, so a name spelling ``\x1b`` literally cannot pass for an escaped ESC.
_UNSAFE = re.compile(
    r"[\\\x00-\x1f\x7f-\x9f\xad\u061c\u180e\u200b-\u200f\u2028-\u202e\u2060-\u206f"
    r"\ufeff\ufff9-\ufffb\ud800-\udfff]"
)
_NAMED = {"\\": "\\\\", "\n": "\\n", "\r": "\\r", "\t": "\\t"}


def _escape_char(match: re.Match[str]) -> str:
    char = match.group()
    named = _NAMED.get(char)
    if named is not None:
        return named
    code = ord(char)
    if 0xDC80 <= code <= 0xDCFF:
        return f"\\x{code - 0xDC00:02x}"
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
