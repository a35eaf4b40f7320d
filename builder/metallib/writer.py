"""Lay out ``LibraryParts`` and write them as a metallib, in Apple's region order.

Layout: header | function list | header extension | public md | private md | bitcode |
[dynamic header] | [reflection list]. Every offset is known before a byte is written because all
entry and extension payloads that hold offsets have fixed widths; only the reflection padding
depends on absolute positions, so the reflection list is laid out last.

A derived UUID is the MD5 of every output byte outside the bitcode section (the modules are
covered by their SHA-256 HASH tags in the function list) with the UUID field zeroed, marked as an
RFC 4122 version-3 UUID. Same parts in, same bytes out.
"""

from __future__ import annotations

import io
import os
import stat
import struct
from itertools import accumulate
from typing import Any, BinaryIO, NamedTuple

from builder.errors import InternalError, MetallibError
from builder.files.atomic import atomic_write as atomic_output  # the project's one output helper
from builder.metallib.parts import Bytes, LibraryParts, reflection_piece, tag_bytes
from builder.metallib.structs import HEADER_SIZE, MAGIC, OFFT, SPAN, U32, U64, WIDE_TAGS
from builder.metallib.table import Piece

__all__ = [
    "Layout",
    "OutputSink",
    "atomic_output",
    "check_written",
    "layout",
    "library_bytes",
    "write_library",
]


_HEADER_TAIL = struct.Struct("<QQQQQQQQQ")
_SECTIONS = (Piece.PUBLIC_MD, Piece.PRIVATE_MD, Piece.MODULE)
"""The pieces written as whole sections, in file order, between the extension and the rest."""


class Layout:
    """Absolute offsets and sizes of every region of the output, and where each function's
    reflection piece goes."""

    def __init__(self, parts: LibraryParts) -> None:
        fns = parts.functions
        self.function_list = HEADER_SIZE
        self.function_list_size = sum(fns.entry_bytes)  # excludes the u32 count, as stored
        self.extension = HEADER_SIZE + 4 + self.function_list_size
        self.extension_size = sum(_tag_size(c, p) for c, p in parts.extension) + 4
        self.public = self.extension + self.extension_size
        self.public_size = sum(fns.public_md_bytes)
        self.private = self.public + self.public_size
        self.private_size = sum(fns.private_md_bytes)
        self.bitcode = self.private + self.private_size
        self.bitcode_size = sum(fns.module_bytes)
        self.dynamic = self.bitcode + self.bitcode_size
        self.dynamic_size = len(parts.dynamic_header) if parts.dynamic_header is not None else 0
        self.reflection = self.dynamic + self.dynamic_size
        self.has_reflection = parts.has_reflection_list
        placed = _place_reflection(parts, self.reflection)
        self.rflt: list[int | None] = placed.rflt
        """Each function's RFLT value (its piece's offset in the list), None without a piece."""
        self.pads: list[int] = placed.pads
        """Each new piece's zero padding (empty when ``reflection_unchanged``)."""
        self.reflection_unchanged = placed.unchanged
        """Every reflection piece is copied as it is in the source."""
        self.reflection_count = len(self.rflt) - self.rflt.count(None)
        self.reflection_size = placed.size
        self.file_size = self.reflection + self.reflection_size


class _Reflection(NamedTuple):
    rflt: list[int | None]
    pads: list[int]
    size: int
    unchanged: bool


def _place_reflection(parts: LibraryParts, list_at: int) -> _Reflection:
    """Where each reflection piece goes in a list written at ``list_at``: after the u32 count,
    each FlatBuffer 16-aligned in the file. When every piece is canonical, they lie back to back
    in the source and the list moves by a multiple of 16 bytes, each keeps its padding and
    offset, and the list is copied as it is."""
    fns = parts.functions
    if not parts.has_reflection_list:
        return _Reflection([None] * len(fns), [0] * len(fns), 0, False)
    first = parts.starts[Piece.REFLECTION]  # the source's first piece, after its list's count
    sizes, canonical = fns.reflection_payloads()
    if (list_at + 4 - first) % 16 == 0 and all(canonical) and fns.in_place(Piece.REFLECTION, first):
        rflt = [None if at is None else at - first + 4 for at in fns.reflection_offsets]
        return _Reflection(rflt, [], 4 + sum(fns.reflection_bytes), True)
    rflt, pads = [], []
    cursor = 4
    for size in sizes:
        if size is None:
            rflt.append(None)
            pads.append(0)
            continue
        pad = -(list_at + 12 + cursor) % 16
        rflt.append(cursor)
        pads.append(pad)
        cursor += 16 + pad + size
    return _Reflection(rflt, pads, cursor, False)


def layout(parts: LibraryParts) -> Layout:
    """Compute the output layout without writing anything."""
    return Layout(parts)


def _tag_size(code: bytes, payload: Bytes) -> int:
    return (8 if code in WIDE_TAGS else 6) + len(payload)


def _write_entries(sink: OutputSink, parts: LibraryParts, lay: Layout) -> None:
    """The function list after its count: entries as stored with OFFT and RFLT patched; when
    every function keeps its offsets (all of them kept) the entries are copied untouched."""
    fns = parts.functions
    same_reflection = lay.reflection_unchanged or not lay.has_reflection
    if same_reflection and all(fns.in_place(piece, parts.starts[piece]) for piece in _SECTIONS):
        for start, length in fns.runs(Piece.ENTRY):
            sink.copy(start, length)
        return
    buf = bytearray()
    for start, length in fns.runs(Piece.ENTRY):
        buf += fns.data[start : start + length]
    pack_offsets = OFFT.pack_into
    pack_u64 = U64.pack_into
    rows = zip(
        accumulate(fns.entry_bytes, initial=0),
        fns.offt_rel,
        fns.rflt_rel,
        lay.rflt,
        *(accumulate(fns.sizes(piece), initial=0) for piece in _SECTIONS),
    )
    for index, (at, offt_rel, rflt_rel, rflt, pub, priv, mod) in enumerate(rows):
        pack_offsets(buf, at + offt_rel, pub, priv, mod)
        if rflt_rel is not None:
            if rflt is None:
                raise MetallibError(
                    f"function {fns.names[index]!r} has an RFLT tag but no reflection piece"
                )
            pack_u64(buf, at + rflt_rel, rflt)
    sink.write(buf)


def write_to(parts: LibraryParts, out: BinaryIO) -> Layout:
    """Write the library to a seekable binary stream positioned at 0; returns its layout."""
    lay = Layout(parts)
    derive = parts.uuid is None and any(code == b"UUID" for code, _ in parts.extension)
    if derive:
        from hashlib import md5  # only a subset needs a new UUID

        digest = md5(usedforsecurity=False)
    fns = parts.functions
    sink = OutputSink(out, fns.data, parts.source, digest if derive else None)
    sink.write(
        MAGIC
        + parts.raw_version
        + _HEADER_TAIL.pack(
            lay.file_size,
            lay.function_list,
            lay.function_list_size,
            lay.public,
            lay.public_size,
            lay.private,
            lay.private_size,
            lay.bitcode,
            lay.bitcode_size,
        )
    )
    sink.write(U32.pack(len(fns)))
    _write_entries(sink, parts, lay)
    uuid_at = None
    for code, payload in parts.extension:
        if code == b"RLST":
            payload = SPAN.pack(lay.reflection, lay.reflection_size)
        elif code == b"HDYN":
            payload = SPAN.pack(lay.dynamic, lay.dynamic_size)
        elif code == b"UUID":
            uuid_at = sink.position + 6
            payload = parts.uuid if parts.uuid is not None else bytes(16)
            if len(payload) != 16:
                raise MetallibError("UUID must be 16 bytes")
        sink.write(tag_bytes(code, payload))
    sink.write(b"ENDT")
    for piece in _SECTIONS:
        sink.set_hashing(piece != Piece.MODULE)  # modules are covered by their HASH tags
        for start, length in fns.runs(piece):
            sink.copy(start, length)
    sink.set_hashing(True)
    if parts.dynamic_header is not None:
        sink.write(parts.dynamic_header)
    if lay.has_reflection:
        _write_reflection(sink, parts, lay)
    sink.finish()
    if derive and uuid_at is not None:
        end = out.tell()
        out.seek(uuid_at)
        out.write(derive_uuid(sink.digest.digest()))
        out.seek(end)
    return lay


def _write_reflection(sink: OutputSink, parts: LibraryParts, lay: Layout) -> None:
    """RLST: count, then one RBUF piece per function whose FlatBuffer starts 16-aligned."""
    sink.write(U32.pack(lay.reflection_count))
    fns = parts.functions
    if lay.reflection_unchanged:
        for start, length in fns.runs(Piece.REFLECTION):
            sink.copy(start, length)
        return
    _, canonical = fns.reflection_payloads()
    rows = zip(fns.reflection_offsets, fns.reflection_bytes, canonical, lay.pads)
    for index, (old, size, same_form, pad) in enumerate(rows):
        if old is None:
            continue
        if same_form and -(old + 12) % 16 == pad:
            sink.copy(old, size)  # same padding: the piece is unchanged
            continue
        flatbuffer = fns.flatbuffer(index)
        if flatbuffer is None:
            raise InternalError(
                f"function {fns.names[index]!r}: a reflection piece without a FlatBuffer",
                offset=old,
            )
        sink.write(reflection_piece(pad, flatbuffer))


def derive_uuid(md5_digest: bytes) -> bytes:
    """An RFC 4122 version-3 UUID from an MD5 digest."""
    raw = bytearray(md5_digest[:16])
    raw[6] = (raw[6] & 0x0F) | 0x30
    raw[8] = (raw[8] & 0x3F) | 0x80
    return bytes(raw)


def library_bytes(parts: LibraryParts) -> bytes:
    """The library as bytes in memory (small libraries: tests, the stand-in linker)."""
    buffer = io.BytesIO()
    write_to(parts, buffer)
    return buffer.getvalue()


def check_written(out: BinaryIO, lay: Layout, path: str | os.PathLike[str]) -> None:
    """The bytes on disk must agree with the writer's own layout; checked before the rename, so
    a short or long file never replaces a good one."""
    out.flush()
    info = os.fstat(out.fileno())
    written = info.st_size if stat.S_ISREG(info.st_mode) else lay.file_size  # a device: unknown
    if written != lay.file_size:
        raise MetallibError(
            f"{os.fspath(path)}: wrote {written} bytes, layout says {lay.file_size}"
        )


def write_library(parts: LibraryParts, path: str | os.PathLike[str]) -> Layout:
    """Write ``parts`` to ``path`` atomically (temporary file + rename); returns the layout.

    ``OutputError`` (exit 2, naming ``path``) when it cannot be written; ``path`` is then as it was.
    """
    with atomic_output(path) as out:
        lay = write_to(parts, out)
        check_written(out, lay, path)
    return lay


# ---------------------------------------------------------------------------------------------
# Sequential output for the writer: new bytes, and runs of the source copied (by the kernel when
# both sides are files).


class OutputSink:
    """Sequential output with two kinds of writes: new bytes, and runs of the source file.

    Adjacent source runs are merged and copied in one piece, in the kernel when both sides are
    files (``os.copy_file_range``), else through the map. When ``digest`` is set, everything
    written while ``hashing`` is on also feeds it (the derived UUID).
    """

    def __init__(
        self, out: BinaryIO, data: memoryview, source: tuple[int, int] | None, digest: Any
    ) -> None:
        self.out = out
        self.data = data
        # the file ``data`` maps and where ``data`` starts in it (an embedded library's offset)
        self.source_fd: int | None = source[0] if source is not None else None
        self.source_base = source[1] if source is not None else 0
        self.out_fd = _fileno(out)
        self.digest = digest
        self.hashing = digest is not None
        self.position = out.tell()
        self.run: tuple[int, int] | None = None  # pending source run [start, end)

    def write(self, data: Bytes) -> None:
        if self.run is not None:
            self._flush_run(self.run)
        self.out.write(data)
        self.position += len(data)
        if self.hashing:
            self.digest.update(data)

    def copy(self, start: int, length: int) -> None:
        """Append ``length`` bytes of the source file starting at ``start``."""
        if self.run is not None and self.run[1] == start:
            self.run = (self.run[0], start + length)
            return
        if self.run is not None:
            self._flush_run(self.run)
        self.run = (start, start + length)

    def set_hashing(self, on: bool) -> None:
        if self.run is not None:
            self._flush_run(self.run)
        self.hashing = on and self.digest is not None

    def finish(self) -> None:
        if self.run is not None:
            self._flush_run(self.run)
        self.out.flush()

    def _flush_run(self, run: tuple[int, int]) -> None:
        start, end = run
        self.run = None
        view = self.data[start:end]
        if self.hashing:
            self.digest.update(view)
        if (
            self.source_fd is not None
            and self.out_fd is not None
            and _kernel_copy(
                self.out,
                self.source_fd,
                self.out_fd,
                self.source_base + start,
                end - start,
                self.position,
            )
        ):
            self.position += end - start
            return
        self.out.write(view)
        self.position += end - start


def _fileno(out: BinaryIO) -> int | None:
    try:
        return out.fileno()
    except (OSError, AttributeError, io.UnsupportedOperation):
        return None


def _kernel_copy(out: BinaryIO, src: int, dst: int, start: int, length: int, position: int) -> bool:
    """Copy with ``copy_file_range``; False (nothing written) where the kernel cannot."""
    copy_range = getattr(os, "copy_file_range", None)
    if copy_range is None:
        return False
    out.flush()
    done = 0
    try:
        while done < length:
            n = copy_range(src, dst, length - done, start + done, position + done)
            if n == 0:
                break
            done += n
    except OSError:
        if done:
            raise
        return False
    if done != length:
        raise MetallibError(f"short copy: {done} of {length} bytes")
    out.seek(position + length)
    return True
