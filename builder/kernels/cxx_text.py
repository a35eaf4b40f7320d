"""C++ source text as a compiler reads it, for the kernel scan (``builder.kernels.kernel_scan``):
string literals (adjacent ones joined, escapes decoded, as C++'s translation phases 5 and 6
do), brackets matched, top-level commas split, a declaration's name and template arguments,
and one canonical spelling of an argument whatever spaces macro expansion left.

Patterns are written as "unrolled loops" (normal* (special normal*)*): runs of plain
characters are consumed in one step and a failing match cannot backtrack exponentially.
"""

from __future__ import annotations

import functools
import re
from collections.abc import Iterable

__all__ = [
    "CHAR",
    "LIT",
    "STRING",
    "WORD",
    "declarator",
    "decode_literals",
    "join_literals",
    "matching",
    "normalize_arg",
    "split_top",
    "unescape",
]

LIT = r'"[^"\\\n]*(?:\\.[^"\\\n]*)*"'
STRING = r"(?:u8|[uUL])?" + LIT
CHAR = r"(?:u8|[uUL])?'[^'\\\n]*(?:\\.[^'\\\n]*)*'"
_LITERAL = re.compile(r'(?:u8|[uUL])?"([^"\\\n]*(?:\\.[^"\\\n]*)*)"')
_LITERALS = re.compile(rf"\s*(?:{STRING}\s*)+")
_ESCAPE = re.compile(r"\\(x[0-9A-Fa-f]+|u[0-9A-Fa-f]{4}|U[0-9A-Fa-f]{8}|[0-7]{1,3}|.)", re.DOTALL)
_SIMPLE_ESCAPES = {"n": "\n", "t": "\t", "r": "\r", "a": "\a", "b": "\b", "f": "\f", "v": "\v"}
_BRACKETS = re.compile(r"[<>()\[\]]")
_SPLIT_AT = re.compile(r"[<>()\[\]{},]")
_NAME_AT_END = re.compile(r"([A-Za-z_]\w*)\s*$")
_TOKEN = re.compile(r"\w+|\S")

WORD = frozenset("abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789_")


def decode_literals(text: str) -> str:
    """The string literals in ``text`` joined, each one's escapes decoded first ("\\x5f" "f" is
    "_f", not "\\x5ff"), as in C++'s translation phases 5 and 6."""
    return "".join(unescape(p) for p in _LITERAL.findall(text))


def unescape(body: str, *, utf8_bytes: bool = False) -> str:
    """A C string literal's body (between its quotes) with its escapes undone: hexadecimal,
    universal, octal, the named ones (``\\n``), and any other escaped character as itself
    (``\\\\``, ``\\"``). ``utf8_bytes``: the numeric escapes are bytes of UTF-8 text, as in the
    file names of a preprocessor's line markers (GCC writes ``\\303\\251`` for é); the result is
    that text when the bytes are UTF-8, else one character per byte."""
    if "\\" not in body:
        return body
    text = _ESCAPE.sub(_unescape, body)
    if utf8_bytes:
        try:
            return text.encode("latin-1").decode("utf-8")
        except (UnicodeEncodeError, UnicodeDecodeError):
            pass
    return text


def _unescape(match: re.Match[str]) -> str:
    code = match.group(1)
    if code[0] in "xuU":
        return chr(int(code[1:], 16))
    if code[0] in "01234567":
        return chr(int(code, 8))
    return _SIMPLE_ESCAPES.get(code, code)


def join_literals(text: str) -> str | None:
    """Adjacent string literals as one string (C++ concatenation), or None if ``text`` holds
    anything else."""
    if not _LITERALS.fullmatch(text):
        return None
    return decode_literals(text)


@functools.lru_cache(maxsize=4096)
def normalize_arg(text: str) -> str:
    """One template argument in a canonical spelling, whatever spaces macro expansion left: a
    space only between two words and after each comma (``metal::vec<float, 4>``, ``(N>2)``,
    ``unsigned int``, ``(1+1)``)."""
    out: list[str] = []
    for token in _TOKEN.findall(text):
        if out and token[0] in WORD and out[-1][-1] in WORD:
            out.append(" ")
        out.append(token)
        if token == ",":
            out.append(" ")
    return "".join(out).strip()


def split_top(text: str) -> list[str]:
    """Split at commas outside (), [], {} and <> (angles only outside parentheses)."""
    parts, depth, angle, start = [], 0, 0, 0
    for match in _SPLIT_AT.finditer(text):
        ch = match.group()
        if ch in "([{":
            depth += 1
        elif ch in ")]}":
            depth -= 1
        elif depth == 0 and ch == "<":
            angle += 1
        elif depth == 0 and ch == ">":
            angle -= 1
        elif ch == "," and depth == 0 and angle <= 0:
            parts.append(text[start : match.start()])
            start = match.end()
    parts.append(text[start:])
    return [p for p in (q.strip() for q in parts) if p]


def matching(text: str, at: int, pair: str, *, back: bool = False) -> int:
    """Index of the bracket matching ``text[at]``, the opening one of ``pair`` (``"()"``,
    ``"<>"``), or with ``back`` its closing one, read backwards; for angles, brackets inside
    parentheses are skipped. -1 if unbalanced. Visits bracket positions only."""
    here, there = (pair[1], pair[0]) if back else (pair[0], pair[1])
    inward, outward = (")]", "([") if back else ("([", ")]")
    found: Iterable[re.Match[str]] = (
        reversed(list(_BRACKETS.finditer(text, 0, at + 1)))
        if back
        else _BRACKETS.finditer(text, at)
    )
    depth = paren = 0
    angles = pair == "<>"
    for match in found:
        ch = match.group()
        if angles and ch in inward:
            paren += 1
        elif angles and ch in outward:
            paren -= 1
        elif paren == 0 and ch == here:
            depth += 1
        elif paren == 0 and ch == there:
            depth -= 1
            if depth == 0:
                return match.start()
    return -1


def _drop_decltype(text: str) -> str:
    """``decltype(...)`` removed (MLX's instantiation form names the function in its type)."""
    while True:
        at = text.find("decltype")
        if at < 0:
            return text
        open_ = text.find("(", at)
        close = matching(text, open_, "()") if open_ >= 0 else -1
        if close < 0:
            return text
        text = text[:at] + " " + text[close + 1 :]


def declarator(text: str) -> tuple[str, tuple[str, ...]] | None:
    """(function name, template arguments) of a declaration head without its attributes."""
    head = _drop_decltype(text).rstrip()
    if head.endswith(")"):
        open_ = matching(head, len(head) - 1, "()", back=True)
        if open_ < 0:
            return None
        head = head[:open_].rstrip()
    args: tuple[str, ...] = ()
    if head.endswith(">"):
        lt = matching(head, len(head) - 1, "<>", back=True)
        if lt < 0:
            return None
        args = tuple(normalize_arg(a) for a in split_top(head[lt + 1 : -1]))
        head = head[:lt].rstrip()
    match = _NAME_AT_END.search(head)
    return (match.group(1), args) if match else None
