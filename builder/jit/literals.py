"""Turning text into C++ source: raw-string pieces under literal limits, byte arrays, names, and
file names quoted so that no byte of them can leave a string literal or a comment.

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
"""

from __future__ import annotations

import hashlib
import re

__all__ = [
    "LITERAL_LIMIT",
    "UNIT_NAMESPACE_PREFIX",
    "byte_array",
    "comment_text",
    "cxx_string",
    "piece_name",
    "raw_delimiter",
    "raw_literal",
    "split_text",
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
