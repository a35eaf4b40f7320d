"""A library as parts to be written: what the writer lays out and what a subset selects.

``LibraryParts`` holds everything that is not derived from layout: header bytes 4-15, the
extension tags (in order), the dynamic header, and the functions as a ``FunctionTable`` over the
bytes that hold them (``source``), so the writer has one way to write a function: copy its pieces
from the source and patch its entry's offsets. Functions of an existing library are its table
(``subset.parts_from_library``); functions built here (``FunctionParts``, from ``new_function``)
are laid out in memory first by ``new_library``, the way a library holds them.
"""

from __future__ import annotations

import struct
from bisect import bisect_right
from collections.abc import Sequence
from dataclasses import dataclass
from itertools import accumulate

from builder.errors import MetallibError, MetallibUnsupportedError
from builder.metallib.reader import Metallib
from builder.metallib.structs import (
    MODULE_WRAPPER,
    MODULE_WRAPPER_MAGIC,
    OFFSET_TAGS,
    OFFT,
    U32,
    U64,
    VERS,
    WIDE_TAGS,
    show_code,
)
from builder.metallib.table import FunctionTable, Piece

__all__ = [
    "Bytes",
    "FunctionParts",
    "LibraryParts",
    "new_function",
    "new_library",
    "parts_from_library",
    "reflection_piece",
    "tag_bytes",
    "wrap_bitcode",
]


Bytes = bytes | bytearray | memoryview


@dataclass(slots=True, repr=False)
class FunctionParts:
    """A function to be built: its entry's tags (no ENDT) and the bytes of its four pieces.

    The tags are written in order as given; OFFT, RFLT and MDSZ payloads are recomputed. Tests
    edit ``tags`` (unknown tags, repeated ones) before handing the function to ``new_library``.
    """

    name: str
    tags: list[tuple[bytes, Bytes]]
    public_md: Bytes
    private_md: Bytes
    module: Bytes
    reflection: Bytes | None
    """The reflection FlatBuffer without padding; None for a function without one."""

    def __repr__(self) -> str:
        return f"FunctionParts({self.name!r}, module={len(self.module)} bytes)"


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


# -- building libraries from scratch (tests, the stand-in linker) ----------------------------------
_EMPTY_PIECE = struct.pack("<I", 8) + b"ENDT"
_TAG = struct.Struct("<4sH")


def wrap_bitcode(raw: bytes) -> bytes:
    """Wrap raw bitcode as a module the way Apple's tools store it: Darwin wrapper + zero pad to
    16."""
    body = MODULE_WRAPPER.pack(MODULE_WRAPPER_MAGIC, 0, 20, len(raw), 0xFFFFFFFF) + raw
    return body + bytes(-len(body) % 16)


def new_function(
    name: str,
    bitcode: bytes,
    *,
    type_: int = 2,
    version: tuple[int, int, int, int] = (2, 6, 3, 1),
    reflection: bytes | None = None,
    public_md: bytes = _EMPTY_PIECE,
    private_md: bytes = _EMPTY_PIECE,
) -> FunctionParts:
    """A kernel function whose module wraps ``bitcode``, with tags in Apple's current order."""
    from hashlib import sha256  # only tests and the stand-in linker build functions

    module = wrap_bitcode(bitcode)
    tags: list[tuple[bytes, Bytes]] = [
        (b"NAME", name.encode() + b"\0"),
        (b"TYPE", bytes([type_])),
        (b"HASH", sha256(module).digest()),
        (b"OFFT", bytes(24)),
        (b"VERS", VERS.pack(*version)),
        (b"MDSZ", U64.pack(len(module))),
    ]
    if reflection is not None:
        tags.append((b"RFLT", bytes(8)))
    return FunctionParts(name, tags, public_md, private_md, module, reflection)


def new_library(
    functions: Sequence[FunctionParts],
    *,
    format_version: tuple[int, int] = (2, 7),
    deployment_target: tuple[int, int] = (14, 0),
    install_name: str | None = None,
) -> LibraryParts:
    """A library of ``functions`` laid out like Apple's current writer (RLST and UUID present when
    the functions carry reflection; an HDYN install name when ``install_name`` is given)."""
    raw = struct.pack("<HHHBBHH", 0x8001, *format_version, 0, 0x81, *deployment_target)
    extension: list[tuple[bytes, Bytes]] = []
    dynamic = None
    if install_name is not None:
        extension.append((b"HDYN", bytes(16)))
        name = install_name.encode() + b"\0"
        dynamic = b"NAME" + struct.pack("<H", len(name)) + name + b"ENDT"
    if any(fn.reflection is not None for fn in functions):
        extension.append((b"RLST", bytes(16)))
        extension.append((b"UUID", bytes(16)))
    table, starts = _lay_out(functions)
    return LibraryParts(raw, extension, table, starts, dynamic, uuid=None)


def tag_bytes(code: bytes, payload: Bytes) -> bytes:
    """One tag as stored: code, u16 length (u32 for the wide tags), payload."""
    if code in WIDE_TAGS:
        return code + U32.pack(len(payload)) + bytes(payload)
    if len(payload) > 0xFFFF:
        raise MetallibError(f"tag {code!r} payload of {len(payload)} bytes exceeds 65535")
    return _TAG.pack(code, len(payload)) + bytes(payload)


def _lay_out(functions: Sequence[FunctionParts]) -> tuple[FunctionTable, tuple[int, ...]]:
    """The functions in memory as a library holds them, as a table over those bytes.

    Entries, then the public and private metadata pieces, the modules, and a reflection list
    (u32 count, then pieces whose FlatBuffers start 16-aligned), each kind back to back, every
    entry's OFFT, RFLT and MDSZ saying where its pieces are: the writer then copies these bytes
    like those of a library it keeps whole.
    """
    entries = [_NewEntry(fn) for fn in functions]
    pieces: list[list[Bytes]] = [
        [entry.data for entry in entries],
        [fn.public_md for fn in functions],
        [fn.private_md for fn in functions],
        [fn.module for fn in functions],
    ]
    sizes = [[len(piece) for piece in kind] for kind in pieces]
    data = bytearray()
    starts: list[int] = []
    for kind in pieces:
        starts.append(len(data))
        for piece in kind:
            data += piece
    reflection_list = len(data)
    data += U32.pack(sum(fn.reflection is not None for fn in functions))
    starts.append(len(data))
    rflt_offsets: list[int | None] = []
    rflt_sizes: list[int] = []
    for fn in functions:
        at = len(data)
        if fn.reflection is not None:
            data += reflection_piece(-(at + 12) % 16, fn.reflection)
        rflt_offsets.append(None if fn.reflection is None else at)
        rflt_sizes.append(len(data) - at)
    offsets = [
        list(accumulate(piece_sizes, initial=start))[:-1]
        for piece_sizes, start in zip(sizes, starts)
    ]
    for index, entry in enumerate(entries):
        at = offsets[Piece.ENTRY][index]
        relative = [
            offsets[piece][index] - starts[piece]
            for piece in (Piece.PUBLIC_MD, Piece.PRIVATE_MD, Piece.MODULE)
        ]
        for offt in entry.offt:
            OFFT.pack_into(data, at + offt, *relative)
        own = rflt_offsets[index]
        if own is not None:
            for rflt in entry.rflt:
                U64.pack_into(data, at + rflt, own - reflection_list)
    columns = [
        [fn.name for fn in functions],
        [e.type for e in entries],
        [e.version for e in entries],
        b"".join(e.hash for e in entries),
        [e.offt[0] for e in entries],
        [e.rflt[0] if e.rflt else None for e in entries],
        offsets[Piece.ENTRY],
        sizes[Piece.ENTRY],
        offsets[Piece.PUBLIC_MD],
        sizes[Piece.PUBLIC_MD],
        offsets[Piece.PRIVATE_MD],
        sizes[Piece.PRIVATE_MD],
        offsets[Piece.MODULE],
        sizes[Piece.MODULE],
        rflt_offsets,
        rflt_sizes,
    ]
    return FunctionTable(memoryview(bytes(data)), columns), tuple(starts)


class _NewEntry:
    """A new function's list entry, serialized with MDSZ set and OFFT and RFLT still zero, and
    what the table needs to know of it."""

    def __init__(self, fn: FunctionParts) -> None:
        codes = [code for code, _ in fn.tags]
        if b"OFFT" not in codes:
            raise MetallibError(f"function {fn.name!r} has no OFFT tag")
        if (b"RFLT" in codes) != (fn.reflection is not None):
            raise MetallibError(
                f"function {fn.name!r}: RFLT tag and reflection piece must go together"
            )
        data = bytearray(4)
        self.offt: list[int] = []
        self.rflt: list[int] = []
        """Where every OFFT and RFLT payload lies in the entry (a test's entry may repeat one)."""
        first: dict[bytes, Bytes] = {}
        for code, payload in fn.tags:
            if code == b"OFFT":
                payload = bytes(OFFT.size)
            elif code == b"RFLT":
                payload = bytes(8)
            elif code == b"MDSZ":
                payload = U64.pack(len(fn.module))
            first.setdefault(code, payload)
            tag = tag_bytes(code, payload)
            where = {b"OFFT": self.offt, b"RFLT": self.rflt}.get(code)
            if where is not None:
                where.append(len(data) + len(tag) - len(payload))
            data += tag
        data += b"ENDT"
        U32.pack_into(data, 0, len(data))
        self.data = data
        kind = first.get(b"TYPE", b"")
        self.type = kind[0] if len(kind) else None
        vers = first.get(b"VERS", b"")
        self.version = VERS.unpack(vers) if len(vers) == 8 else None
        digest = bytes(first.get(b"HASH", b""))
        self.hash = digest if len(digest) == 32 else bytes(32)
        """The HASH payload (zeros when a test's entry has none)."""


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
