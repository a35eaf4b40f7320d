"""Read a metallib: memory-mapped, lazy, every offset checked.

``open_metallib`` parses only the header and the header extension. The function list is parsed on
first use of ``functions``; module bytes, metadata pieces and reflection pieces are memoryview
slices of the map, so nothing is copied. Every structural inconsistency raises
``MetallibFormatError`` with the byte offset where it was found, and no allocation is ever sized
from a count read out of the file without first checking the count against the bytes available.
A tag twice in an entry or in the header extension is such an inconsistency; a function name
that is not valid UTF-8 or holds a NUL is refused by ``functions``/``columns`` and reported by
``verify``; bytes that belong to no section are accepted (``regions`` names them ``gap``) and
reported by ``verify``. Why each: docs/metallib-format.md, "Strictness".

What produced a library (``library_provenance``): the header gives the format version and
deployment target, each function's ``VERS`` tag the AIR and Metal Shading Language versions (a
library whose functions state different ones names the functions apart from the most common
version: one linked from ``.air`` files compiled for different platforms). The
compiler identity is not in the container: it is the ``llvm.ident`` string inside each module
("Apple metal version 32023.883 (metalfe-32023.883)"), which LLVM stores as plain characters in
the module's metadata string table, so it can be found without decoding the bitstream. Only a
few modules are read.
"""

from __future__ import annotations

import mmap
import os
import re
from dataclasses import dataclass
from functools import cached_property
from types import TracebackType
from typing import Any

from builder.errors import MetallibError, MetallibFormatError
from builder.files.dataclass_json import dump
from builder.files.dataclass_json import field as json_field
from builder.files.reading import UnreadableFile, open_regular
from builder.metallib.reference import parse_function_list
from builder.metallib.structs import (
    HEADER_SIZE,
    MAGIC,
    SPAN,
    U16,
    U64,
    ExtensionTag,
    Header,
    Region,
    Span,
    refuse_repeated_tags,
    show_code,
    walk_tags,
)
from builder.metallib.table import FunctionEntry, FunctionTable
from builder.metallib.versions import VersionGroup, version_groups

__all__ = ["Metallib", "Provenance", "VersionGroup", "library_provenance", "open_metallib"]


def open_metallib(path: str | os.PathLike[str], window: Span | None = None) -> Metallib:
    """Open ``path`` read-only and parse its header; raises ``MetallibError`` on bad input (a
    path that is not a regular file included: ``builder.files.reading.open_regular``).

    ``window`` (offset and size in the file) opens a metallib embedded in a larger file (a
    Mach-O or ELF binary, ``builder.metallib.embedded``): offsets in the library stay relative
    to its own first byte, ``file_offset`` says where that is. The file stays open (read-only)
    with the map so that writers can copy unchanged runs of it in the kernel
    (``copy_file_range``); ``close`` releases both.
    """
    name = os.fspath(path)
    try:  # a FIFO or a device is refused here, for every command that reads a metallib
        handle = open_regular(name, "the metallib")
    except UnreadableFile as exc:
        raise MetallibError(str(exc)) from None
    try:
        size = os.fstat(handle.fileno()).st_size
        if size == 0:
            raise MetallibFormatError(0, "empty file, not a metallib", name)
        if window is not None and (window.size == 0 or window.end > size):
            raise MetallibFormatError(
                window.offset, f"no metallib of {window.size} bytes here: the file is {size}", name
            )
        mapped = mmap.mmap(handle.fileno(), 0, access=mmap.ACCESS_READ)
    except OSError as exc:
        handle.close()
        raise MetallibError(f"{name}: cannot map: {exc.strerror or exc}") from None
    except BaseException:
        handle.close()
        raise
    try:
        return Metallib(mapped, name, handle, window)
    except MetallibFormatError as exc:
        mapped.close()
        handle.close()
        raise exc.with_path(name) from None


class Metallib:
    """A parsed metallib over a buffer (an mmap or bytes). Use as a context manager to unmap."""

    def __init__(
        self,
        buffer: mmap.mmap | bytes | bytearray,
        path: str | None = None,
        file: Any = None,
        window: Span | None = None,
    ) -> None:
        self._buffer = buffer
        self._file = file
        self.path = path
        self.file_offset = window.offset if window is not None else 0
        """Where the library's first byte is in its file (0 unless embedded in a binary)."""
        self._whole = memoryview(buffer)  # the whole file: spans read by pread are in file offsets
        self.data = self._whole if window is None else self._whole[window.offset : window.end]
        self.file_size = len(self.data)
        try:
            self.header = self._parse_header()
            self.extension, self.extension_span = self._parse_extension()
            self.reflection_list = self._extension_span(b"RLST")
            self.dynamic_header = self._extension_span(b"HDYN")
            uuid = self.extension_tag(b"UUID")
            self.uuid = bytes(self.data[uuid.offset : uuid.offset + uuid.length]) if uuid else None
            self._check_regions()
        except BaseException:
            self.data.release()  # so the caller can close the map
            self._whole.release()
            raise

    # -- lifetime -------------------------------------------------------------------------------
    def close(self) -> None:
        """Release the memory map (deferred to the last live slice, if any)."""
        self.__dict__.pop("functions", None)
        self.__dict__.pop("_parsed", None)  # its columns hold a view of the map
        try:
            self.data.release()
            self._whole.release()
            if isinstance(self._buffer, mmap.mmap):
                self._buffer.close()
        except BufferError:
            pass  # slices handed out are still alive; the map is unmapped when they go
        if self._file is not None:
            self._file.close()
            self._file = None

    def find(self, needle: bytes, start: int, end: int) -> int:
        """The offset of the first ``needle`` in ``[start, end)``, or -1 (searched in the map)."""
        base = self.file_offset
        at = self._buffer.find(needle, base + start, base + end)
        return at - base if at >= 0 else -1

    def file_spans(self, offsets: list[int]) -> tuple[memoryview, list[int], int | None]:
        """The buffer, offsets and descriptor for ``hashing.hash_spans`` to read the spans at
        ``offsets`` (relative to the library) from the file with ``pread``: an embedded
        library's spans are read at their place in the file, its map never faulted in."""
        if self._file is None:
            return self.data, offsets, None
        base = self.file_offset
        shifted = [o + base for o in offsets] if base else offsets
        return self._whole, shifted, int(self._file.fileno())

    def file_source(self) -> tuple[int, int] | None:
        """The open file's descriptor and the library's offset in it (None in memory): for
        ``copy_file_range`` of an embedded library's bytes."""
        return None if self._file is None else (int(self._file.fileno()), self.file_offset)

    def __enter__(self) -> Metallib:  # noqa: PYI034 (Self needs Python 3.11)
        return self

    def __exit__(
        self, kind: type[BaseException] | None, exc: BaseException | None, tb: TracebackType | None
    ) -> None:
        self.close()

    @property
    def display_name(self) -> str:
        return self.path or "<memory>"

    # -- header and extension ------------------------------------------------------------------
    def _parse_header(self) -> Header:
        data = self.data
        if self.file_size < 4 or bytes(data[:4]) != MAGIC:
            from builder.metallib.binary_sections import not_a_metallib  # only on this error

            raise MetallibFormatError(0, not_a_metallib(bytes(data[:8])))
        if self.file_size < HEADER_SIZE:
            raise MetallibFormatError(
                self.file_size, f"truncated: the header needs {HEADER_SIZE} bytes"
            )
        declared = U64.unpack_from(data, 16)[0]
        if declared != self.file_size:
            kind = "truncated" if declared > self.file_size else "trailing bytes"
            raise MetallibFormatError(
                16, f"{kind}: header says the file is {declared} bytes, it is {self.file_size}"
            )
        spans = []
        for field in range(4):
            at = 24 + 16 * field
            offset, size = SPAN.unpack_from(data, at)
            stop = self.file_size if field else self.file_size - 4
            if offset > self.file_size or size > stop - min(offset, stop):
                raise MetallibFormatError(
                    at, f"{_SECTION_NAMES[field]} ({offset}+{size}) runs past the end of the file"
                )
            spans.append(Span(offset, size))
        return Header(
            raw_version=bytes(data[4:16]),
            format_version=(U16.unpack_from(data, 6)[0], U16.unpack_from(data, 8)[0]),
            library_type=data[10],
            target_os=data[11],
            deployment_target=(U16.unpack_from(data, 12)[0], U16.unpack_from(data, 14)[0]),
            file_size=declared,
            function_list=spans[0],
            public_metadata=spans[1],
            private_metadata=spans[2],
            bitcode=spans[3],
        )

    def _parse_extension(self) -> tuple[list[ExtensionTag], Span]:
        start = self.header.function_list.offset + 4 + self.header.function_list.size
        tags, end = walk_tags(self.data, start, self.file_size, "header extension")
        refuse_repeated_tags(tags, "header extension")
        extension = [ExtensionTag(code, at, length) for code, at, length in tags]
        return extension, Span(start, end - start)

    def extension_tag(self, code: bytes) -> ExtensionTag | None:
        """The first header-extension tag with this code, if any."""
        return next((tag for tag in self.extension if tag.code == code), None)

    def _extension_span(self, code: bytes) -> Span | None:
        tag = self.extension_tag(code)
        if tag is None:
            return None
        if tag.length != 16:
            raise MetallibFormatError(
                tag.offset - 6, f"{show_code(code)} payload is {tag.length} bytes, not 16"
            )
        offset, size = SPAN.unpack_from(self.data, tag.offset)
        if offset > self.file_size or size > self.file_size - offset:
            raise MetallibFormatError(
                tag.offset,
                f"{show_code(code)} section ({offset}+{size}) runs past the end of the file",
            )
        return Span(offset, size)

    # -- regions --------------------------------------------------------------------------------
    def sections(self) -> list[Region]:
        """The container's sections (not gaps), sorted by offset."""
        h = self.header
        found = [
            Region("header", 0, HEADER_SIZE),
            Region("function list", h.function_list.offset, h.function_list.size + 4),
            Region("header extension", *self.extension_span),
            Region("public metadata", *h.public_metadata),
            Region("private metadata", *h.private_metadata),
            Region("bitcode", *h.bitcode),
        ]
        if self.dynamic_header is not None:
            found.append(Region("dynamic header", *self.dynamic_header))
        if self.reflection_list is not None:
            found.append(Region("reflection list", *self.reflection_list))
        return sorted(found, key=lambda r: (r.offset, r.size))

    def _check_regions(self) -> None:
        previous: Region | None = None
        for region in self.sections():
            if region.size and previous is not None and region.offset < previous.end:
                raise MetallibFormatError(
                    region.offset,
                    f"{region.name} ({region.offset}+{region.size}) overlaps "
                    f"{previous.name} ({previous.offset}+{previous.size})",
                )
            if region.size and (previous is None or region.end > previous.end):
                previous = region

    def regions(self) -> list[Region]:
        """Sections plus named gaps: the returned regions tile ``[0, file_size)`` exactly."""
        tiles: list[Region] = []
        cursor = 0
        for region in self.sections():
            if region.offset > cursor:
                tiles.append(Region("gap", cursor, region.offset - cursor))
            tiles.append(region)
            cursor = max(cursor, region.end)
        if cursor < self.file_size:
            tiles.append(Region("gap", cursor, self.file_size - cursor))
        return tiles

    # -- functions ------------------------------------------------------------------------------
    @cached_property
    def _parsed(self) -> FunctionTable:
        try:
            return parse_function_list(self.data, self.header, self.reflection_list)
        except MetallibFormatError as exc:
            raise (exc.with_path(self.path) if self.path and not exc.path else exc) from None

    def columns(self, *, accept_bad_names: bool = False) -> FunctionTable:
        """The checked function list as columns (parsed on first use): every command's fast path.

        A name that is not valid UTF-8 or holds a NUL is refused here, so no command lists,
        reports or slims functions by a name it cannot show exactly; ``verify`` passes
        ``accept_bad_names`` and reports them (``table.bad_names``, names shown escaped).
        """
        table = self._parsed
        if table.bad_names and not accept_bad_names:
            first = table.bad_names[0]
            more = len(table.bad_names) - 1
            tail = f" ({more} more bad names; 'verify' lists them)" if more else ""
            shown = table.names[first.function]
            message = f"function {first.function}: name '{shown}' {first.reason}{tail}"
            raise MetallibFormatError(first.offset, message, self.path)
        return table

    @cached_property
    def functions(self) -> list[FunctionEntry]:
        """Every function, in file order: views of the rows of ``columns()``."""
        return list(self.columns())


_SECTION_NAMES = ("function list", "public metadata", "private metadata", "bitcode section")


_IDENT = re.compile(rb"Apple metal version [0-9][0-9.]* \([A-Za-z0-9_.-]+\)")


@dataclass(frozen=True)
class Provenance:
    """Facts read from the library; each list holds the distinct values found, in order. Its
    JSON (:meth:`as_dict`, the one codec) is the ``library`` record of a saved report."""

    format_version: str
    deployment_target: str
    platform: str
    """The OS of the deployment target (``Header.platform``): macOS, iOS, ..."""
    air_versions: tuple[str, ...]
    metal_language_versions: tuple[str, ...]
    compilers: tuple[str, ...]
    compiler_source: str
    """Where ``compilers`` were read: ``llvm.ident of N sampled modules``."""
    version_groups: tuple[VersionGroup, ...] = json_field(omit="empty", default=())
    """Only when the functions' ``VERS`` tags state more than one version: one group per (AIR,
    MSL) pair, the most common first (it lists no names), then the others, larger first, each
    naming its functions. Functions without a ``VERS`` tag are in none. Absent in reports
    saved before it was recorded."""

    def as_dict(self) -> dict[str, object]:
        return dict(dump(self))


def library_provenance(lib: Metallib, sample: int = 8) -> Provenance:
    """Read provenance from the header, every VERS tag, and ``sample`` modules spread over the
    file."""
    columns = lib.columns()
    versions = dict.fromkeys(v for v in columns.versions if v is not None)
    air = dict.fromkeys(f"{v[0]}.{v[1]}" for v in versions)
    msl = dict.fromkeys(f"{v[2]}.{v[3]}" for v in versions)
    total = len(columns.names)
    step = max(1, total // max(sample, 1))
    chosen = range(0, total, step)[:sample]
    compilers: dict[str, None] = {}
    data = lib.data
    for index in chosen:
        at = columns.module_offsets[index]
        match = _IDENT.search(data[at : at + columns.module_bytes[index]])
        if match:
            compilers.setdefault(match.group().decode("ascii"))
    major, minor = lib.header.deployment_target
    return Provenance(
        format_version=lib.header.format_version_text,
        deployment_target=f"{major}.{minor}",
        platform=lib.header.platform,
        air_versions=tuple(air),
        metal_language_versions=tuple(msl),
        compilers=tuple(compilers),
        compiler_source=f"llvm.ident of {len(chosen)} sampled modules",
        version_groups=version_groups(columns.names, columns.versions) if len(versions) > 1 else (),
    )
