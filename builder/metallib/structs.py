"""The records of what a file's headers say, and the checks that keep every read inside the file.

Two kinds of file: a metallib (MTLB) container, and a Mach-O or ELF binary that may hold some.
For the container: its constants, the bounds-checked readers of its tag lists (each takes an
absolute offset and checks it against the end of the buffer, so a corrupt offset becomes a
``MetallibFormatError`` naming the byte offset, never an IndexError or a huge allocation) and the
parsed records of its header, extension tags and regions (layout notes:
``docs/metallib-format.md``).

For a binary (read by ``binary_macho`` and ``binary_sections``): its sections, symbols and images,
and every part its headers declare (a fat file's slices, each image's load commands, segments,
sections and symbol tables, an ELF file's header tables and sections) as an ``Extent``.
``refuse_outside`` refuses the file when one runs past the end of the file (it was cut short:
``TruncatedBinaryError``) or past the end of its slice (a fat file's slices do not hold what their
headers say: ``BinaryFormatError``). Only after that are its sections used or its tables read, so
every later read is inside the file."""

from __future__ import annotations

import struct
from collections.abc import Iterable, Iterator, Sequence
from dataclasses import dataclass, field
from typing import NamedTuple, Protocol

from builder.errors import BinaryFormatError, MetallibFormatError, TruncatedBinaryError

__all__ = [
    "ENDT",
    "FUNCTION_TYPES",
    "HEADER_SIZE",
    "MAGIC",
    "MODULE_WRAPPER_MAGIC",
    "OFFSET_TAGS",
    "ExtensionTag",
    "Extent",
    "Header",
    "Image",
    "Layout",
    "Region",
    "Section",
    "Span",
    "Symbol",
    "read_u32",
    "refuse_outside",
    "refuse_repeated_tags",
    "show_code",
    "tag_start",
    "type_name",
    "walk_tags",
]


MAGIC = b"MTLB"
HEADER_SIZE = 88
ENDT = b"ENDT"
MODULE_WRAPPER_MAGIC = 0x0B17C0DE
MIN_ENTRY_SIZE = 8  # u32 size + ENDT
# Header-extension tags whose payload points at another part of the file. We understand RLST and
# HDYN; the others are documented publicly but never seen, so a rewrite refuses them.
OFFSET_TAGS = frozenset({b"HSRD", b"HSRC", b"VLST", b"ILST", b"SLST"})
# Tags with a 32-bit length field instead of 16-bit.
WIDE_TAGS = frozenset({b"RBUF", b"SARC", b"SBUF"})

U16 = struct.Struct("<H")
U32 = struct.Struct("<I")
U64 = struct.Struct("<Q")
SPAN = struct.Struct("<QQ")
# OFFT's payload: the public metadata, private metadata and module offsets, each relative to its
# section; VERS's: AIR major, minor, Metal language major, minor.
OFFT = struct.Struct("<QQQ")
VERS = struct.Struct("<HHHH")
# A module's Darwin bitcode wrapper: magic, version, bitcode offset, bitcode size, CPU type.
MODULE_WRAPPER = struct.Struct("<IIIII")
# A reflection piece starts with its u32 size, RBUF and the u32 payload length.
REFLECTION_HEAD = struct.Struct("<I4sI")


class Span(NamedTuple):
    """A byte range ``[offset, offset + size)``; offsets are absolute unless a name says
    otherwise."""

    offset: int
    size: int

    @property
    def end(self) -> int:
        return self.offset + self.size


def read_u32(buf: memoryview | bytes, offset: int, what: str) -> int:
    """The u32 at ``offset``; ``MetallibFormatError`` when the buffer ends before its 4 bytes."""
    if offset < 0 or offset + 4 > len(buf):
        raise MetallibFormatError(offset, f"{what} needs 4 bytes but the file ends at {len(buf)}")
    return int(U32.unpack_from(buf, offset)[0])


def walk_tags(
    buf: memoryview | bytes, start: int, limit: int, what: str
) -> tuple[list[tuple[bytes, int, int]], int]:
    """Read a tag list from ``start`` up to its ``ENDT``, which must end by ``limit``.

    Returns ``([(code, payload_offset, payload_length), ...], end_offset)`` where ``end_offset`` is
    just past ``ENDT``. Wide tags (``RBUF`` ...) carry a u32 length.
    """
    tags: list[tuple[bytes, int, int]] = []
    pos = start
    while True:
        if pos + 4 > limit:
            raise MetallibFormatError(pos, f"{what}: tag list runs past its end at {limit}")
        code = bytes(buf[pos : pos + 4])
        if code == ENDT:
            return tags, pos + 4
        wide = code in WIDE_TAGS
        payload = pos + (8 if wide else 6)
        if payload > limit:
            raise MetallibFormatError(
                pos, f"{what}: tag {show_code(code)} header runs past {limit}"
            )
        length = (U32 if wide else U16).unpack_from(buf, pos + 4)[0]
        if payload + length > limit:
            raise MetallibFormatError(
                pos, f"{what}: tag {show_code(code)} of {length} bytes runs past its end at {limit}"
            )
        tags.append((code, payload, length))
        pos = payload + length


def refuse_repeated_tags(tags: list[tuple[bytes, int, int]], what: str, within: str = "") -> None:
    """A tag list holds each tag at most once: with two RFLT (say) a reader and a writer could
    each take a different one, so the list is ambiguous and refused at the second tag's offset."""
    first: dict[bytes, int] = {}
    for code, at, _ in tags:
        if code in first:
            raise MetallibFormatError(
                tag_start(code, at),
                f"{what}: second {show_code(code)} tag{within} (the first is at {first[code]})",
            )
        first[code] = tag_start(code, at)


def tag_start(code: bytes, payload: int) -> int:
    """Where a tag begins (its 4-byte code), from the payload offset ``walk_tags`` returns."""
    return payload - (8 if code in WIDE_TAGS else 6)


def show_code(code: bytes) -> str:
    """A tag code for messages: ASCII when printable, hex otherwise."""
    text = code.decode("ascii", "replace")
    return text if text.isprintable() else code.hex()


# ---------------------------------------------------------------------------------------------
# The parsed records of a metallib's container: header, extension tags, regions, which
# ``reader.Metallib`` builds from a memory map (the functions are columns: ``table.FunctionTable``).
# Offsets are absolute file offsets unless a name says otherwise.

# TYPE tag values (public sources; every function in mlx.metallib is a kernel).
FUNCTION_TYPES: dict[int, str] = {
    0: "vertex",
    1: "fragment",
    2: "kernel",
    3: "unqualified",
    4: "visible",
    5: "extern",
    6: "intersection",
}


def type_name(code: int | None) -> str:
    """A TYPE tag's value in words (``kernel``; ``none`` for a function without the tag)."""
    return "none" if code is None else FUNCTION_TYPES.get(code, f"type{code}")


# Mach-O platform numbers (mach-o/loader.h, PLATFORM_*), as the target-OS byte holds them.
PLATFORMS = {
    1: "macOS",
    2: "iOS",
    3: "tvOS",
    4: "watchOS",
    5: "bridgeOS",
    6: "Mac Catalyst",
    7: "iOS simulator",
    8: "tvOS simulator",
    9: "watchOS simulator",
    10: "DriverKit",
    11: "visionOS",
    12: "visionOS simulator",
}


class Header(NamedTuple):
    """The fixed 88-byte header."""

    raw_version: bytes
    """Bytes 4-15, copied verbatim on rewrite (platform, version, library type, target OS)."""
    format_version: tuple[int, int]
    """(u16@6, u16@8): 2.7 for macOS 13/14, 2.8 for 15, 2.9 for 26."""
    library_type: int
    target_os: int
    deployment_target: tuple[int, int]
    file_size: int
    function_list: Span
    """Offset of the u32 count; size excludes that count (as stored)."""
    public_metadata: Span
    private_metadata: Span
    bitcode: Span

    @property
    def format_version_text(self) -> str:
        return f"{self.format_version[0]}.{self.format_version[1]}"

    @property
    def platform(self) -> str:
        """The OS the library targets: the low 7 bits of the target-OS byte are a Mach-O
        platform number (docs/metallib-format.md); a zero there falls back to bit 15 of u16@4,
        the macOS flag."""
        code = self.target_os & 0x7F
        if code == 0:
            return "macOS" if self.raw_version[1] & 0x80 else "unknown platform"
        return PLATFORMS.get(code, f"platform {code}")


class ExtensionTag(NamedTuple):
    """One tag of the header extension (after the function list), in file order."""

    code: bytes
    offset: int
    """Absolute offset of the payload."""
    length: int


class Region(NamedTuple):
    """A named stretch of the file; the regions of a library tile it exactly."""

    name: str
    offset: int
    size: int

    @property
    def end(self) -> int:
        return self.offset + self.size


# ---------------------------------------------------------------------------------------------
# A Mach-O or ELF binary's records, as ``binary_macho`` and ``binary_sections`` read them, and the
# check that every part its headers declare lies inside the file.


@dataclass(frozen=True)
class Section:
    """A section with its place in the file (``offset`` from the start of the file, also in a
    fat file) and in memory (``address``). ELF has no segment names: ``segment`` is None."""

    segment: str | None
    name: str
    offset: int
    size: int
    address: int

    @property
    def end(self) -> int:
        return self.offset + self.size

    @property
    def label(self) -> str:
        return f"{self.segment},{self.name}" if self.segment else self.name


@dataclass(frozen=True)
class Symbol:
    """A defined symbol, at a file offset; ``size`` from ELF, or up to the next symbol of the
    section in Mach-O (which records none)."""

    name: str
    offset: int
    size: int


class SymbolTable(Protocol):
    """An image's symbol table, read from the file on use."""

    def symbols(self) -> list[Symbol]: ...

    def names_at(self, wanted: set[int]) -> dict[int, str]: ...


class FunctionStarts(Protocol):
    """An image's ``LC_FUNCTION_STARTS``, decoded from the file on use."""

    def offsets(self) -> Iterator[int]: ...


@dataclass
class Image:
    """One Mach-O image (a fat file holds one per architecture) or the ELF file."""

    arch: str
    offset: int
    size: int
    sections: list[Section]
    table: SymbolTable | None = field(default=None, repr=False)
    starts: FunctionStarts | None = field(default=None, repr=False)

    def section_at(self, offset: int) -> Section | None:
        """The section holding file offset ``offset`` (zero-fill sections hold none)."""
        for section in self.sections:
            if section.offset <= offset < section.end:
                return section
        return None

    def symbols(self) -> list[Symbol]:
        """Every defined symbol with a file offset, sorted by offset (read from the file)."""
        return self.table.symbols() if self.table is not None else []

    def function_starts(self) -> Iterator[int]:
        """The file offset of each function ``LC_FUNCTION_STARTS`` records (Mach-O only): the
        functions a stripped binary still has, without their names. Decoded as it is iterated
        (a stripped dylib records hundreds of thousands), each inside the ``__TEXT`` segment."""
        return self.starts.offsets() if self.starts is not None else iter(())

    def names_at(self, offsets: Iterable[int]) -> dict[int, str]:
        """The name of a symbol starting exactly at each of ``offsets`` that has one: one pass
        over the table, names read only for those."""
        wanted = set(offsets)
        if self.table is None or not wanted:
            return {}
        return self.table.names_at(wanted)


@dataclass
class Layout:
    """What ``read_layout`` found: the kind of file and its images."""

    kind: str
    images: list[Image]

    def image_at(self, offset: int) -> Image | None:
        return next((i for i in self.images if i.offset <= offset < i.offset + i.size), None)

    def names_at(self, offsets: Iterable[int]) -> dict[int, str]:
        """``Image.names_at`` over every image."""
        found: dict[int, str] = {}
        wanted = list(offsets)
        for image in self.images:
            found.update(
                image.names_at(o for o in wanted if image.offset <= o < image.offset + image.size)
            )
        return found


@dataclass(frozen=True)
class Extent:
    """A part of the file its headers declare: ``what`` it is (``section __TEXT,metal_40``, ``the
    symbol table (LC_SYMTAB)``), where it starts (from the start of the file) and its bytes;
    ``limit`` is where its slice ends (the file's size for a thin file or ELF)."""

    what: str
    start: int
    size: int
    limit: int

    @property
    def end(self) -> int:
        return self.start + self.size


def refuse_outside(path: str, extents: Sequence[Extent], file_size: int) -> None:
    """Raise when a part of the file runs outside it: ``TruncatedBinaryError`` past the end of
    the file, naming the part the end cuts through (the innermost: a section rather than its
    segment), or else the first one that starts past it (the end falls between parts, or a
    header points far past it); ``BinaryFormatError`` past the end of its slice."""
    past = [e for e in extents if e.end > file_size]
    cut = [e for e in past if e.start < file_size]
    if cut:  # the end of the file falls inside these: name the innermost
        named = max(cut, key=lambda e: (e.start, -e.size))
        raise TruncatedBinaryError(
            named.end,
            f"truncated: {named.what}, from byte {named.start}, would end here, past the end "
            f"of the file ({file_size} bytes)",
            path,
        )
    if past:  # the end falls between parts, or a header points far past it
        named = min(past, key=lambda e: e.start)
        raise TruncatedBinaryError(
            named.start,
            f"truncated or malformed: {named.what}, {named.size} bytes, would start here, at "
            f"or past the end of the file ({file_size} bytes)",
            path,
        )
    for extent in extents:
        if extent.end > extent.limit:
            raise BinaryFormatError(
                extent.end,
                f"malformed: {extent.what}, from byte {extent.start}, ends here, past the end "
                f"of its slice (byte {extent.limit})",
                path,
            )
