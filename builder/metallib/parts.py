"""A library as parts to be written: what the writer lays out and what a subset selects.

``LibraryParts`` holds everything that is not derived from layout: header bytes 4-15, the
extension tags (in order), the dynamic header, and per function its entry tags plus the four
pieces of data it owns. Offsets, sizes, counts and alignment padding are recomputed by the writer.
Parts taken from a ``Metallib`` are memoryview slices of its map, so building them copies nothing.
"""

from __future__ import annotations

import hashlib
import struct
from collections.abc import Sequence
from dataclasses import dataclass, field

from builder.metallib.errors import MetallibUnsupportedError
from builder.metallib.reader import Metallib
from builder.metallib.structs import MODULE_WRAPPER_MAGIC, OFFSET_TAGS, U32, show_code, walk_tags

__all__ = [
    "AnyFunction",
    "FunctionParts",
    "LibraryParts",
    "SourceFunction",
    "new_function",
    "new_library",
    "parts_from_library",
    "wrap_bitcode",
]

Bytes = bytes | bytearray | memoryview
_UNSUPPORTED_FUNCTION_TAGS = frozenset({b"SOFF"})


@dataclass(slots=True)
class FunctionParts:
    """One function's entry and data.

    A function built from scratch has ``tags`` (no ENDT), serialized by the writer with OFFT,
    RFLT and MDSZ recomputed. A function taken from a library has ``entry``, its list entry as
    stored, which the writer copies and patches at ``entry_patch`` (offsets of the OFFT and RFLT
    payloads in the entry), and ``origin``, the absolute offsets of its public and private
    metadata chunks, module and reflection chunk in the source file, so that unchanged runs of the
    source can be copied in one piece.
    """

    name: str
    tags: list[tuple[bytes, Bytes]]
    public_md: Bytes
    private_md: Bytes
    module: Bytes
    reflection: Bytes | None
    """The reflection FlatBuffer without padding; None when the library has no reflection list."""
    entry: Bytes | None = None
    entry_patch: tuple[int, int | None] = (0, None)
    origin: tuple[int, int, int, int | None] | None = None

    @property
    def public_md_size(self) -> int:
        return len(self.public_md)

    @property
    def private_md_size(self) -> int:
        return len(self.private_md)

    @property
    def module_size(self) -> int:
        return len(self.module)

    @property
    def reflection_size(self) -> int | None:
        return None if self.reflection is None else len(self.reflection)


class SourceFunction:
    """A function of an existing library, by reference: offsets and sizes in the source file.

    This is what ``parts_from_library`` hands the writer. Its data is sliced from the source only
    when asked for; the writer mostly copies source runs by offset, so building the parts of a
    16,000-function library costs a few object creations per function and no data access.
    """

    __slots__ = (
        "_data", "entry", "entry_patch", "module_size", "name", "origin", "private_md_size",
        "public_md_size", "reflection_size",
    )  # fmt: skip

    def __init__(
        self, data: memoryview, name: str, entry: bytes, entry_patch: tuple[int, int | None],
        origin: tuple[int, int, int, int | None], sizes: tuple[int, int, int, int | None],
    ) -> None:  # fmt: skip
        self._data = data
        self.name = name
        self.entry: Bytes | None = entry
        self.entry_patch = entry_patch
        self.origin: tuple[int, int, int, int | None] | None = origin
        self.public_md_size, self.private_md_size, self.module_size, self.reflection_size = sizes

    @property
    def tags(self) -> list[tuple[bytes, Bytes]]:
        """The entry's tags (decoded from the stored entry; the writer copies the entry instead)."""
        assert self.entry is not None
        found, _ = walk_tags(bytes(self.entry), 4, len(self.entry), f"function {self.name!r}")
        return [(code, self.entry[at : at + n]) for code, at, n in found]

    def _slice(self, which: int, size: int) -> memoryview:
        assert self.origin is not None
        start = self.origin[which]
        assert start is not None
        return self._data[start : start + size]

    @property
    def public_md(self) -> memoryview:
        return self._slice(0, self.public_md_size)

    @property
    def private_md(self) -> memoryview:
        return self._slice(1, self.private_md_size)

    @property
    def module(self) -> memoryview:
        return self._slice(2, self.module_size)

    @property
    def reflection(self) -> memoryview | None:
        """The FlatBuffer without its padding, as in ``FunctionParts``."""
        if self.reflection_size is None or self.origin is None or self.origin[3] is None:
            return None
        payload = self.origin[3] + 12
        start = payload + (-payload % 16)
        return self._data[start : start + self.reflection_size]


AnyFunction = FunctionParts | SourceFunction


@dataclass
class LibraryParts:
    """Everything needed to write a library."""

    raw_version: bytes
    """Header bytes 4-15, verbatim."""
    extension: list[tuple[bytes, Bytes]]
    """Header-extension tags in order; RLST/HDYN payloads are recomputed, UUID per ``uuid``."""
    functions: list[AnyFunction]
    dynamic_header: Bytes | None = None
    uuid: bytes | None = field(default=None)
    """UUID to write; None with a UUID tag present means derive one from the content."""
    source: tuple[memoryview, int | None] | None = None
    """The source library's bytes and file descriptor, for functions that have an ``origin``."""

    @property
    def has_reflection_list(self) -> bool:
        return any(code == b"RLST" for code, _ in self.extension)


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
    functions = lib.functions
    chosen = range(len(functions)) if indices is None else sorted(set(indices))
    data = lib.data
    c = lib._table.cols
    unpack_u32 = U32.unpack_from
    out: list[AnyFunction] = []
    for index in chosen:
        fn = functions[index]
        at, size = fn.entry_offset, fn.entry_size
        entry = bytes(data[at : at + size])
        if b"SOFF" in entry and any(code in _UNSUPPORTED_FUNCTION_TAGS for code, _, _ in fn.tags):
            raise MetallibUnsupportedError(
                f"{lib.display_name}: function {fn.name!r} has an SOFF tag (embedded source); "
                "rewriting such libraries is not supported"
            )
        pub, pub_n = c.public_offsets[index], c.public_sizes[index]
        priv, priv_n = c.private_offsets[index], c.private_sizes[index]
        mod, mod_n = c.module_offsets[index], c.module_sizes[index]
        refl, refl_n = c.reflection_offsets[index], c.reflection_sizes[index]
        flatbuffer = None
        if refl is not None:  # payload length minus the padding before the FlatBuffer
            payload = min(unpack_u32(data, refl + 8)[0], refl_n - 16)
            flatbuffer = max(0, payload - (-(refl + 12) % 16))
        rflt = fn.rflt_offset - at if fn.rflt_offset is not None else None
        out.append(
            SourceFunction(
                data, fn.name, entry, (fn.offt_offset - at, rflt), (pub, priv, mod, refl),
                (pub_n, priv_n, mod_n, flatbuffer),
            )  # fmt: skip
        )
    extension: list[tuple[bytes, Bytes]] = [
        (tag.code, data[tag.offset : tag.offset + tag.length]) for tag in lib.extension
    ]
    dynamic = None
    if lib.dynamic_header is not None:
        dynamic = data[lib.dynamic_header.offset : lib.dynamic_header.end]
    keep_uuid = indices is None or len(chosen) == len(functions)
    return LibraryParts(
        raw_version=lib.header.raw_version,
        extension=extension,
        functions=out,
        dynamic_header=dynamic,
        uuid=lib.uuid if keep_uuid else None,
        source=(data, lib.fileno()),
    )


# -- building libraries from scratch (tests, the stand-in linker) ----------------------------------
_WRAPPER = struct.Struct("<IIIII")
_EMPTY_CHUNK = struct.pack("<I", 8) + b"ENDT"


def wrap_bitcode(raw: bytes) -> bytes:
    """Wrap raw bitcode as a module the way Apple's tools store it: Darwin wrapper + zero pad to 16."""
    body = _WRAPPER.pack(MODULE_WRAPPER_MAGIC, 0, 20, len(raw), 0xFFFFFFFF) + raw
    return body + bytes(-len(body) % 16)


def new_function(
    name: str,
    bitcode: bytes,
    *,
    type_: int = 2,
    version: tuple[int, int, int, int] = (2, 6, 3, 1),
    reflection: bytes | None = None,
    public_md: bytes = _EMPTY_CHUNK,
    private_md: bytes = _EMPTY_CHUNK,
) -> FunctionParts:
    """A kernel function whose module wraps ``bitcode``, with tags in Apple's current order."""
    module = wrap_bitcode(bitcode)
    tags: list[tuple[bytes, Bytes]] = [
        (b"NAME", name.encode() + b"\0"),
        (b"TYPE", bytes([type_])),
        (b"HASH", hashlib.sha256(module).digest()),
        (b"OFFT", bytes(24)),
        (b"VERS", struct.pack("<4H", *version)),
        (b"MDSZ", struct.pack("<Q", len(module))),
    ]
    if reflection is not None:
        tags.append((b"RFLT", bytes(8)))
    return FunctionParts(name, tags, public_md, private_md, module, reflection)


def new_library(
    functions: list[FunctionParts],
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
    return LibraryParts(raw, extension, list[AnyFunction](functions), dynamic, uuid=None)
