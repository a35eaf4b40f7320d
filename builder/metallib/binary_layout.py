"""What ``binary_sections`` reads from a Mach-O or ELF file, and the check that every part of it
lies inside the file.

A binary's headers say where its parts are: a fat file's slices, each image's load commands,
segments, sections and symbol tables, an ELF file's header tables and sections. Each of those is
an ``Extent`` here, and ``refuse_outside`` refuses the file when one runs past the end of the
file (it was cut short: ``TruncatedBinaryError``) or past the end of its slice (a fat file's
slices do not hold what their headers say: ``BinaryFormatError``). Only after that are its
sections used or its tables read, so every later read is inside the file.
"""

from __future__ import annotations

from collections.abc import Iterable, Iterator, Sequence
from dataclasses import dataclass, field
from typing import Protocol

from builder.errors import BinaryFormatError, TruncatedBinaryError

__all__ = ["Extent", "Image", "Layout", "Section", "Symbol", "refuse_outside"]


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
