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
from typing import BinaryIO

from builder.fileio import atomic_write as atomic_output  # the project's one output helper
from builder.metallib.errors import MetallibError
from builder.metallib.parts import Bytes, FunctionParts, LibraryParts
from builder.metallib.sink import OutputSink
from builder.metallib.source import SourceFunctions
from builder.metallib.structs import HEADER_SIZE, MAGIC, U32, U64, WIDE_TAGS

__all__ = ["Layout", "atomic_output", "check_written", "layout", "library_bytes", "write_library"]

_HEADER_TAIL = struct.Struct("<QQQQQQQQQ")
_TAG = struct.Struct("<4sH")
_OFFSETS = struct.Struct("<QQQ")
_SPAN = struct.Struct("<QQ")
_U32_AT = U32.unpack_from


class Layout:
    """Absolute offsets and sizes of every region of the output, and the per-function sizes."""

    def __init__(self, parts: LibraryParts) -> None:
        fns = parts.functions
        if isinstance(fns, SourceFunctions):
            self.entry_sizes = fns.entry_sizes
            public, private, modules = fns.public_sizes, fns.private_sizes, fns.module_sizes
            reflection = fns.reflection_sizes
        else:
            self.entry_sizes = [
                len(fn.entry) if fn.entry is not None else 8 + sum(_tag_size(c, p) for c, p in fn.tags)
                for fn in fns
            ]
            public = [fn.public_md_size for fn in fns]
            private = [fn.private_md_size for fn in fns]
            modules = [fn.module_size for fn in fns]
            reflection = [fn.reflection_size for fn in fns]
        self.public_sizes, self.private_sizes, self.module_sizes = public, private, modules
        self.function_list = HEADER_SIZE
        self.function_list_size = sum(self.entry_sizes)  # excludes the u32 count, as stored
        self.extension = HEADER_SIZE + 4 + self.function_list_size
        self.extension_size = sum(_tag_size(c, p) for c, p in parts.extension) + 4
        self.public = self.extension + self.extension_size
        self.public_size = sum(public)
        self.private = self.public + self.public_size
        self.private_size = sum(private)
        self.bitcode = self.private + self.private_size
        self.bitcode_size = sum(modules)
        self.dynamic = self.bitcode + self.bitcode_size
        self.dynamic_size = len(parts.dynamic_header) if parts.dynamic_header is not None else 0
        self.reflection = self.dynamic + self.dynamic_size
        self.has_reflection = parts.has_reflection_list
        self.rflt: list[int | None] = []
        self.pads: list[int] = []
        self.reflection_unchanged = False
        """Every reflection chunk is copied as is (``pads`` is then left empty)."""
        cursor = 4
        base = self.reflection + 12
        if self.has_reflection and isinstance(fns, SourceFunctions) and _chunks_stay(self, fns):
            return
        for size in reflection:
            if not self.has_reflection or size is None:
                self.rflt.append(None)
                self.pads.append(0)
                continue
            pad = -(base + cursor) % 16
            self.rflt.append(cursor)
            self.pads.append(pad)
            cursor += 16 + pad + size
        self.reflection_count = len(self.rflt) - self.rflt.count(None)
        self.reflection_size = cursor if self.has_reflection else 0
        self.file_size = self.reflection + self.reflection_size


def _chunks_stay(lay: Layout, fns: SourceFunctions) -> bool:
    """Lay out the reflection list in bulk when every chunk stays as it is: all chunks canonical,
    back to back in the source, and the list moves by a multiple of 16 bytes, so each keeps its
    padding. Fills ``lay`` and returns True; False sends the caller to the general loop."""
    source = fns.sections[3]
    if (lay.reflection - source) % 16 or not all(fns.canonical) or not fns.in_place(3, source + 4):
        return False
    lay.rflt = [None if at is None else at - source for at in fns.reflection_offsets]
    lay.reflection_count = len(lay.rflt) - lay.rflt.count(None)
    lay.reflection_size = 4 + sum(fns.chunk_sizes)
    lay.file_size = lay.reflection + lay.reflection_size
    lay.reflection_unchanged = True
    return True


def layout(parts: LibraryParts) -> Layout:
    """Compute the output layout without writing anything."""
    return Layout(parts)


def _tag_size(code: bytes, payload: Bytes) -> int:
    return (8 if code in WIDE_TAGS else 6) + len(payload)


def _tag(code: bytes, payload: Bytes) -> bytes:
    if code in WIDE_TAGS:
        return code + U32.pack(len(payload)) + bytes(payload)
    if len(payload) > 0xFFFF:
        raise MetallibError(f"tag {code!r} payload of {len(payload)} bytes exceeds 65535")
    return _TAG.pack(code, len(payload)) + bytes(payload)


def _write_entries(sink: OutputSink, parts: LibraryParts, lay: Layout) -> None:
    """The function list after its count: source entries copied and patched, others serialized."""
    if isinstance(parts.functions, SourceFunctions):
        _write_source_entries(sink, parts.functions, lay)
        return
    buf = bytearray()
    pub = priv = mod = 0
    pack_offsets = _OFFSETS.pack_into
    for fn, rflt in zip(parts.functions, lay.rflt):
        at = len(buf)
        if fn.entry is not None:
            buf += fn.entry
            offt_rel, rflt_rel = fn.entry_patch
            pack_offsets(buf, at + offt_rel, pub, priv, mod)
            if rflt_rel is not None:
                if rflt is None:
                    raise MetallibError(f"function {fn.name!r} has an RFLT tag but no reflection chunk")
                U64.pack_into(buf, at + rflt_rel, rflt)
        else:
            assert isinstance(fn, FunctionParts)
            buf += _entry(fn, (pub, priv, mod), rflt)
        pub += fn.public_md_size
        priv += fn.private_md_size
        mod += fn.module_size
    sink.write(buf)


def _write_source_entries(sink: OutputSink, fns: SourceFunctions, lay: Layout) -> None:
    """Entries as stored with OFFT and RFLT patched; when every function keeps its offsets (all
    of them kept) the entries are copied from the source untouched, by the kernel."""
    same_reflection = lay.reflection_unchanged or not lay.has_reflection
    if same_reflection and all(fns.in_place(which, fns.sections[which]) for which in range(3)):
        for start, length in fns.runs(4):
            sink.copy(start, length)
        return
    buf = bytearray()
    for start, length in fns.runs(4):
        buf += fns.data[start : start + length]
    pack_offsets = _OFFSETS.pack_into
    pack_u64 = U64.pack_into
    rows = zip(
        accumulate(fns.entry_sizes, initial=0), fns.offt_rel, fns.rflt_rel, lay.rflt,
        *(accumulate(sizes, initial=0) for sizes in (lay.public_sizes, lay.private_sizes, lay.module_sizes)),
    )  # fmt: skip
    for index, (at, offt_rel, rflt_rel, rflt, pub, priv, mod) in enumerate(rows):
        pack_offsets(buf, at + offt_rel, pub, priv, mod)
        if rflt_rel is not None:
            if rflt is None:
                raise MetallibError(f"function {fns.names[index]!r} has an RFLT tag but no reflection chunk")
            pack_u64(buf, at + rflt_rel, rflt)
    sink.write(buf)


def _entry(fn: FunctionParts, offsets: tuple[int, int, int], rflt: int | None) -> bytes:
    codes = [code for code, _ in fn.tags]
    if b"OFFT" not in codes:
        raise MetallibError(f"function {fn.name!r} has no OFFT tag")
    if (b"RFLT" in codes) != (rflt is not None):
        raise MetallibError(f"function {fn.name!r}: RFLT tag and reflection chunk must go together")
    chunks = []
    for code, payload in fn.tags:
        if code == b"OFFT":
            payload = _OFFSETS.pack(*offsets)
        elif code == b"RFLT":
            payload = U64.pack(rflt)
        elif code == b"MDSZ":
            payload = U64.pack(len(fn.module))
        chunks.append(_tag(code, payload))
    body = b"".join(chunks)
    return U32.pack(len(body) + 8) + body + b"ENDT"


def write_to(parts: LibraryParts, out: BinaryIO) -> Layout:
    """Write the library to a seekable binary stream positioned at 0; returns its layout."""
    lay = Layout(parts)
    derive = parts.uuid is None and any(code == b"UUID" for code, _ in parts.extension)
    if derive:
        from hashlib import md5  # only a subset needs a new UUID

        digest = md5(usedforsecurity=False)
    sink = OutputSink(out, parts.source, digest if derive else None)
    fns = parts.functions
    sink.write(
        MAGIC
        + parts.raw_version
        + _HEADER_TAIL.pack(
            lay.file_size, lay.function_list, lay.function_list_size, lay.public, lay.public_size,
            lay.private, lay.private_size, lay.bitcode, lay.bitcode_size,
        )  # fmt: skip
    )
    sink.write(U32.pack(len(fns)))
    _write_entries(sink, parts, lay)
    uuid_at = None
    for code, payload in parts.extension:
        if code == b"RLST":
            payload = _SPAN.pack(lay.reflection, lay.reflection_size)
        elif code == b"HDYN":
            payload = _SPAN.pack(lay.dynamic, lay.dynamic_size)
        elif code == b"UUID":
            uuid_at = sink.position + 6
            payload = parts.uuid if parts.uuid is not None else bytes(16)
            if len(payload) != 16:
                raise MetallibError("UUID must be 16 bytes")
        sink.write(_tag(code, payload))
    sink.write(b"ENDT")
    for which in range(3):
        sink.set_hashing(which != 2)  # modules are covered by their HASH tags
        if isinstance(fns, SourceFunctions):
            for start, length in fns.runs(which):
                sink.copy(start, length)
            continue
        for fn in fns:
            size = (fn.public_md_size, fn.private_md_size, fn.module_size)[which]
            origin = fn.origin[which] if fn.origin is not None else None
            if origin is not None:
                sink.copy(origin, size)
            else:
                sink.write((fn.public_md, fn.private_md, fn.module)[which])
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
    """RLST: count, then one RBUF chunk per function whose FlatBuffer starts 16-aligned."""
    sink.write(U32.pack(lay.reflection_count))
    fns = parts.functions
    if isinstance(fns, SourceFunctions):
        if lay.reflection_unchanged:
            for start, length in fns.runs(3):
                sink.copy(start, length)
            return
        rows = zip(fns.reflection_offsets, fns.reflection_sizes, fns.chunk_sizes, fns.canonical, lay.pads)
        for index, (old, size, chunk, canonical, pad) in enumerate(rows):
            if size is None:
                continue
            if canonical and -(old + 12) % 16 == pad:  # type: ignore[operator]
                sink.copy(old, chunk)  # type: ignore[arg-type]  # same padding: chunk unchanged
            else:
                _new_chunk(sink, pad, fns.flatbuffer(index))
        return
    for fn, pad in zip(fns, lay.pads):
        size = fn.reflection_size
        if size is None:
            continue
        n = pad + size
        old = fn.origin[3] if fn.origin is not None else None
        unchanged = old is not None and sink.data is not None and -(old + 12) % 16 == pad
        if unchanged and _U32_AT(sink.data, old)[0] == 16 + n:  # type: ignore[arg-type]
            sink.copy(old, 16 + n)  # type: ignore[arg-type]  # same padding: chunk unchanged
        else:
            flatbuffer = fn.reflection
            assert flatbuffer is not None
            _new_chunk(sink, pad, flatbuffer)


def _new_chunk(sink: OutputSink, pad: int, flatbuffer: Bytes) -> None:
    n = pad + len(flatbuffer)
    sink.write(U32.pack(16 + n) + b"RBUF" + U32.pack(n) + bytes(pad))
    sink.write(flatbuffer)
    sink.write(b"ENDT")


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
