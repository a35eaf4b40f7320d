"""The parsed pieces of a metallib: header, extension tags, function entries, regions.

These are plain records. ``reader.Metallib`` builds them from a memory map; ``writer`` builds
bytes from ``parts.LibraryParts``. Offsets are absolute file offsets unless a name says otherwise.
"""

from __future__ import annotations

from dataclasses import dataclass

from builder.metallib.structs import Span

__all__ = ["FUNCTION_TYPES", "ExtensionTag", "FunctionEntry", "Header", "Region"]

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


@dataclass(frozen=True)
class Header:
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


@dataclass(frozen=True)
class ExtensionTag:
    """One tag of the header extension (after the function list), in file order."""

    code: bytes
    offset: int
    """Absolute offset of the payload."""
    length: int


class FunctionEntry:
    """One function: its list entry and where its pieces live.

    ``public_md``, ``private_md``, ``module`` and ``reflection`` are absolute spans; ``reflection``
    is the whole RBUF chunk (None in files without a reflection list).
    """

    __slots__ = (
        "entry",
        "hash",
        "index",
        "module",
        "name",
        "private_md",
        "public_md",
        "reflection",
        "tags",
        "type",
        "version",
    )

    def __init__(
        self,
        index: int,
        name: str,
        type_: int | None,
        entry: Span,
        tags: tuple[tuple[bytes, int, int], ...],
        hash_: bytes,
        public_md: Span,
        private_md: Span,
        module: Span,
        reflection: Span | None,
        version: tuple[int, int, int, int] | None,
    ) -> None:
        self.index = index
        self.name = name
        self.type = type_
        self.entry = entry
        self.tags = tags
        self.hash = hash_
        self.public_md = public_md
        self.private_md = private_md
        self.module = module
        self.reflection = reflection
        self.version = version

    @property
    def type_name(self) -> str:
        if self.type is None:
            return "none"
        return FUNCTION_TYPES.get(self.type, f"type{self.type}")

    @property
    def bitcode_bytes(self) -> int:
        """Size of the function's module in the bitcode section (wrapper and padding included)."""
        return self.module.size

    @property
    def total_bytes(self) -> int:
        """Every byte that belongs to this function alone."""
        size = self.entry.size + self.public_md.size + self.private_md.size + self.module.size
        return size + (self.reflection.size if self.reflection else 0)

    def __repr__(self) -> str:
        return f"FunctionEntry({self.index}, {self.name!r}, module={self.module})"


@dataclass(frozen=True)
class Region:
    """A named stretch of the file; the regions of a library tile it exactly."""

    name: str
    offset: int
    size: int

    @property
    def end(self) -> int:
        return self.offset + self.size
