"""The parsed records of a metallib's container: header, extension tags, regions.

These are plain records that ``reader.Metallib`` builds from a memory map. The functions are not
here: they are columns (``table.FunctionTable``). Offsets are absolute file offsets unless a name
says otherwise.
"""

from __future__ import annotations

from typing import NamedTuple

from builder.metallib.structs import Span

__all__ = ["FUNCTION_TYPES", "ExtensionTag", "Header", "Region"]

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
