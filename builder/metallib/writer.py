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

import hashlib
import os
import struct
import tempfile
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import BinaryIO

from builder.metallib.errors import MetallibError
from builder.metallib.parts import Bytes, FunctionParts, LibraryParts
from builder.metallib.structs import HEADER_SIZE, MAGIC, U32, U64, WIDE_TAGS

__all__ = ["Layout", "atomic_output", "layout", "library_bytes", "write_library"]

_HEADER_TAIL = struct.Struct("<QQQQQQQQQ")
_TAG = struct.Struct("<4sH")


class Layout:
    """Absolute offsets and sizes of every region of the output."""

    def __init__(self, parts: LibraryParts) -> None:
        fns = parts.functions
        self.entry_sizes = [4 + sum(_tag_size(c, p) for c, p in fn.tags) + 4 for fn in fns]
        self.function_list = HEADER_SIZE
        self.function_list_size = sum(self.entry_sizes)  # excludes the u32 count, as stored
        self.extension = HEADER_SIZE + 4 + self.function_list_size
        self.extension_size = sum(_tag_size(c, p) for c, p in parts.extension) + 4
        self.public = self.extension + self.extension_size
        self.public_size = sum(len(fn.public_md) for fn in fns)
        self.private = self.public + self.public_size
        self.private_size = sum(len(fn.private_md) for fn in fns)
        self.bitcode = self.private + self.private_size
        self.bitcode_size = sum(len(fn.module) for fn in fns)
        self.dynamic = self.bitcode + self.bitcode_size
        self.dynamic_size = len(parts.dynamic_header) if parts.dynamic_header is not None else 0
        self.reflection = self.dynamic + self.dynamic_size
        self.has_reflection = parts.has_reflection_list
        self.rflt: list[int | None] = []
        self.pads: list[int] = []
        cursor = 4
        for fn in fns:
            if not self.has_reflection or fn.reflection is None:
                self.rflt.append(None)
                self.pads.append(0)
                continue
            pad = -(self.reflection + cursor + 12) % 16
            self.rflt.append(cursor)
            self.pads.append(pad)
            cursor += 16 + pad + len(fn.reflection)
        self.reflection_count = sum(r is not None for r in self.rflt)
        self.reflection_size = cursor if self.has_reflection else 0
        self.file_size = self.reflection + self.reflection_size


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


class _Sink:
    """Writes to the output and feeds the UUID digest with everything outside the bitcode."""

    def __init__(self, out: BinaryIO) -> None:
        self.out = out
        self.digest = hashlib.md5(usedforsecurity=False)
        self.hashing = True

    def write(self, data: Bytes) -> None:
        self.out.write(data)
        if self.hashing:
            self.digest.update(data)


def _entry(fn: FunctionParts, size: int, offsets: tuple[int, int, int], rflt: int | None) -> bytes:
    chunks = [U32.pack(size)]
    for code, payload in fn.tags:
        if code == b"OFFT":
            payload = struct.pack("<QQQ", *offsets)
        elif code == b"RFLT":
            if rflt is None:
                continue
            payload = U64.pack(rflt)
        elif code == b"MDSZ":
            payload = U64.pack(len(fn.module))
        chunks.append(_tag(code, payload))
    chunks.append(b"ENDT")
    return b"".join(chunks)


def _check(parts: LibraryParts, lay: Layout) -> None:
    for fn in parts.functions:
        codes = [code for code, _ in fn.tags]
        if b"RFLT" in codes and (not lay.has_reflection or fn.reflection is None):
            raise MetallibError(f"function {fn.name!r} has an RFLT tag but no reflection chunk")
        if lay.has_reflection and fn.reflection is not None and b"RFLT" not in codes:
            raise MetallibError(f"function {fn.name!r} has a reflection chunk but no RFLT tag")
        if b"OFFT" not in codes:
            raise MetallibError(f"function {fn.name!r} has no OFFT tag")


def write_to(parts: LibraryParts, out: BinaryIO) -> Layout:
    """Write the library to a seekable binary stream positioned at 0; returns its layout."""
    lay = Layout(parts)
    _check(parts, lay)
    sink = _Sink(out)
    h = lay
    sink.write(
        MAGIC
        + parts.raw_version
        + _HEADER_TAIL.pack(
            h.file_size, h.function_list, h.function_list_size, h.public, h.public_size,
            h.private, h.private_size, h.bitcode, h.bitcode_size,
        )  # fmt: skip
    )
    sink.write(U32.pack(len(parts.functions)))
    pub = priv = mod = 0
    for fn, size, rflt in zip(parts.functions, lay.entry_sizes, lay.rflt):
        sink.write(_entry(fn, size, (pub, priv, mod), rflt))
        pub += len(fn.public_md)
        priv += len(fn.private_md)
        mod += len(fn.module)
    uuid_at = None
    for code, payload in parts.extension:
        if code == b"RLST":
            payload = struct.pack("<QQ", lay.reflection, lay.reflection_size)
        elif code == b"HDYN":
            payload = struct.pack("<QQ", lay.dynamic, lay.dynamic_size)
        elif code == b"UUID":
            uuid_at = out.tell() + 6
            payload = parts.uuid if parts.uuid is not None else bytes(16)
            if len(payload) != 16:
                raise MetallibError("UUID must be 16 bytes")
        sink.write(_tag(code, payload))
    sink.write(b"ENDT")
    for fn in parts.functions:
        sink.write(fn.public_md)
    for fn in parts.functions:
        sink.write(fn.private_md)
    sink.hashing = False
    for fn in parts.functions:
        out.write(fn.module)
    sink.hashing = True
    if parts.dynamic_header is not None:
        sink.write(parts.dynamic_header)
    if lay.has_reflection:
        sink.write(U32.pack(lay.reflection_count))
        for fn, pad in zip(parts.functions, lay.pads):
            if fn.reflection is None:
                continue
            n = pad + len(fn.reflection)
            sink.write(U32.pack(16 + n) + b"RBUF" + U32.pack(n) + bytes(pad))
            sink.write(fn.reflection)
            sink.write(b"ENDT")
    if uuid_at is not None and parts.uuid is None:
        end = out.tell()
        out.seek(uuid_at)
        out.write(derive_uuid(sink.digest.digest()))
        out.seek(end)
    return lay


def derive_uuid(md5_digest: bytes) -> bytes:
    """An RFC 4122 version-3 UUID from an MD5 digest."""
    raw = bytearray(md5_digest[:16])
    raw[6] = (raw[6] & 0x0F) | 0x30
    raw[8] = (raw[8] & 0x3F) | 0x80
    return bytes(raw)


def library_bytes(parts: LibraryParts) -> bytes:
    """The library as bytes in memory (small libraries: tests, the stand-in linker)."""
    import io

    buffer = io.BytesIO()
    write_to(parts, buffer)
    return buffer.getvalue()


@contextmanager
def atomic_output(path: str | os.PathLike[str]) -> Iterator[BinaryIO]:
    """Open a temporary file beside ``path``; rename it over ``path`` only if the block succeeds."""
    target = Path(path)
    handle = tempfile.NamedTemporaryFile(
        dir=target.parent or Path("."), prefix=f".{target.name}.", suffix=".tmp", delete=False
    )
    try:
        with handle:
            yield handle  # type: ignore[misc]
        os.replace(handle.name, target)
    except BaseException:
        Path(handle.name).unlink(missing_ok=True)
        raise


def write_library(parts: LibraryParts, path: str | os.PathLike[str]) -> Layout:
    """Write ``parts`` to ``path`` atomically (temporary file + rename); returns the layout."""
    with atomic_output(path) as out:
        return write_to(parts, out)
