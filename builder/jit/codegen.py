"""Generated C++: preambles stored as pieces, for the host JIT library and for ``embed``.

A preamble is a list of fragments (``builder.jit.preamble``). It is stored as *pieces*: each
fragment cut under the literal limit (``builder.jit.literals``). Two storage choices are
measured by ``benchmarks/bench_jit.py``:

- **dedup** (default): a piece is a C++17 ``inline`` variable named after a hash of its text.
  Every family translation unit defines the pieces it uses; identical pieces (a shared header
  such as ``common/types.h``) have identical names and definitions, and the linker keeps one
  copy. Each family stays its own generated file (touching ``unary/unary_ops.h`` regenerates
  and recompiles only ``unary.cpp``) and the library still stores a shared header once.
- **no dedup**: a family's whole preamble is cut into pieces with internal linkage, so
  each family carries its own copy of every header it includes.

With compression each piece is zlib-compressed (level 9) into a byte array, and its raw size is
stored so the run-time side can inflate it in one call.

A family's registry strings (``host_name\\0args\\0`` per kernel, catalog order) are stored the
same way, as one more list of pieces; no per-kernel table is emitted (the registry derives
offsets and the by-name order on first use), so a kernel costs only its compressible text.
"""

from __future__ import annotations

import re
import zlib
from collections.abc import Collection, Sequence
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
from builder.kernels.cxx_names import CXX_IDENTIFIER, CXX_NAMESPACE, valid_namespace

__all__ = [
    "CXX_IDENTIFIER",
    "CXX_NAMESPACE",
    "Kernel",
    "PreambleCode",
    "StoredPiece",
    "exported_piece",
    "family_pieces",
    "pool_pieces",
    "pool_text",
    "preamble_code",
    "render_family",
    "render_standalone",
    "valid_namespace",
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

    def definition(self) -> str:
        linkage = "inline constexpr" if self.shared else "constexpr"
        if self.compressed:
            return f"{linkage} unsigned char {self.name}[] = {byte_array(self.data)};"
        if "\0" in self.text:  # a string pool: raw strings cannot hold NULs portably
            parts = [cxx_string(t + "\0") for t in self.text.split("\0")[:-1]]
            return f"{linkage} char {self.name}[] =\n    " + "\n    ".join(parts) + ";"
        return f"{linkage} char {self.name}[] = {raw_literal(self.text)};"


@dataclass(frozen=True)
class Kernel:
    """One registry entry: the host name and the rest of its instantiation line."""

    host_name: str
    args: str  # the line is  <macro>("<host_name>", <args>)


def family_pieces(
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


def pool_text(kernels: Sequence[Kernel]) -> tuple[str, list[int]]:
    """The registry strings ``name\\0args\\0`` of every kernel, and each name's offset."""
    offsets, parts, used = [], [], 0
    for kernel in kernels:
        entry = f"{kernel.host_name}\0{kernel.args}\0"
        offsets.append(used)
        parts.append(entry)
        used += len(entry.encode("utf-8"))
    return "".join(parts), offsets


def pool_pieces(
    kernels: Sequence[Kernel], *, compress: bool, limit: int = LITERAL_LIMIT
) -> list[StoredPiece]:
    """The registry strings as stored pieces: plain literals cut after a NUL (under the
    literal limit), or one zlib stream (names compress well: they share long prefixes)."""
    text, _ = pool_text(kernels)
    if not text:
        return []
    parts: list[str] = []
    if compress:
        parts = [text]
    else:
        current: list[str] = []
        size = 0
        for entry in re.findall(r"[^\0]*\0", text):
            n = len(entry.encode("utf-8"))
            if n > limit:
                raise ValueError(f"registry string of {n} bytes exceeds the literal limit")
            if size + n > limit:
                parts.append("".join(current))
                current, size = [], 0
            current.append(entry)
            size += n
        parts.append("".join(current))
    pieces = []
    for part in parts:
        raw = part.encode("utf-8")
        data = zlib.compress(raw, ZLIB_LEVEL) if compress else raw + b"\0"
        name = piece_name(part, compress).replace("mbjit_", "mbjit_s", 1)
        pieces.append(StoredPiece(name, part, data, compress, shared=False))
    return pieces


def render_family(
    family: str,
    preamble: Preamble,
    pieces: Sequence[StoredPiece],
    kernels: Sequence[Kernel],
    pool: Sequence[StoredPiece],
    line_head: str,
    origin: str,
) -> str:
    """The generated translation unit of one family of the host JIT library.

    Defines ``family_<name>`` (a ``metal_jit::detail::Family``, see
    ``metal_src/host/include/metal_jit/embedded.h``) in the namespace chosen at build time.
    Family sources may also be compiled together as one translation unit (a unity build): each
    piece's definition is guarded by a macro named after the piece (equal names hold equal
    text), and the tables are named after the family.
    """
    if re.fullmatch(CXX_IDENTIFIER, family) is None:
        raise ValueError(f"family name {family!r} is not a C++ identifier")
    comment = comment_text(origin)
    out = [
        f"// Generated by metallib-builder (python -m builder.jit family) from {comment}.",
        "// Do not edit. Family: " + family,
        "// Headers (inclusion order): " + ", ".join(map(comment_text, preamble.headers)),
        '#include "metal_jit/embedded.h"',
        "",
        "namespace METAL_JIT_NAMESPACE {",
        "namespace detail {",
        "",
    ]
    defined: set[str] = set()
    for piece in pieces:
        if piece.name in defined or not piece.shared:
            continue
        defined.add(piece.name)
        out += _guarded(piece)
    out += ["", "namespace {", ""]
    for piece in [*pieces, *(pool if kernels else ())]:
        if piece.name in defined:
            continue
        defined.add(piece.name)
        out += _guarded(piece)
    table, pool_table = f"family_{family}_pieces", f"family_{family}_pool"
    out.append(f"constexpr Piece {table}[] = {{")
    out += [f"    {_piece_entry(p)}," for p in pieces]
    out.append("};")
    if kernels:
        out.append(f"constexpr Piece {pool_table}[] = {{")
        out += [f"    {_piece_entry(p)}," for p in pool]
        out.append("};")
    preamble_bytes = len(preamble.text.encode("utf-8"))
    pool_bytes = sum(p.raw_bytes for p in pool)
    out += [
        "",
        "}  // namespace",
        "",
        f"extern const Family family_{family};",
        f"const Family family_{family} = {{",
        f"    {cxx_string(family)}, {cxx_string(line_head)},",
        f"    {table}, {len(pieces)}u, {preamble_bytes}u,",
        (
            f"    {pool_table if kernels else 'nullptr'}, {len(pool)}u, "
            f"{pool_bytes}u, {len(kernels)}u}};"
        ),
        "",
        "}  // namespace detail",
        "}  // namespace METAL_JIT_NAMESPACE",
    ]
    return "\n".join(out) + "\n"


def _guarded(piece: StoredPiece) -> list[str]:
    """A piece's definition, skipped when the translation unit already holds it."""
    macro = f"MBJIT_DEFINED_{piece.name}"
    return [f"#ifndef {macro}", f"#define {macro}", piece.definition(), "#endif"]


def _piece_entry(piece: StoredPiece) -> str:
    flag = "true" if piece.compressed else "false"
    return f"{{{piece.name}, {piece.stored_bytes}u, {piece.raw_bytes}u, {flag}}}"


def render_standalone(
    entries: Sequence[tuple[str, str, Preamble]],
    namespace: str,
    origin: str,
    *,
    api: str = "string",
    lookup: bool = True,
) -> str:
    """A self-contained C++17 source with one preamble per entry ``(name, function, preamble)``.

    For other projects (``metallib-builder embed``): no dependency on our host library. Each
    preamble is a function returning its text, and ``preamble(name)`` looks one up by the header
    name it was made from. Without ``lookup`` there is no ``preamble(name)``: a host that calls
    the functions by name (MLX) can then embed several sources into one namespace, and each would
    otherwise define the same lookup. ``api`` chooses the return type and so the storage
    (:func:`preamble_code`):

    - ``string``: ``const std::string& f()``, a function-local static string assembled on first
      use (thread-safe) from pieces stored once however many preambles share them;
    - ``cstring``: ``const char* f()`` (MLX's ``jit/includes.h``) returning the preamble's whole
      text, one string literal (adjacent raw-string pieces under the literal limit, joined by the
      compiler): each function's text stored on its own, as MLX's ``make_jit_source`` stores it,
      valid for the whole program, static destructors included, with no copy at run time.
    """
    if not valid_namespace(namespace):
        raise ValueError(f"namespace {namespace!r} is not a C++ namespace name")
    if api not in ("string", "cstring"):
        raise ValueError(f"api {api!r} is neither 'string' nor 'cstring'")
    returns = "const std::string&" if api == "string" else "const char*"
    lines = [
        f"// Generated by metallib-builder embed from {comment_text(origin)}. Do not edit.",
        "// Each preamble is a header with its quoted includes inlined (each file once, with",
        "// #line markers); angle includes are left for the run-time compiler. Declarations:",
        f"//   namespace {namespace} {{",
    ]
    lines += [f"//   {returns} {func}();  // {comment_text(name)}" for name, func, _ in entries]
    if lookup:
        lines.append('//   std::string_view preamble(std::string_view header);  // "" if unknown')
    lines.append("//   }")
    if api == "string":
        lines += ["#include <cstddef>", "#include <initializer_list>", "#include <string>"]
    if api == "string" or lookup:
        lines.append("#include <string_view>")
    lines += ["", f"namespace {namespace} {{", ""]
    code = preamble_code(entries, api=api)
    if code.definitions:
        lines += ["namespace {", "", *code.definitions, "", "}  // namespace", ""]
    lines += list(code.functions)
    if lookup:
        lines.append("std::string_view preamble(std::string_view header) {")
        for name, func, _ in entries:
            lines.append(f"  if (header == {cxx_string(name)}) return {func}();")
        lines += ["  return {};", "}", ""]
    lines.append(f"}}  // namespace {namespace}")
    return "\n".join(lines) + "\n"


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
    elsewhere: Collection[str] = (),
) -> PreambleCode:
    """The one writer of embedded preambles as C++ (``embed``, and the host library of a tree
    without a catalog, ``builder.cmake_build.tree_jit``): one function per entry ``(comment,
    function, preamble)``. ``api`` as for :func:`render_standalone`:

    - ``string``: assembled on first use from pieces stored once per translation unit (internal
      linkage); ``elsewhere`` names pieces the caller declares and defines once for several
      translation units (:func:`exported_piece`): used here, not stored here;
    - ``cstring``: the function returns its whole text as one literal; nothing is shared, so
      ``elsewhere`` does not apply."""
    if api == "cstring":
        return _cstring_code(entries)
    definitions: list[str] = []
    defined: dict[str, int] = {}
    functions: list[str] = []
    for comment, func, preamble in entries:
        pieces = family_pieces(preamble, dedup=True, compress=False)
        for piece in pieces:
            if piece.name not in defined and piece.name not in elsewhere:
                defined[piece.name] = piece.stored_bytes
                # One translation unit: internal linkage. The text itself is never edited.
                definitions.append(replace(piece, shared=False).definition())
        views = ", ".join(f"{{{p.name}, {p.raw_bytes}u}}" for p in pieces)
        functions += [
            f"// {comment_text(comment)}",
            f"const std::string& {func}() {{",
            f"  static const std::string text = join({{{views}}});",
            "  return text;",
            "}",
            "",
        ]
    if functions:
        definitions += ["", *_JOIN_STRING]
    return PreambleCode(tuple(definitions), tuple(functions), sum(defined.values()))


def _cstring_code(entries: Sequence[tuple[str, str, Preamble]]) -> PreambleCode:
    """``const char* f() { return R"(...)" R"(...)"; }`` per entry: the compiler joins the
    pieces (each under the literal limit) into one NUL-ended array (MSVC since Visual Studio
    2022 17.0 has no limit on the joined length; GCC and Clang never had one)."""
    functions: list[str] = []
    stored = 0
    for comment, func, preamble in entries:
        parts = split_text(preamble.text)
        functions += [f"// {comment_text(comment)}", f"const char* {func}() {{"]
        functions.append(f"  return {raw_literal(parts[0])}")
        functions += [f"         {raw_literal(part)}" for part in parts[1:]]
        functions[-1] += ";"
        functions += ["}", ""]
        stored += len(preamble.text.encode("utf-8")) + 1
    return PreambleCode((), tuple(functions), stored)


def exported_piece(piece: StoredPiece, *, define: bool) -> str:
    """A piece several translation units of one library use, stored once: its definition with
    external linkage (``define``) in one of them, its declaration in the others."""
    if piece.compressed or "\0" in piece.text:
        raise ValueError(f"piece {piece.name}: only plain text pieces are exported")
    if not define:
        return f"extern const char {piece.name}[];"
    return f"extern const char {piece.name}[] = {raw_literal(piece.text)};"


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
