"""The parsed pieces of a metallib: header, extension tags, function entries, regions.

These are plain records. ``reader.Metallib`` builds them from a memory map; ``writer`` builds
bytes from ``parts.LibraryParts``. Offsets are absolute file offsets unless a name says otherwise.
"""

from __future__ import annotations

from typing import NamedTuple

from builder.metallib.structs import Span, walk_tags

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


class ExtensionTag(NamedTuple):
    """One tag of the header extension (after the function list), in file order."""

    code: bytes
    offset: int
    """Absolute offset of the payload."""
    length: int


class FunctionEntry:
    """One function: its list entry and where its pieces live.

    ``entry``, ``public_md``, ``private_md``, ``module`` and ``reflection`` are absolute spans;
    ``reflection`` is the whole RBUF chunk (None in files without a reflection list). The tag
    list and hash are decoded on first use from a copy of the function list, which keeps parsing
    15,000 entries cheap.
    """

    __slots__ = (
        "_list",
        "_mod",
        "_priv",
        "_pub",
        "_refl",
        "_tags",
        "entry_offset",
        "entry_size",
        "hash_offset",
        "index",
        "name",
        "offt_offset",
        "rflt_offset",
        "type",
        "version",
    )

    def __init__(
        self,
        index: int,
        name: str,
        type_: int | None,
        entry: tuple[int, int],
        function_list: tuple[memoryview, int],
        hash_offset: int,
        public_md: tuple[int, int],
        private_md: tuple[int, int],
        module: tuple[int, int],
        reflection: tuple[int | None, int],
        version: tuple[int, int, int, int] | None,
        patch_offsets: tuple[int, int | None],
    ) -> None:
        self.index = index
        self.offt_offset, self.rflt_offset = patch_offsets
        self.name = name
        self.type = type_
        self.entry_offset, self.entry_size = entry
        self._list = function_list
        self.hash_offset = hash_offset
        self._pub = public_md
        self._priv = private_md
        self._mod = module
        self._refl = reflection
        self._tags: tuple[tuple[bytes, int, int], ...] | None = None
        self.version = version

    @property
    def entry(self) -> Span:
        return Span(self.entry_offset, self.entry_size)

    @property
    def public_md(self) -> Span:
        return Span(*self._pub)

    @property
    def private_md(self) -> Span:
        return Span(*self._priv)

    @property
    def module(self) -> Span:
        return Span(*self._mod)

    @property
    def reflection(self) -> Span | None:
        return None if self._refl[0] is None else Span(*self._refl)  # type: ignore[arg-type]

    @property
    def hash(self) -> bytes:
        """The HASH tag: SHA-256 of the module bytes as stored."""
        buf, base = self._list
        at = self.hash_offset - base
        return bytes(buf[at : at + 32])

    @property
    def tags(self) -> tuple[tuple[bytes, int, int], ...]:
        """``(code, absolute payload offset, length)`` of every tag, in entry order (no ENDT)."""
        if self._tags is None:
            buf, base = self._list
            start = self.entry_offset - base
            found, _ = walk_tags(
                buf, start + 4, start + self.entry_size, f"function {self.index}", base
            )
            self._tags = tuple((code, base + at, n) for code, at, n in found)
        return self._tags

    @property
    def type_name(self) -> str:
        if self.type is None:
            return "none"
        return FUNCTION_TYPES.get(self.type, f"type{self.type}")

    @property
    def bitcode_bytes(self) -> int:
        """Size of the function's module in the bitcode section (wrapper and padding included)."""
        return self._mod[1]

    @property
    def total_bytes(self) -> int:
        """Every byte that belongs to this function alone."""
        size = self.entry_size + self._pub[1] + self._priv[1] + self._mod[1]
        return size + (self._refl[1] if self._refl[0] is not None else 0)

    def __repr__(self) -> str:
        return f"FunctionEntry({self.index}, {self.name!r}, module={self.module})"


class Region(NamedTuple):
    """A named stretch of the file; the regions of a library tile it exactly."""

    name: str
    offset: int
    size: int

    @property
    def end(self) -> int:
        return self.offset + self.size
