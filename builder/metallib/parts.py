"""A library as parts to be written: what the writer lays out and what a subset selects.

``LibraryParts`` holds everything that is not derived from layout: header bytes 4-15, the
extension tags (in order), the dynamic header, and the functions as a ``FunctionTable`` over the
bytes that hold them (``source``), so the writer has one way to write a function: copy its pieces
from the source and patch its entry's offsets. Functions of an existing library are its table
(``parts_from_library``); the synthetic libraries of the tests are laid out in memory first, the
way a library holds them (``tests/synthetic.py``).
"""

from __future__ import annotations

import struct
from bisect import bisect_right
from collections.abc import Sequence
from dataclasses import dataclass

from builder.errors import MetallibError, MetallibUnsupportedError
from builder.metallib.reader import Metallib
from builder.metallib.structs import (
    OFFSET_TAGS,
    U32,
    WIDE_TAGS,
    show_code,
)
from builder.metallib.table import FunctionTable

__all__ = [
    "Bytes",
    "LibraryParts",
    "parts_from_library",
    "reflection_piece",
    "tag_bytes",
]


Bytes = bytes | bytearray | memoryview


@dataclass(repr=False)
class LibraryParts:
    """Everything needed to write a library."""

    raw_version: bytes
    """Header bytes 4-15, verbatim."""
    extension: list[tuple[bytes, Bytes]]
    """Header-extension tags in order; RLST/HDYN payloads are recomputed, UUID per ``uuid``."""
    functions: FunctionTable
    """The functions to write, in order, as a table over the bytes that hold them."""
    starts: tuple[int, ...]
    """Per ``Piece``: where that kind of piece starts in ``functions.data`` when the whole
    source is kept (first entry, first piece of each section). A kind whose pieces fill one
    run from there keeps every offset in the output, and its entries need no patching."""
    dynamic_header: Bytes | None = None
    uuid: bytes | None = None
    """UUID to write; None with a UUID tag present means derive one from the content."""
    source: tuple[int, int] | None = None
    """A file descriptor of ``functions.data``'s file and where ``functions.data`` starts in
    it, for copies in the kernel (or None)."""

    def __repr__(self) -> str:
        return (
            f"LibraryParts({len(self.functions)} functions, "
            f"extension={[c for c, _ in self.extension]})"
        )

    @property
    def has_reflection_list(self) -> bool:
        return any(code == b"RLST" for code, _ in self.extension)


_TAG = struct.Struct("<4sH")


def tag_bytes(code: bytes, payload: Bytes) -> bytes:
    """One tag as stored: code, u16 length (u32 for the wide tags), payload."""
    if code in WIDE_TAGS:
        return code + U32.pack(len(payload)) + bytes(payload)
    if len(payload) > 0xFFFF:
        raise MetallibError(f"tag {code!r} payload of {len(payload)} bytes exceeds 65535")
    return _TAG.pack(code, len(payload)) + bytes(payload)


def reflection_piece(pad: int, flatbuffer: Bytes) -> bytes:
    """A reflection piece as stored: u32 size, RBUF, u32 payload length, ``pad`` zero bytes (so
    the FlatBuffer starts 16-aligned in the file), the FlatBuffer, ENDT."""
    n = pad + len(flatbuffer)
    return U32.pack(16 + n) + b"RBUF" + U32.pack(n) + bytes(pad) + bytes(flatbuffer) + b"ENDT"


# ---------------------------------------------------------------------------------------------
# The functions of an existing library chosen for a rewrite (``slim``, an identity rewrite).
#
# Nothing is copied: the parts are the library's own ``FunctionTable`` (or a selection of its
# rows) over the memory map, so building them for 17,000 functions costs list arithmetic, and the
# writer copies unchanged runs of the source in the kernel.


_UNSUPPORTED_FUNCTION_TAGS = frozenset({b"SOFF"})


def parts_from_library(lib: Metallib, indices: Sequence[int] | None = None) -> LibraryParts:
    """The parts of ``lib`` for the functions at ``indices`` (all when None), in file order.

    Keeping every function keeps the input's UUID, so the rewrite is byte-identical; a proper
    subset gets ``uuid=None`` and the writer derives a new one from the output's content.
    """
    unsupported = [tag.code for tag in lib.extension if tag.code in OFFSET_TAGS]
    if unsupported:
        names = ", ".join(show_code(code) for code in unsupported)
        raise MetallibUnsupportedError(
            f"{lib.display_name}: cannot rewrite a library with {names} sections "
            "(embedded sources or symbol lists are not supported)"
        )
    table = lib.columns()
    count = len(table)
    chosen = range(count) if indices is None else sorted(set(indices))
    if len(chosen) and not 0 <= chosen[0] <= chosen[-1] < count:
        raise IndexError(f"function index out of range 0..{count - 1}")
    for index in _entries_containing(lib, table, b"SOFF", chosen):
        if any(code in _UNSUPPORTED_FUNCTION_TAGS for code, _, _ in table[index].tags):
            raise MetallibUnsupportedError(
                f"{lib.display_name}: function {table.names[index]!r} has an SOFF tag (embedded "
                "source); rewriting such libraries is not supported"
            )
    h = lib.header
    rlst = lib.reflection_list
    starts = (
        h.function_list.offset + 4,
        h.public_metadata.offset,
        h.private_metadata.offset,
        h.bitcode.offset,
        rlst.offset + 4 if rlst is not None else 0,
    )
    data = lib.data
    extension: list[tuple[bytes, Bytes]] = [
        (tag.code, data[tag.offset : tag.offset + tag.length]) for tag in lib.extension
    ]
    dynamic = None
    if lib.dynamic_header is not None:
        dynamic = data[lib.dynamic_header.offset : lib.dynamic_header.end]
    return LibraryParts(
        raw_version=h.raw_version,
        extension=extension,
        functions=table.select(chosen),
        starts=starts,
        dynamic_header=dynamic,
        uuid=lib.uuid if len(chosen) == count else None,
        source=lib.file_source(),
    )


def _entries_containing(
    lib: Metallib, table: FunctionTable, needle: bytes, chosen: Sequence[int]
) -> list[int]:
    """Indices of the ``chosen`` entries whose bytes contain ``needle`` (a cheap pre-filter: the
    bytes also occur by chance, e.g. a HASH ending in S before OFFT)."""
    start = lib.header.function_list.offset
    end = start + 4 + lib.header.function_list.size
    offsets = table.entry_offsets
    found: set[int] = set()
    at = lib.find(needle, start, end)
    while at >= 0:
        found.add(bisect_right(offsets, at) - 1)
        at = lib.find(needle, at + 1, end)
    wanted = chosen if isinstance(chosen, range) else set(chosen)
    return sorted(index for index in found if index in wanted)
