"""C++ text in and out for the run-time sources: where a header's comments and directives are (the
inliner's lexing, below), and text turned into C++ source: raw-string pieces under literal limits,
byte arrays, names, and file names quoted so that no byte of them can leave a string literal or a
comment.

Compilers limit string literals: MSVC rejects a single literal piece over 16,380 bytes (C2026)
and a concatenation over 65,535. Every embedded text is therefore cut into pieces of at most
:data:`LITERAL_LIMIT` bytes, each its own array (never concatenated at compile time), preferably
at line boundaries and never inside a UTF-8 sequence.

A raw string ``R"d(...)d"`` ends at the first ``)d"``, so the delimiter ``d`` is chosen per piece:
``mbjit``, else ``mbjit0``, ``mbjit1``, ... — the first whose closing sequence does not occur in
the text. It depends on the piece alone, so the same piece is spelled the same everywhere.

File names come from the kernel tree, which may be someone else's (a pull request): a newline, a
``"`` or a backslash in a name must not end a ``#line`` string, a registry key or a ``//``
comment of generated C++. :func:`cxx_string` writes any text as an ordinary string literal made
of printable ASCII only; :func:`comment_text` writes a name for a ``//`` comment (as it is when
that is safe, else as such a literal).

**The unit namespace** (:func:`unit_namespace`) carries a JIT unit's name into the symbols of its
generated arrays. A host library is measured per unit by symbol (``builder.size.jit_sizes``).
Telling which unit a symbol belongs to used to rest on ELF's ``STT_FILE`` symbols (the locals
after ``unary.cpp``'s file symbol are ``unary``'s); Mach-O has none, so a Mac build's ``.dylib``
could not be measured per unit. Instead, every array a unit's generated source stores is
declared in a namespace named after the unit, so the unit is in each symbol's (mangled) name
whatever the object format::

    namespace metal_jit::detail { namespace { namespace mbjit_unit_unary { ... } } }
    -> _ZN9metal_jit6detail12_GLOBAL__N_116mbjit_unit_unary17family_unary_poolE

The name is ``mbjit_unit_`` and the unit's name encoded one to one: ``[A-Za-z0-9]`` stays, any
other byte of its UTF-8 becomes two lowercase hex digits and a ``_`` (``unary_subset.metal`` ->
``mbjit_unit_unary5f_subset2e_metal``). The ``_`` follows the two hex digits, so no two
underscores ever meet (a C++ identifier holding ``__`` is reserved) and no two units share a
namespace. Standard library only: the generator runs in CMake's build environment.

Just enough C-family lexing for the inliner: where comments are, and removing them.

The inliner must not treat ``#include`` inside a block comment as a directive, and with
``strip_comments`` it drops comments from embedded text (smaller libraries) while keeping every
newline, so ``#line`` markers still point at the right lines. String and character literals
(including raw strings and digit separators) are skipped so that ``"http://..."`` is not a
comment.
"""

from __future__ import annotations

import hashlib
import re
from bisect import bisect_left
from collections.abc import Iterator
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from builder.kernels.definitions import LineStarts

__all__ = [
    "LITERAL_LIMIT",
    "UNIT_NAMESPACE_PREFIX",
    "byte_array",
    "comment_spans",
    "comment_text",
    "cxx_string",
    "directives",
    "piece_name",
    "raw_delimiter",
    "raw_literal",
    "split_text",
    "strip_comments",
    "unit_namespace",
]


LITERAL_LIMIT = 16_000  # bytes per literal piece: under MSVC's 16,380 (C2026), with margin
_DELIMITER = "mbjit"


def split_text(text: str, limit: int = LITERAL_LIMIT) -> list[str]:
    """``text`` in pieces of at most ``limit`` UTF-8 bytes, cut after a newline where possible."""
    if limit < 4:
        raise ValueError("limit must leave room for one UTF-8 character")
    data = text.encode("utf-8")
    pieces: list[str] = []
    start = 0
    while len(data) - start > limit:
        end = data.rfind(b"\n", start, start + limit) + 1
        if end <= start:  # one line longer than the limit: cut at a character boundary
            end = start + limit
            while end > start and (data[end] & 0xC0) == 0x80:
                end -= 1
        pieces.append(data[start:end].decode("utf-8"))
        start = end
    if start < len(data) or not pieces:
        pieces.append(data[start:].decode("utf-8"))
    return pieces


def raw_delimiter(text: str) -> str:
    """The first of ``mbjit``, ``mbjit0``, ``mbjit1``, ... whose ``)d"`` is not in ``text``."""
    candidate, k = _DELIMITER, 0
    while f'){candidate}"' in text:
        candidate, k = f"{_DELIMITER}{k}", k + 1
    if len(candidate) > 16:  # the language limit; unreachable for any real text
        raise ValueError("no raw-string delimiter fits this text")
    return candidate


def raw_literal(text: str) -> str:
    """``text`` as one C++ raw string literal (the caller keeps it under the limit)."""
    delim = raw_delimiter(text)
    return f'R"{delim}({text}){delim}"'


def byte_array(data: bytes, per_line: int = 24) -> str:
    """``{0x78, ...}`` initializer for binary data (compressed pieces), wrapped for diffs."""
    if not data:
        return "{}"
    rows = []
    for k in range(0, len(data), per_line):
        rows.append("    " + ",".join(f"0x{b:02x}" for b in data[k : k + per_line]) + ",")
    return "{\n" + "\n".join(rows) + "\n}"


def piece_name(text: str, compressed: bool) -> str:
    """A C++ name derived from the content: equal text means equal name (and definition)."""
    digest = hashlib.sha256(text.encode("utf-8")).hexdigest()[:20]
    return f"mbjit_{'z' if compressed else 't'}_{digest}"


_PLAIN = re.compile(r"[ !#->@-\[\]-~]*")  # printable ASCII except " ? \\
_COMMENT_SAFE = re.compile(r"[ -\[\]-~]*")  # printable ASCII except \\


def _utf8(char: str) -> bytes:
    """A character's bytes; a file name's undecodable byte (``surrogateescape``) is that byte."""
    try:
        return char.encode("utf-8", "surrogateescape")
    except UnicodeEncodeError:  # a lone surrogate that no file name decoded to
        return char.encode("utf-8", "surrogatepass")


def cxx_string(text: str) -> str:
    """``text`` as an ordinary C/C++ string literal of printable ASCII: ``\\`` and ``\"``
    escaped, ``?`` and every other byte (control characters, UTF-8 sequences, a file name's
    undecodable bytes) as a three-digit octal escape, so a following digit is never absorbed and
    no trigraph can form. The compiler reads back exactly the original bytes, also in ``#line``."""
    if _PLAIN.fullmatch(text):
        return f'"{text}"'
    out = []
    for char in text:
        if char in '\\"':
            out.append("\\" + char)
        elif _PLAIN.fullmatch(char):
            out.append(char)
        else:
            out += [f"\\{b:03o}" for b in _utf8(char)]
    return '"' + "".join(out) + '"'


def comment_text(name: str) -> str:
    """``name`` for a ``//`` comment: as it is when it is printable ASCII without a backslash
    (nothing in it can end the line or splice the next one into the comment), else quoted as
    :func:`cxx_string` writes it."""
    return name if _COMMENT_SAFE.fullmatch(name) else cxx_string(name)


UNIT_NAMESPACE_PREFIX = "mbjit_unit_"

_KEPT = frozenset(b"ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789")


def unit_namespace(unit: str) -> str:
    """The namespace holding ``unit``'s arrays (``steel/gemm.metal`` ->
    ``mbjit_unit_steel2f_gemm2e_metal``); distinct units give distinct names."""
    encoded = "".join(chr(b) if b in _KEPT else f"{b:02x}_" for b in unit.encode("utf-8"))
    return UNIT_NAMESPACE_PREFIX + encoded


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
