"""Byte counts and names for people: ``1.2 MB``, ``+512 B``, ``5%``, and untrusted names shown
(``visible``) without letting them drive the terminal.

Human output uses decimal units, matching what ``ls -lh --si`` and package indexes show.
"""

from __future__ import annotations

import re
from collections.abc import Mapping
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from builder.size.checks import Limit
    from builder.size.report import Report

__all__ = [
    "OVERHEAD_LABEL",
    "grouping_text",
    "human_delta",
    "human_size",
    "limit_text",
    "origin",
    "percent",
    "share",
    "signed_percent",
    "visible",
]


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


def limit_text(limit: Limit) -> str:
    """A gate's limit as given: ``5%`` or a human size."""
    if limit.percent is not None:
        return f"{limit.percent:g}%"
    return human_size(limit.bytes or 0)


def human_delta(n: int) -> str:
    """A signed human size: ``+1.20 MB``, ``-512 B``, ``0 B``."""
    if n == 0:
        return "0 B"
    return ("+" if n > 0 else "") + human_size(n)


# Characters a terminal or a text viewer acts on instead of showing: C0 controls (ESC starts
# escape sequences, BEL rings, CR/LF fake new rows), DEL, C1 controls (U+009B is a one-byte CSI),
# line/paragraph separators, and the invisible format characters used to disguise text (soft
# hyphen, zero-width spaces and joiners, bidirectional overrides and isolates, BOM), and lone
# surrogates: a file name byte that is not UTF-8 (U+DC80-U+DCFF from surrogateescape) is shown as
# the byte, ``\xe9``, as JSON output writes it (builder.files.jsontext). The backslash is escaped
# too,
# so a name spelling ``\x1b`` literally cannot pass for an escaped ESC.
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


OVERHEAD_LABEL = "[container overhead]"


def percent(part: int, whole: int) -> str:
    """``part`` as a share of ``whole``: ``12.5%`` (``-`` for an empty whole)."""
    return f"{100.0 * part / whole:.1f}%" if whole else "-"


def signed_percent(value: float | None) -> str:
    """A change in percent, ``+1.2%``; ``new`` when there was nothing before."""
    return "new" if value is None else f"{value:+.1f}%"


def share(part: int, whole: int) -> str:
    """``part / whole`` as a plain fraction for CSV (six places; empty for an empty whole)."""
    return f"{part / whole:.6f}" if whole else ""


def origin(report: Report) -> str:
    """Where a report's figures were measured: the file, and the wheel, manifest or saved report."""
    src = report.source
    where = src.path or "(no metallib: all units JIT)"
    if src.embedded is not None:
        where += f" ({embedded_place(src.embedded)})"
    extra = []
    if src.kind == "spec" or src.kind == "wheel":
        extra.append(f"from {src.target}")
    if src.manifest:
        extra.append(f"manifest {src.manifest}")
    if src.kind == "report":
        extra.append(f"saved report {src.target}")
    return where + (f" ({'; '.join(extra)})" if extra else "")


def embedded_place(embedded: Mapping[str, Any]) -> str:
    """Where a metallib sits in its binary, for people: ``bytes 101,251,178-202,494,553 of
    __TEXT,metal_basic`` (+ its offset in the section, the symbol naming it)."""
    start = embedded["offset"]
    text = f"bytes {start:,}-{start + embedded['size']:,}"
    section = ",".join(embedded[k] for k in ("segment", "section") if embedded.get(k))
    if section:
        text += f" in {section}"
        if embedded.get("section_offset"):
            text += f" +{embedded['section_offset']:,}"
    if embedded.get("format") == "fat Mach-O" and embedded.get("arch"):
        text += f" of the {embedded['arch']} slice"
    if embedded.get("symbol"):
        text += f", symbol {embedded['symbol']}"
    return visible(text)


def grouping_text(report: Report) -> str:
    """How the groups were obtained: the first key's method, then the second's (two keys)."""
    if report.subgrouping is None:
        return report.grouping
    return f"{report.grouping}, then {report.subgrouping}"
