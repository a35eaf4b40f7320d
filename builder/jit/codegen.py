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
from collections.abc import Sequence
from dataclasses import dataclass

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
from builder.jit.unit_names import unit_namespace
from builder.settings.checks import (
    CXX_IDENTIFIER,
    CXX_NAMESPACE,
    namespace_problem,
    valid_namespace,
)

__all__ = [
    "CXX_IDENTIFIER",
    "CXX_NAMESPACE",
    "Kernel",
    "StoredPiece",
    "family_pieces",
    "namespace_problem",
    "pool_pieces",
    "pool_text",
    "render_family",
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
    ``metal_src/host/include/metal_jit/embedded.h``, which includes no header) in the namespace
    chosen at build time. The arrays only this family stores (its registry strings, their
    tables, pieces without dedup) are in the family's own namespace
    (``builder.jit.unit_names``), so each symbol names its unit in ELF and Mach-O alike; pieces
    stored once for several families (dedup) are named after their text, outside it.
    Family sources may also be compiled together as one translation unit (a unity build): each
    piece's definition is guarded by a macro named after the piece (equal names hold equal
    text) and, inside the family's namespace, after the family too.
    """
    if re.fullmatch(CXX_IDENTIFIER, family) is None:
        raise ValueError(f"family name {family!r} is not a C++ identifier")
    comment = comment_text(origin)
    scope = unit_namespace(family)
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
    out += ["", "namespace {", f"namespace {scope} {{", ""]
    for piece in [*pieces, *(pool if kernels else ())]:
        if piece.name in defined:
            continue
        defined.add(piece.name)
        out += _guarded(piece, scope)
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
        f"}}  // namespace {scope}",
        "}  // namespace",
        "",
        f"extern const Family family_{family};",
        f"const Family family_{family} = {{",
        f"    {cxx_string(family)}, {cxx_string(line_head)},",
        f"    {scope}::{table}, {len(pieces)}u, {preamble_bytes}u,",
        (
            f"    {f'{scope}::{pool_table}' if kernels else 'nullptr'}, {len(pool)}u, "
            f"{pool_bytes}u, {len(kernels)}u}};"
        ),
        "",
        "}  // namespace detail",
        "}  // namespace METAL_JIT_NAMESPACE",
    ]
    return "\n".join(out) + "\n"


def _guarded(piece: StoredPiece, scope: str = "") -> list[str]:
    """A piece's definition, skipped when the translation unit already holds it (in ``scope``,
    a family's namespace, when given)."""
    macro = f"MBJIT_DEFINED_{piece.name}" + (f"_IN_{scope}" if scope else "")
    return [f"#ifndef {macro}", f"#define {macro}", piece.definition(), "#endif"]


def _piece_entry(piece: StoredPiece) -> str:
    flag = "true" if piece.compressed else "false"
    return f"{{{piece.name}, {piece.stored_bytes}u, {piece.raw_bytes}u, {flag}}}"
