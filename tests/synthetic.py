"""Synthetic metallibs (importable from any test: ``from synthetic import synthetic_parts``):
functions built from scratch (``new_function``, ``FunctionParts``) and laid out in memory the way
a library holds them (``new_library``), then written by the project's own writer. Also used by the
stand-in linker (tests/cmake_build/standin) and the benchmarks; the tool itself only rewrites
libraries it reads (``builder.metallib.parts_from_library``)."""

from __future__ import annotations

import hashlib
import random
import struct
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from itertools import accumulate

from builder.errors import MetallibError
from builder.metallib import FunctionTable, LibraryParts, Piece, library_bytes
from builder.metallib.parts import Bytes, reflection_piece, tag_bytes
from builder.metallib.structs import MODULE_WRAPPER, MODULE_WRAPPER_MAGIC, OFFT, U32, U64, VERS

__all__ = [
    "FunctionParts",
    "Spec",
    "new_function",
    "new_library",
    "synthetic_bytes",
    "synthetic_functions",
    "synthetic_parts",
    "wrap_bitcode",
]

Tags = list[tuple[bytes, bytes]]


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


_EMPTY_PIECE = struct.pack("<I", 8) + b"ENDT"


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
    module = wrap_bitcode(bitcode)
    tags: list[tuple[bytes, Bytes]] = [
        (b"NAME", name.encode() + b"\0"),
        (b"TYPE", bytes([type_])),
        (b"HASH", hashlib.sha256(module).digest()),
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


def synthetic_functions(
    count: int = 5, *, reflection: bool = True, seed: int = 0
) -> list[FunctionParts]:
    """``count`` kernels with random bitcode of varied lengths (so module padding varies)."""
    rng = random.Random(seed)
    functions = []
    for i in range(count):
        body = b"BC\xc0\xde" + rng.randbytes(rng.randrange(1, 300))
        flatbuffer = rng.randbytes(rng.randrange(8, 120)) if reflection else None
        functions.append(
            new_function(f"kernel_{i}_float{16 * (1 + i % 2)}", body, reflection=flatbuffer)
        )
    return functions


def synthetic_parts(
    count: int = 5,
    *,
    reflection: bool = True,
    seed: int = 0,
    dynamic: bool = False,
    tags: Callable[[Tags], Tags] | None = None,
) -> LibraryParts:
    """A library of ``synthetic_functions``; ``tags`` edits each function's tag list first (to
    build unknown, missing or repeated tags)."""
    functions = synthetic_functions(count, reflection=reflection, seed=seed)
    if tags is not None:
        for fn in functions:
            fn.tags = tags(fn.tags)  # type: ignore[assignment,arg-type]
    return new_library(
        functions,
        install_name="mlx.metallib" if dynamic else None,
        format_version=(2, 9) if dynamic else (2, 7),
    )


Spec = Sequence[tuple[str, int]]


def synthetic_bytes(
    functions: Spec, *, reflection: bool = True, install_name: str | None = None
) -> bytes:
    """A metallib with one function per (name, bitcode size); contents derived from the name so
    the same spec always gives the same bytes."""
    parts = []
    for name, size in functions:
        seed = hashlib.sha256(name.encode()).digest()
        bitcode = (seed * (size // len(seed) + 1))[:size]
        refl = seed[: 8 + len(name) % 9] if reflection else None
        parts.append(new_function(name, bitcode, reflection=refl))
    return library_bytes(new_library(parts, install_name=install_name))
