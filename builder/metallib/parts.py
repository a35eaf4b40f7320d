"""A library as parts to be written: what the writer lays out and what a subset selects.

``LibraryParts`` holds everything that is not derived from layout: header bytes 4-15, the
extension tags (in order), the dynamic header, and per function its entry tags plus the four
pieces of data it owns. Offsets, sizes, counts and alignment padding are recomputed by the writer.
Functions built here (``new_function``) carry their bytes; functions of an existing library are
references into it (``builder.metallib.source``).
"""

from __future__ import annotations

import struct
from collections.abc import Sequence
from typing import TYPE_CHECKING, TypeAlias

from builder.metallib.structs import MODULE_WRAPPER_MAGIC

if TYPE_CHECKING:
    from builder.metallib.source import SourceFunction

__all__ = [
    "AnyFunction",
    "Bytes",
    "FunctionParts",
    "LibraryParts",
    "new_function",
    "new_library",
    "wrap_bitcode",
]

Bytes = bytes | bytearray | memoryview


class FunctionParts:
    """One function's entry and data.

    A function built from scratch has ``tags`` (no ENDT), serialized by the writer with OFFT,
    RFLT and MDSZ recomputed. A function taken from a library has ``entry``, its list entry as
    stored, which the writer copies and patches at ``entry_patch`` (offsets of the OFFT and RFLT
    payloads in the entry), and ``origin``, the absolute offsets of its public and private
    metadata chunks, module and reflection chunk in the source file, so that unchanged runs of the
    source can be copied in one piece.
    """

    __slots__ = (
        "entry", "entry_patch", "module", "name", "origin", "private_md", "public_md", "reflection",
        "tags",
    )  # fmt: skip

    def __init__(
        self, name: str, tags: list[tuple[bytes, Bytes]], public_md: Bytes, private_md: Bytes,
        module: Bytes, reflection: Bytes | None, entry: Bytes | None = None,
        entry_patch: tuple[int, int | None] = (0, None),
        origin: tuple[int, int, int, int | None] | None = None,
    ) -> None:  # fmt: skip
        self.name = name
        self.tags = tags
        self.public_md = public_md
        self.private_md = private_md
        self.module = module
        self.reflection = reflection
        """The reflection FlatBuffer without padding; None when the library has no reflection list."""
        self.entry = entry
        self.entry_patch = entry_patch
        self.origin = origin

    def __repr__(self) -> str:
        return f"FunctionParts({self.name!r}, module={len(self.module)} bytes)"

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


AnyFunction: TypeAlias = "FunctionParts | SourceFunction"


class LibraryParts:
    """Everything needed to write a library."""

    def __init__(
        self, raw_version: bytes, extension: list[tuple[bytes, Bytes]],
        functions: Sequence[AnyFunction], dynamic_header: Bytes | None = None,
        uuid: bytes | None = None, source: tuple[memoryview, int | None] | None = None,
    ) -> None:  # fmt: skip
        self.raw_version = raw_version
        """Header bytes 4-15, verbatim."""
        self.extension = extension
        """Header-extension tags in order; RLST/HDYN payloads are recomputed, UUID per ``uuid``."""
        self.functions = functions
        """A list of ``FunctionParts`` (or ``SourceFunction``), or ``SourceFunctions`` columns."""
        self.dynamic_header = dynamic_header
        self.uuid = uuid
        """UUID to write; None with a UUID tag present means derive one from the content."""
        self.source = source
        """The source library's bytes and file descriptor, for functions that have an ``origin``."""

    def __repr__(self) -> str:
        return f"LibraryParts({len(self.functions)} functions, extension={[c for c, _ in self.extension]})"

    @property
    def has_reflection_list(self) -> bool:
        return any(code == b"RLST" for code, _ in self.extension)


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
    from hashlib import sha256  # only tests and the stand-in linker build functions

    module = wrap_bitcode(bitcode)
    tags: list[tuple[bytes, Bytes]] = [
        (b"NAME", name.encode() + b"\0"),
        (b"TYPE", bytes([type_])),
        (b"HASH", sha256(module).digest()),
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
