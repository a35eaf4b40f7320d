"""A metallib's function list read without the tool, from docs/metallib-format.md ("Function
list", "Tags", the header table): each function's name, entry size and module, the module's SHA-256
computed here with hashlib and its HASH tag as stored. For the tests of which functions several
libraries hold (``builder.size.duplicates``)."""

from __future__ import annotations

import hashlib
import mmap
import struct
from pathlib import Path
from typing import NamedTuple

__all__ = ["Listed", "listed", "listed_bytes"]

_WIDE = {b"RBUF", b"SARC", b"SBUF"}
"""Tags whose length is a u32 instead of a u16."""


class Listed(NamedTuple):
    """One function as its entry and module say."""

    name: str
    entry_bytes: int
    """The entry's own u32 size (counting itself and its ENDT)."""
    module: bytes
    hash_tag: bytes
    """The HASH payload as stored."""

    @property
    def sha256(self) -> bytes:
        return hashlib.sha256(self.module).digest()


def listed_bytes(data: bytes | memoryview) -> list[Listed]:
    """Every function of the metallib ``data`` (starting at its ``MTLB``), in list order."""
    assert bytes(data[:4]) == b"MTLB"
    list_at = struct.unpack_from("<Q", data, 24)[0]
    bitcode_at = struct.unpack_from("<Q", data, 72)[0]
    (count,) = struct.unpack_from("<I", data, list_at)
    at, found = list_at + 4, []
    for _ in range(count):
        (size,) = struct.unpack_from("<I", data, at)
        tags, cursor = {}, at + 4
        while bytes(data[cursor : cursor + 4]) != b"ENDT":
            code = bytes(data[cursor : cursor + 4])
            wide = code in _WIDE
            (length,) = struct.unpack_from("<I" if wide else "<H", data, cursor + 4)
            start = cursor + (8 if wide else 6)
            tags[code] = bytes(data[start : start + length])
            cursor = start + length
        module_at = bitcode_at + struct.unpack_from("<3Q", tags[b"OFFT"])[2]
        (module_size,) = struct.unpack("<Q", tags[b"MDSZ"])
        name = tags[b"NAME"].rstrip(b"\0").decode()
        module = bytes(data[module_at : module_at + module_size])
        found.append(Listed(name, size, module, tags[b"HASH"]))
        at += size
    return found


def listed(path: Path, offset: int = 0, size: int | None = None) -> list[Listed]:
    """The functions of the metallib at ``offset`` (``size`` bytes) in the file ``path``."""
    with path.open("rb") as handle, mmap.mmap(handle.fileno(), 0, access=mmap.ACCESS_READ) as m:
        end = len(m) if size is None else offset + size
        with memoryview(m) as whole, whole[offset:end] as view:
            return listed_bytes(view)
