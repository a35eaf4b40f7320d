"""Binary layout of the MTLB container: constants and bounds-checked readers.

Every read goes through ``Cursor``-free helpers that take an absolute offset and check it against
the end of the buffer, so a corrupt offset becomes a ``MetallibFormatError`` naming the byte
offset, never an IndexError or a huge allocation. Layout notes: ``docs/metallib-format.md``.
"""

from __future__ import annotations

import struct
from typing import NamedTuple

from builder.errors import MetallibFormatError

__all__ = [
    "ENDT",
    "FUNCTION_TYPES",
    "HEADER_SIZE",
    "MAGIC",
    "MODULE_WRAPPER_MAGIC",
    "OFFSET_TAGS",
    "ExtensionTag",
    "Header",
    "Region",
    "Span",
    "read_u32",
    "show_code",
    "tag_start",
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


def _need(buf: memoryview | bytes, offset: int, size: int, what: str) -> None:
    if offset < 0 or offset + size > len(buf):
        raise MetallibFormatError(
            offset, f"{what} needs {size} bytes but the file ends at {len(buf)}"
        )


def read_u32(buf: memoryview | bytes, offset: int, what: str) -> int:
    _need(buf, offset, 4, what)
    return int(U32.unpack_from(buf, offset)[0])


def walk_tags(
    buf: memoryview | bytes, start: int, limit: int, what: str, base: int = 0
) -> tuple[list[tuple[bytes, int, int]], int]:
    """Read a tag list from ``start`` up to its ``ENDT``, which must end by ``limit``.

    Returns ``([(code, payload_offset, payload_length), ...], end_offset)`` where ``end_offset`` is
    just past ``ENDT``. Wide tags (``RBUF`` ...) carry a u32 length. Offsets are relative to
    ``buf``; ``base`` is added to the offset in errors when ``buf`` is a slice of the file.
    """
    try:
        return _walk_tags(buf, start, limit, what)
    except MetallibFormatError as exc:
        if not base:
            raise
        raise MetallibFormatError(
            exc.offset + base, exc.message.replace(f" at {limit}", f" at {limit + base}")
        ) from None


def _walk_tags(
    buf: memoryview | bytes, start: int, limit: int, what: str
) -> tuple[list[tuple[bytes, int, int]], int]:
    tags: list[tuple[bytes, int, int]] = []
    pos = start
    while True:
        if pos + 4 > limit:
            raise MetallibFormatError(pos, f"{what}: tag list runs past its end at {limit}")
        code = bytes(buf[pos : pos + 4])
        if code == ENDT:
            return tags, pos + 4
        if code in WIDE_TAGS:
            if pos + 8 > limit:
                raise MetallibFormatError(
                    pos, f"{what}: tag {show_code(code)} header runs past {limit}"
                )
            length = U32.unpack_from(buf, pos + 4)[0]
            payload = pos + 8
        else:
            if pos + 6 > limit:
                raise MetallibFormatError(
                    pos, f"{what}: tag {show_code(code)} header runs past {limit}"
                )
            length = U16.unpack_from(buf, pos + 4)[0]
            payload = pos + 6
        if payload + length > limit:
            raise MetallibFormatError(
                pos, f"{what}: tag {show_code(code)} of {length} bytes runs past its end at {limit}"
            )
        tags.append((code, payload, length))
        pos = payload + length


def tag_start(code: bytes, payload: int) -> int:
    """Where a tag begins (its 4-byte code), from the payload offset ``walk_tags`` returns."""
    return payload - (8 if code in WIDE_TAGS else 6)


def show_code(code: bytes) -> str:
    """A tag code for messages: ASCII when printable, hex otherwise."""
    text = code.decode("ascii", "replace")
    return text if text.isprintable() else code.hex()


# ---------------------------------------------------------------------------------------------
# The parsed records of a metallib's container: header, extension tags, regions.
#
# These are plain records that ``reader.Metallib`` builds from a memory map. The functions are not
# here: they are columns (``table.FunctionTable``). Offsets are absolute file offsets unless a name
# says otherwise.


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
