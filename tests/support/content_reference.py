"""A reference reading of what a metallib holds, written from docs/metallib-format.md and
independent of the tool: each function's name and VERS, and the header's deployment target.
The content gates' tests hold the tool's verdicts against it."""

from __future__ import annotations

import struct
from dataclasses import dataclass
from fnmatch import fnmatchcase
from pathlib import Path

__all__ = ["Held", "held"]


@dataclass(frozen=True)
class Held:
    names: tuple[str, ...]
    deployment_target: str
    """``u16@12 . u16@14`` of the header."""
    air: frozenset[str]
    """Every AIR version the functions' VERS tags state (``2.8``)."""
    metal: frozenset[str]
    """Every Metal language version they state (``4.0``)."""

    def matching(self, pattern: str) -> set[str]:
        return {n for n in self.names if fnmatchcase(n, pattern)}


def held(path: Path, offset: int = 0, size: int | None = None) -> Held:
    """The library at ``offset`` of ``path`` (a binary's window, or the whole file)."""
    with path.open("rb") as handle:
        handle.seek(offset)
        data = handle.read(size) if size is not None else handle.read()
    assert data[:4] == b"MTLB"
    target = struct.unpack_from("<HH", data, 12)
    list_at = struct.unpack_from("<Q", data, 24)[0]
    (count,) = struct.unpack_from("<I", data, list_at)
    at, names, versions = list_at + 4, [], set()
    for _ in range(count):
        (entry_size,) = struct.unpack_from("<I", data, at)  # counts itself
        tag_at = at + 4
        while data[tag_at : tag_at + 4] != b"ENDT":
            tag = data[tag_at : tag_at + 4]
            (length,) = struct.unpack_from("<H", data, tag_at + 4)
            payload = data[tag_at + 6 : tag_at + 6 + length]
            if tag == b"NAME":
                names.append(payload.rstrip(b"\0").decode())
            elif tag == b"VERS":
                versions.add(struct.unpack("<4H", payload))
            tag_at += 6 + length
        at += entry_size
    return Held(
        tuple(names),
        f"{target[0]}.{target[1]}",
        frozenset(f"{v[0]}.{v[1]}" for v in versions),
        frozenset(f"{v[2]}.{v[3]}" for v in versions),
    )
