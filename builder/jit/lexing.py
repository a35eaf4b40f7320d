"""Just enough C-family lexing for the inliner: where comments are, and removing them.

The inliner must not treat ``#include`` inside a block comment as a directive, and with
``strip_comments`` it drops comments from embedded text (smaller libraries) while keeping every
newline, so ``#line`` markers still point at the right lines. String and character literals
(including raw strings and digit separators) are skipped so that ``"http://..."`` is not a
comment.
"""

from __future__ import annotations

import re
from bisect import bisect_left
from collections.abc import Iterator

from builder.kernels.definitions import LineStarts

__all__ = ["comment_spans", "directives", "strip_comments"]

_START = re.compile(r"""[/"']""")
"""The characters that can start a comment or a literal: the scan jumps from one to the next."""

_RAW_PREFIXES = frozenset({"R", "uR", "UR", "LR", "u8R"})
_LONGEST_RAW_PREFIX = max(map(len, _RAW_PREFIXES))
_NOT_IN_DELIMITER = frozenset(' ()\\\t\v\f\n"')


def _is_raw_prefix(text: str, quote: int) -> bool:
    """Whether the identifier that ends at ``quote`` is a raw-string prefix (``R"(...)"``).

    Only the last few characters are looked at, so a scan stays linear in the text (a search
    back from the file's start per quote made ggml's 499 KB file take 30 s).
    """
    start = quote
    while start > quote - _LONGEST_RAW_PREFIX - 1 and start > 0:
        c = text[start - 1]
        if not (c.isascii() and (c.isalnum() or c == "_")):
            break
        start -= 1
    return text[start:quote] in _RAW_PREFIXES


def _skip_quoted(text: str, i: int, quote: str) -> int:
    """Index after the literal opened at ``i`` (an unterminated one ends at the line end)."""
    n = len(text)
    j = i + 1
    while j < n and text[j] != quote and text[j] != "\n":
        j += 2 if text[j] == "\\" else 1
    return min(j + 1, n)


def _skip_raw(text: str, i: int) -> int | None:
    """Index after the raw string whose quote is at ``i``, or None if it is malformed."""
    open_paren = text.find("(", i + 1, i + 18)
    if open_paren < 0:
        return None
    delimiter = text[i + 1 : open_paren]
    if any(c in _NOT_IN_DELIMITER for c in delimiter):
        return None
    end = text.find(f'){delimiter}"', open_paren + 1)
    return len(text) if end < 0 else end + len(delimiter) + 2


def comment_spans(text: str) -> list[tuple[int, int]]:
    """``[start, end)`` of every comment; a line comment excludes its terminating newline."""
    spans = []
    i, n = 0, len(text)
    while i < n:
        c = text[i]
        if c == "/" and text.startswith("/*", i):
            end = text.find("*/", i + 2)
            end = n if end < 0 else end + 2
            spans.append((i, end))
            i = end
        elif c == "/" and text.startswith("//", i):
            end = i
            while True:  # a backslash at the end of a line comment continues it
                end = text.find("\n", end)
                if end < 0:
                    end = n
                    break
                if text[end - 1] != "\\":
                    break
                end += 1
            spans.append((i, end))
            i = end
        elif c == '"':
            raw = _skip_raw(text, i) if _is_raw_prefix(text, i) else None
            i = raw if raw is not None else _skip_quoted(text, i, '"')
        elif c == "'":
            if i > 0 and text[i - 1].isdigit():  # digit separator: 1'000
                i += 1
            else:
                i = _skip_quoted(text, i, "'")
        else:  # a slash that starts no comment, or any other character: to the next candidate
            found = _START.search(text, i + 1)
            i = found.start() if found else n
    return spans


def directives(text: str, lines: LineStarts) -> Iterator[tuple[int, re.Match[str]]]:
    """(line number, match) of each line that ``lines`` matches and that starts outside a
    comment: the engine looks only where lines start, and no Python runs per line."""
    spans = comment_spans(text)
    span_starts = [start for start, _ in spans]
    number, counted = 1, 0
    for at, match in lines.finditer(text):
        number += text.count("\n", counted, at)
        counted = at
        # inside a comment: after its first character, before its end
        inside = bisect_left(span_starts, at) - 1
        if inside < 0 or at >= spans[inside][1]:
            yield number, match


def _in_directive(text: str, position: int) -> bool:
    """Whether ``position`` is on a logical line that starts with ``#`` (continuations
    followed back)."""
    start = text.rfind("\n", 0, position) + 1
    while start >= 2 and text[start - 2] == "\\":
        start = text.rfind("\n", 0, start - 1) + 1
    return text[start:position].lstrip().startswith("#")


def strip_comments(text: str) -> str:
    """``text`` without comments and trailing blanks; every newline kept (line numbers hold).

    A comment becomes one space (``a/**/b`` must stay two tokens). A block comment spanning
    lines keeps its newlines; inside a directive they become line splices (backslash-newline),
    since a comment there must not end the directive.
    """
    out, last = [], 0
    for start, end in comment_spans(text):
        out.append(text[last:start])
        body = text[start:end]
        newlines = body.count("\n")
        if not body.startswith("/*"):
            out.append("\n" * newlines)  # a line comment spans lines only through splices
        elif newlines and _in_directive(text, start):
            out.append(" " + "\\\n" * newlines)
        else:
            out.append("\n" * newlines if newlines else " ")
        last = end
    out.append(text[last:])
    return "\n".join(line.rstrip() for line in "".join(out).split("\n"))
