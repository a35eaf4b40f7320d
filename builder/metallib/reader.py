"""Read a metallib: memory-mapped, lazy, every offset checked.

``open_metallib`` parses only the header and the header extension. The function list is parsed on
first use of ``functions``; module bytes, metadata chunks and reflection chunks are memoryview
slices of the map, so nothing is copied. Every structural inconsistency raises
``MetallibFormatError`` with the byte offset where it was found, and no allocation is ever sized
from a count read out of the file without first checking the count against the bytes available.
"""

from __future__ import annotations

import mmap
import os
from functools import cached_property
from pathlib import Path
from types import TracebackType

from builder.metallib.errors import MetallibError, MetallibFormatError
from builder.metallib.model import ExtensionTag, FunctionEntry, Header, Region
from builder.metallib.structs import (
    HEADER_SIZE,
    MAGIC,
    MIN_ENTRY_SIZE,
    SPAN,
    U16,
    U32,
    U64,
    Span,
    read_u32,
    show_code,
    walk_tags,
)

__all__ = ["Metallib", "open_metallib"]

_OFFT = SPAN.__class__("<QQQ")
_VERS = SPAN.__class__("<HHHH")
_REQUIRED = (b"NAME", b"HASH", b"OFFT")


def open_metallib(path: str | os.PathLike[str]) -> Metallib:
    """Open ``path`` read-only and parse its header; raises ``MetallibError`` on bad input."""
    name = os.fspath(path)
    try:
        with open(name, "rb") as handle:
            size = os.fstat(handle.fileno()).st_size
            if size == 0:
                raise MetallibFormatError(0, "empty file, not a metallib", name)
            mapped = mmap.mmap(handle.fileno(), 0, access=mmap.ACCESS_READ)
    except OSError as exc:
        raise MetallibError(f"{name}: cannot read: {exc.strerror or exc}") from None
    try:
        return Metallib(mapped, name)
    except MetallibFormatError as exc:
        mapped.close()
        raise exc.with_path(name) from None


class Metallib:
    """A parsed metallib over a buffer (an mmap or bytes). Use as a context manager to unmap."""

    def __init__(self, buffer: mmap.mmap | bytes | bytearray, path: str | None = None) -> None:
        self._buffer = buffer
        self.path = path
        self.data = memoryview(buffer)
        self.file_size = len(self.data)
        self.header = self._parse_header()
        self.extension, self.extension_span = self._parse_extension()
        self.reflection_list = self._extension_span(b"RLST")
        self.dynamic_header = self._extension_span(b"HDYN")
        uuid = self.extension_tag(b"UUID")
        self.uuid = bytes(self.data[uuid.offset : uuid.offset + uuid.length]) if uuid else None
        self._check_regions()

    @classmethod
    def from_bytes(cls, data: bytes | bytearray, path: str | None = None) -> Metallib:
        """Parse an in-memory metallib (tests, fuzzing, freshly written output)."""
        try:
            return cls(data, path)
        except MetallibFormatError as exc:
            raise (exc.with_path(path) if path else exc) from None

    # -- lifetime -------------------------------------------------------------------------------
    def close(self) -> None:
        """Release the memory map; views handed out before become invalid."""
        self.__dict__.pop("functions", None)
        self.data.release()
        if isinstance(self._buffer, mmap.mmap):
            self._buffer.close()

    def __enter__(self) -> Metallib:
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
            raise MetallibFormatError(0, f"not a metallib: magic is {bytes(data[:4])!r}, not 'MTLB'")
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
        return [ExtensionTag(code, at, length) for code, at, length in tags], Span(start, end - start)

    def extension_tag(self, code: bytes) -> ExtensionTag | None:
        """The first header-extension tag with this code, if any."""
        return next((tag for tag in self.extension if tag.code == code), None)

    def _extension_span(self, code: bytes) -> Span | None:
        tag = self.extension_tag(code)
        if tag is None:
            return None
        if tag.length != 16:
            raise MetallibFormatError(tag.offset - 6, f"{show_code(code)} payload is {tag.length} bytes, not 16")
        offset, size = SPAN.unpack_from(self.data, tag.offset)
        if offset > self.file_size or size > self.file_size - offset:
            raise MetallibFormatError(
                tag.offset, f"{show_code(code)} section ({offset}+{size}) runs past the end of the file"
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
    def functions(self) -> list[FunctionEntry]:
        """Every function-list entry, in file order (parsed on first use)."""
        return _FunctionListParser(self).parse()

    def module_bytes(self, function: FunctionEntry) -> memoryview:
        """The function's module as stored (Darwin bitcode wrapper + bitcode + zero padding)."""
        return self.data[function.module.offset : function.module.end]

    def public_metadata_bytes(self, function: FunctionEntry) -> memoryview:
        return self.data[function.public_md.offset : function.public_md.end]

    def private_metadata_bytes(self, function: FunctionEntry) -> memoryview:
        return self.data[function.private_md.offset : function.private_md.end]

    def reflection_flatbuffer(self, function: FunctionEntry) -> memoryview | None:
        """The reflection FlatBuffer without its alignment padding (None if the file has none)."""
        chunk = function.reflection
        if chunk is None:
            return None
        payload_len = U32.unpack_from(self.data, chunk.offset + 8)[0]
        payload_start = chunk.offset + 12
        pad = (-payload_start) % 16
        return self.data[payload_start + pad : payload_start + payload_len]

    def tag_payload(self, function: FunctionEntry, code: bytes) -> memoryview | None:
        """The payload of a function-list tag, or None if the entry has no such tag."""
        for tag_code, at, length in function.tags:
            if tag_code == code:
                return self.data[at : at + length]
        return None


_SECTION_NAMES = ("function list", "public metadata", "private metadata", "bitcode section")


class _FunctionListParser:
    """One pass over the function list; kept apart so ``Metallib`` stays small."""

    def __init__(self, lib: Metallib) -> None:
        self.lib = lib
        self.data = lib.data

    def parse(self) -> list[FunctionEntry]:
        lib, data = self.lib, self.data
        h = lib.header
        start = h.function_list.offset
        end = start + 4 + h.function_list.size
        count = read_u32(data, start, "function count")
        if count * MIN_ENTRY_SIZE > h.function_list.size:
            raise MetallibFormatError(
                start,
                f"function count {count} needs at least {count * MIN_ENTRY_SIZE} bytes, "
                f"the function list has {h.function_list.size}",
            )
        raw = []
        pos = start + 4
        for index in range(count):
            if pos + 4 > end:
                raise MetallibFormatError(pos, f"function {index}: entry starts past the list end {end}")
            size = U32.unpack_from(data, pos)[0]
            if size < MIN_ENTRY_SIZE or pos + size > end:
                raise MetallibFormatError(
                    pos, f"function {index}: entry size {size} does not fit the list (ends at {end})"
                )
            tags, tag_end = walk_tags(data, pos + 4, pos + size, f"function {index} entry")
            if tag_end != pos + size:
                raise MetallibFormatError(
                    tag_end - 4, f"function {index}: ENDT at {tag_end - 4}, entry size says {pos + size - 4}"
                )
            raw.append((pos, size, tags))
            pos += size
        if pos != end:
            raise MetallibFormatError(pos, f"function list entries end at {pos}, header says {end}")
        return self._resolve(raw)

    def _resolve(
        self, raw: list[tuple[int, int, list[tuple[bytes, int, int]]]]
    ) -> list[FunctionEntry]:
        h = self.lib.header
        decoded = [self._decode(index, pos, tags) for index, (pos, _, tags) in enumerate(raw)]
        public = self._chunk_spans(decoded, 1, h.public_metadata, "public metadata")
        private = self._chunk_spans(decoded, 2, h.private_metadata, "private metadata")
        reflection = self._reflection_spans(decoded)
        functions = []
        bc = h.bitcode
        module_end = 0
        for index, ((pos, size, tags), d) in enumerate(zip(raw, decoded)):
            name, type_, hash_, (_, _, module_off), mdsz, _, version = d
            if mdsz is None:  # older writers: next module's offset minus this one
                nxt = decoded[index + 1][3][2] if index + 1 < len(decoded) else bc.size
                mdsz = nxt - module_off
            if module_off > bc.size or mdsz < 0 or mdsz > bc.size - module_off:
                raise MetallibFormatError(
                    _tag_at(tags, b"OFFT"),
                    f"function {name!r}: module {module_off}+{mdsz} runs past the bitcode section "
                    f"({bc.size} bytes)",
                )
            if module_off < module_end:
                raise MetallibFormatError(
                    bc.offset + module_off,
                    f"function {name!r}: module at {module_off} overlaps the previous one "
                    f"(ends at {module_end})",
                )
            module_end = module_off + mdsz
            functions.append(
                FunctionEntry(
                    index, name, type_, Span(pos, size), tuple(tags), hash_, public[index],
                    private[index], Span(bc.offset + module_off, mdsz), reflection[index], version,
                )  # fmt: skip
            )
        return functions

    def _decode(
        self, index: int, pos: int, tags: list[tuple[bytes, int, int]]
    ) -> tuple[
        str, int | None, bytes, tuple[int, int, int], int | None, int | None,
        tuple[int, int, int, int] | None,
    ]:  # fmt: skip
        data = self.data
        found = {code: (at, length) for code, at, length in tags}
        for code in _REQUIRED:
            if code not in found:
                raise MetallibFormatError(pos, f"function {index}: entry has no {code.decode()} tag")
        at, length = found[b"NAME"]
        if length == 0 or data[at + length - 1] != 0:
            raise MetallibFormatError(at, f"function {index}: NAME is not NUL-terminated")
        name = bytes(data[at : at + length - 1]).decode("utf-8", "replace")
        at, length = found[b"HASH"]
        if length != 32:
            raise MetallibFormatError(at, f"function {name!r}: HASH is {length} bytes, not 32")
        hash_ = bytes(data[at : at + 32])
        at, length = found[b"OFFT"]
        if length != 24:
            raise MetallibFormatError(at, f"function {name!r}: OFFT is {length} bytes, not 24")
        offsets = _OFFT.unpack_from(data, at)
        type_ = data[found[b"TYPE"][0]] if b"TYPE" in found and found[b"TYPE"][1] >= 1 else None
        mdsz = self._u64(found, b"MDSZ", name)
        rflt = self._u64(found, b"RFLT", name)
        version = None
        if b"VERS" in found and found[b"VERS"][1] == 8:
            version = _VERS.unpack_from(data, found[b"VERS"][0])
        return name, type_, hash_, offsets, mdsz, rflt, version

    def _u64(self, found: dict[bytes, tuple[int, int]], code: bytes, name: str) -> int | None:
        if code not in found:
            return None
        at, length = found[code]
        if length != 8:
            raise MetallibFormatError(at, f"function {name!r}: {code.decode()} is {length} bytes, not 8")
        return int(U64.unpack_from(self.data, at)[0])

    @staticmethod
    def _chunk_spans(
        decoded: list[tuple], which: int, section: Span, what: str  # type: ignore[type-arg]
    ) -> list[Span]:
        """Chunk i runs from its OFFT offset to the next function's (or the section end)."""
        spans = []
        for index, d in enumerate(decoded):
            start = d[3][which - 1]
            stop = decoded[index + 1][3][which - 1] if index + 1 < len(decoded) else section.size
            if start > stop or stop > section.size:
                raise MetallibFormatError(
                    section.offset + min(start, section.size),
                    f"function {d[0]!r}: {what} chunk {start}..{stop} is out of order or past the "
                    f"section ({section.size} bytes)",
                )
            spans.append(Span(section.offset + start, stop - start))
        return spans

    def _reflection_spans(self, decoded: list[tuple]) -> list[Span | None]:  # type: ignore[type-arg]
        rlst = self.lib.reflection_list
        with_rflt = [d[5] is not None for d in decoded]
        if rlst is None:
            if any(with_rflt):
                raise MetallibFormatError(
                    self.lib.extension_span.offset, "functions have RFLT tags but there is no RLST"
                )
            return [None] * len(decoded)
        count = read_u32(self.data, rlst.offset, "reflection list count")
        if count * 16 > rlst.size:
            raise MetallibFormatError(
                rlst.offset, f"reflection count {count} does not fit the {rlst.size}-byte list"
            )
        spans: list[Span | None] = []
        previous_end = 4
        for d in decoded:
            rel = d[5]
            if rel is None:
                spans.append(None)
                continue
            at = rlst.offset + rel
            if rel < 4 or rel + 16 > rlst.size:
                raise MetallibFormatError(
                    rlst.offset + min(rel, rlst.size), f"function {d[0]!r}: RFLT {rel} is outside the reflection list"
                )
            size = U32.unpack_from(self.data, at)[0]
            if size < 16 or rel + size > rlst.size:
                raise MetallibFormatError(
                    at, f"function {d[0]!r}: reflection chunk of {size} bytes runs past the list end"
                )
            if rel < previous_end:
                raise MetallibFormatError(
                    at, f"function {d[0]!r}: reflection chunk at {rel} overlaps the previous one"
                )
            previous_end = rel + size
            spans.append(Span(at, size))
        return spans


def _tag_at(tags: list[tuple[bytes, int, int]], code: bytes) -> int:
    return next((at for c, at, _ in tags if c == code), 0)
