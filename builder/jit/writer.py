"""The one writer of run-time (JIT) C++: preambles as stored text and as functions returning it.

Every generated source that embeds kernel text is written with these pieces and functions:
``embed``'s standalone source (``builder.jit.generate.render_standalone``, which ``variants``
writes too) and a tree's host library (``builder.cmake_build.tree_jit``: each unit's data in its
own translation unit, the functions in a shared one), a catalog tree's with its kernel table
(:func:`kernel_table`, which ``metal_src/host/registry.cpp`` serves as
``metal_jit::source_for``).

A preamble is a list of fragments (``builder.jit.preamble``), stored as *pieces*: each fragment
cut under the literal limit (``builder.jit.literals``). With dedup a piece is named after a hash
of its text, so two preambles sharing a header store it once (per translation unit, or per
library with C++17 ``inline`` variables); with compression each piece is a zlib stream (level
9) and its raw size is stored so the run-time side can inflate it in one call.

Two storages, by the API (:func:`preamble_code`): ``string`` stores each preamble as pieces
and assembles it on first use; ``cstring`` stores each preamble's whole text as one literal, as
MLX does. Either may be stored in another translation unit of the library (:func:`unit_piece`,
:func:`text_array`: the data of a tree's JIT unit, which includes no header), and is then used
here by its qualified name. Standard library and ``builder`` only (runs in CMake).
"""

from __future__ import annotations

import re
import zlib
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, replace

from builder.jit.literals import (
    LITERAL_LIMIT,
    byte_array,
    comment_text,
    cxx_string,
    piece_name,
    raw_literal,
    split_text,
)
from builder.jit.preamble import Preamble

__all__ = [
    "ZLIB_LEVEL",
    "PreambleCode",
    "StoredPiece",
    "TableUnit",
    "cstring_bytes",
    "kernel_table",
    "preamble_code",
    "stored_pieces",
    "table_pieces",
    "text_array",
    "unit_lookup",
    "unit_piece",
]

ZLIB_LEVEL = 9


@dataclass(frozen=True)
class StoredPiece:
    """One stored array: its C++ name, the text it holds and the bytes it occupies."""

    name: str
    text: str
    data: bytes  # what the array holds: UTF-8 text (+ NUL) or the zlib stream
    compressed: bool
    shared: bool  # external (inline) linkage: merged across translation units

    @property
    def stored_bytes(self) -> int:
        return len(self.data)

    @property
    def raw_bytes(self) -> int:
        return len(self.text.encode("utf-8"))

    @property
    def element(self) -> str:
        return "unsigned char" if self.compressed else "char"

    def definition(self, linkage: str | None = None) -> str:
        """The array's definition; ``linkage`` overrides the one its sharing implies."""
        if linkage is None:
            linkage = "inline constexpr" if self.shared else "constexpr"
        head = f"{linkage} {self.element} {self.name}[] ="
        if self.compressed:
            return f"{head} {byte_array(self.data)};"
        if "\0" in self.text:  # a kernel table: raw strings cannot hold NULs portably
            parts = [cxx_string(t + "\0") for t in self.text.split("\0")[:-1]]
            return f"{head}\n    " + "\n    ".join(parts) + ";"
        return f"{head} {raw_literal(self.text)};"


def stored_pieces(
    preamble: Preamble, *, dedup: bool, compress: bool, limit: int = LITERAL_LIMIT
) -> list[StoredPiece]:
    """The pieces that store ``preamble``, in order (their texts concatenate to it)."""
    texts: list[str] = []
    if dedup:
        for fragment in preamble.fragments:
            texts.extend(split_text(fragment.text, limit))
    elif compress:
        texts = [preamble.text]  # byte arrays have no literal limit; one stream compresses best
    else:
        texts = split_text(preamble.text, limit)
    pieces = []
    for text in texts:
        raw = text.encode("utf-8")
        data = zlib.compress(raw, ZLIB_LEVEL) if compress else raw + b"\0"
        pieces.append(StoredPiece(piece_name(text, compress), text, data, compress, dedup))
    return pieces


@dataclass(frozen=True)
class PreambleCode:
    """Preambles as C++: what goes in the anonymous namespace (the pieces, each stored once, and
    the join helper when a preamble needs it) and the functions returning each preamble."""

    definitions: tuple[str, ...]
    functions: tuple[str, ...]
    stored_bytes: int
    """Bytes the arrays and literals store, NULs included: with ``string`` a piece shared by
    several preambles once; with ``cstring`` each preamble's whole text, once per function."""


def preamble_code(
    entries: Sequence[tuple[str, str, Preamble]],
    *,
    api: str = "string",
    stored_in: Mapping[str, str] | None = None,
    dedup: bool = True,
    compress: bool = False,
) -> PreambleCode:
    """The one writer of embedded preambles as C++ (``embed``, and the host library of a tree
    without a catalog, ``builder.cmake_build.tree_jit``): one function per entry ``(comment,
    function, preamble)``. ``api`` as for :func:`render_standalone`:

    - ``string``: assembled on first use from pieces stored once per translation unit (internal
      linkage); with ``compress`` each piece is a zlib stream, inflated on first use (the text is
      then empty if one fails to inflate; the source needs ``<zlib.h>``); without ``dedup`` a
      preamble is cut into pieces of its own (:func:`stored_pieces`);
    - ``cstring``: the function returns its whole text as one literal; nothing is shared.

    ``stored_in`` maps what another translation unit stores to the namespace it is stored in:
    pieces by name (``string``, :func:`unit_piece`), a function's whole text by the function's
    name (``cstring``, :func:`text_array`). It is used here by that qualified name and neither
    stored nor counted here."""
    elsewhere = stored_in or {}
    if api == "cstring":
        return _cstring_code(entries, elsewhere)
    definitions: list[str] = []
    defined: dict[str, int] = {}
    functions: list[str] = []
    for comment, func, preamble in entries:
        pieces = stored_pieces(preamble, dedup=dedup, compress=compress)
        for piece in pieces:
            if piece.name not in defined and piece.name not in elsewhere:
                defined[piece.name] = piece.stored_bytes
                # One translation unit: internal linkage. The text itself is never edited.
                definitions.append(replace(piece, shared=False).definition())
        names = [
            f"{elsewhere[p.name]}::{p.name}" if p.name in elsewhere else p.name for p in pieces
        ]
        assemble = "inflate" if compress else "join"
        if compress:
            parts = [f"{{{n}, {p.stored_bytes}u, {p.raw_bytes}u}}" for n, p in zip(names, pieces)]
        else:
            parts = [f"{{{n}, {p.raw_bytes}u}}" for n, p in zip(names, pieces)]
        functions += [
            f"// {comment_text(comment)}",
            f"const std::string& {func}() {{",
            f"  static const std::string text = {assemble}({{{', '.join(parts)}}});",
            "  return text;",
            "}",
            "",
        ]
    if functions:
        definitions += ["", *(_INFLATE if compress else _JOIN_STRING)]
    return PreambleCode(tuple(definitions), tuple(functions), sum(defined.values()))


def _cstring_code(
    entries: Sequence[tuple[str, str, Preamble]], elsewhere: Mapping[str, str]
) -> PreambleCode:
    """``const char* f() { return R"(...)" R"(...)"; }`` per entry: the compiler joins the
    pieces (each under the literal limit) into one NUL-ended array (MSVC since Visual Studio
    2022 17.0 has no limit on the joined length; GCC and Clang never had one). A text another
    translation unit stores is returned by its name there."""
    functions: list[str] = []
    stored = 0
    for comment, func, preamble in entries:
        functions += [f"// {comment_text(comment)}", f"const char* {func}() {{"]
        if func in elsewhere:
            functions += [f"  return {elsewhere[func]}::{func};", "}", ""]
            continue
        parts = split_text(preamble.text)
        functions.append(f"  return {raw_literal(parts[0])}")
        functions += [f"         {raw_literal(part)}" for part in parts[1:]]
        functions[-1] += ";"
        functions += ["}", ""]
        stored += cstring_bytes(preamble)
    return PreambleCode((), tuple(functions), stored)


def cstring_bytes(preamble: Preamble) -> int:
    """What a ``cstring`` text stores: its UTF-8 bytes and the NUL that ends the array."""
    return len(preamble.text.encode("utf-8")) + 1


def unit_lookup(whole: Sequence[tuple[str, str]], name: str) -> list[str]:
    """A tree's host library's ``name(unit)`` (``unit_source``) over its whole-file units
    ``(unit, function)``, whose functions come before it in the same translation unit."""
    return [
        '// The whole text of a JIT entry file embedded whole, by its name; "" for any other.',
        f"std::string_view {name}(std::string_view unit) {{",
        *(f"  if (unit == {cxx_string(unit)}) return {function}();" for unit, function in whole),
        '  return "";  // not null: a host may hand data() to a C API',
        "}",
        "",
    ]


_HIDDEN = '__attribute__((visibility("hidden")))'


def unit_piece(piece: StoredPiece, *, define: bool) -> str:
    """A piece one translation unit of a library stores and another uses: its definition
    (``define``) or declaration, with external linkage kept inside the library (hidden: no
    export, and ELF and Mach-O linkers make it a local symbol of the library). No header is
    needed for either."""
    if not define:
        return f"{_HIDDEN} extern const {piece.element} {piece.name}[];"
    return piece.definition(f"{_HIDDEN} extern const")


def text_array(function: str, preamble: Preamble, *, define: bool) -> str:
    """A ``cstring`` preamble's whole text as an array named after its ``function`` (in the
    unit's namespace, where it cannot clash with the function), stored in one translation unit
    and returned by the function in another: its definition (``define``, the literal pieces
    joined by the compiler) or declaration, hidden like :func:`unit_piece`."""
    if not define:
        return f"{_HIDDEN} extern const char {function}[];"
    parts = [raw_literal(part) for part in split_text(preamble.text)]
    joined = "\n    ".join(parts)
    return f"{_HIDDEN} extern const char {function}[] =\n    {joined};"


_JOIN_STRING = (
    "std::string join(std::initializer_list<std::string_view> parts) {",
    "  std::string text;",
    "  std::size_t size = 0;",
    "  for (std::string_view part : parts) size += part.size();",
    "  text.reserve(size);",
    "  for (std::string_view part : parts) text.append(part);",
    "  return text;",
    "}",
)

_INFLATE = (
    "struct Stored {",
    "  const unsigned char* data;",
    "  unsigned long size;",
    "  unsigned long raw_size;",
    "};",
    "",
    "// Empty when a piece fails to inflate (the caller knows the size to expect).",
    "std::string inflate(std::initializer_list<Stored> parts) {",
    "  std::string text;",
    "  for (const Stored& part : parts) {",
    "    const std::size_t start = text.size();",
    "    text.resize(start + part.raw_size);",
    "    uLongf size = part.raw_size;",
    "    if (uncompress(reinterpret_cast<Bytef*>(&text[start]), &size, part.data, part.size) !=",
    "            Z_OK ||",
    "        size != part.raw_size) {",
    "      return std::string();",
    "    }",
    "  }",
    "  return text;",
    "}",
)


@dataclass(frozen=True)
class TableUnit:
    """One unit of a kernel table (the host library's registry, ``metal_jit/registry.h``): the
    function returning its preamble, and its kernels, each the host name and the rest of its
    instantiation line (``<line head><host name>", <arguments>)``)."""

    name: str
    function: str
    preamble: Preamble
    kernels: tuple[tuple[str, str], ...]


def table_pieces(
    unit: TableUnit, *, compress: bool, limit: int = LITERAL_LIMIT
) -> list[StoredPiece]:
    """A unit's kernel strings ``name\\0arguments\\0`` (in table order) as pieces: plain
    literals cut after a NUL under the literal limit, or one zlib stream (the names share long
    prefixes and compress well)."""
    text = "".join(f"{name}\0{arguments}\0" for name, arguments in unit.kernels)
    if not text:
        return []
    parts: list[str] = [text] if compress else []
    current: list[str] = []
    size = 0
    for entry in [] if compress else re.findall(r"[^\0]*\0", text):
        n = len(entry.encode("utf-8"))
        if n > limit:
            raise ValueError(f"a kernel table string of {n} bytes exceeds the literal limit")
        if size + n > limit:
            parts.append("".join(current))
            current, size = [], 0
        current.append(entry)
        size += n
    if current:
        parts.append("".join(current))
    pieces = []
    for part in parts:
        raw = part.encode("utf-8")
        data = zlib.compress(raw, ZLIB_LEVEL) if compress else raw + b"\0"
        name = piece_name(part, compress).replace("mbjit_", "mbjit_s", 1)
        pieces.append(StoredPiece(name, part, data, compress, shared=False))
    return pieces


def kernel_table(
    units: Sequence[tuple[TableUnit, str, Sequence[StoredPiece]]],
    namespace: str,
    line_head: str,
    *,
    compressed: bool,
) -> list[str]:
    """The kernel table's C++ (``metal_jit/embedded.h``'s ``detail::unit_table()``), in the
    namespace of the preamble functions: per unit (with the namespace its pieces are stored in,
    and :func:`table_pieces`) its name, its preamble function and size, its kernel strings."""
    lines = ["namespace detail {", "namespace {", ""]
    rows = []
    for index, (unit, scope, pieces) in enumerate(units):
        table = "nullptr"
        if pieces:
            table = f"kernels_{index}"
            flag = "true" if compressed else "false"
            lines.append(f"const Piece {table}[] = {{")
            lines += [
                f"    {{{scope}::{p.name}, {p.stored_bytes}u, {p.raw_bytes}u, {flag}}},"
                for p in pieces
            ]
            lines.append("};")
        rows.append(
            f"    {{{cxx_string(unit.name)}, &::{namespace}::{unit.function}, "
            f"{len(unit.preamble.text.encode('utf-8'))}u, {table}, {len(pieces)}u, "
            f"{sum(p.raw_bytes for p in pieces)}u, {len(unit.kernels)}u}},"
        )
    if rows:
        lines += ["const Unit units[] = {", *rows, "};", ""]
    lines += ["}  // namespace", "", "const UnitTable& unit_table() {"]
    items = "units" if rows else "nullptr"
    fields = f"{items}, {len(rows)}u, {cxx_string(line_head)}, {'true' if compressed else 'false'}"
    lines += [
        f"  static const UnitTable table{{{fields}}};",
        "  return table;",
        "}",
        "",
        "}  // namespace detail",
    ]
    return lines
