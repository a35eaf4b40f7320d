"""Metallib headers for the tests of the search (``builder.metallib.embedded``, ``csrc/find.c``):
a reference of the header checks written from docs/metallib-format.md (section 1, the fixed
header; section 0, the order of the regions), and headers at and around where each check turns."""

from __future__ import annotations

import struct

from hypothesis import strategies as st

__all__ = ["GOOD", "header", "headers", "reference"]


def reference(head: bytes) -> bool:
    """A header any real library could have: format 1.0 to 9.99, the function list at 88, and
    the function list (with its u32 count), a header extension of at least its ENDT, public and
    private metadata and bitcode following each other in this order inside the declared size."""
    if len(head) < 88 or head[:4] != b"MTLB":
        return False
    major, minor = struct.unpack_from("<HH", head, 6)
    declared, list_at, list_size = struct.unpack_from("<3Q", head, 16)
    regions = [(88, 4 + list_size + 4)] + [
        struct.unpack_from("<QQ", head, 40 + 16 * i) for i in range(3)
    ]
    end = 0
    for offset, size in regions:
        if offset < end:
            return False
        end = offset + size
    return bool(1 <= major <= 9 and minor <= 99 and list_at == 88 and end <= declared)


def header(fields: tuple[int, ...]) -> bytes:
    """88 header bytes: magic, version (major, minor), declared size, then the function list's
    offset and size and the public, private and bitcode offsets and sizes."""
    major, minor, *rest = fields
    return (
        b"MTLB"
        + struct.pack("<HHHBBHH", 0x8001, major, minor, 0, 0x81, 14, 0)
        + struct.pack("<9Q", *rest)
    )


GOOD = (2, 7, 1000, 88, 100, 196, 10, 206, 20, 226, 700)
"""A header that passes: the function list at 88 (its count and 100 bytes), a 4-byte extension
(its ENDT) to 196, then public metadata, private metadata and bitcode, ending at 926 of 1000."""


def _near(index: int) -> st.SearchStrategy[int]:
    """Values of field ``index`` at and around where a check turns, and a u64's extremes."""
    if index == 0:
        return st.sampled_from([0, 1, 2, 9, 10])
    if index == 1:
        return st.sampled_from([0, 7, 99, 100, 0xFFFF])
    value = GOOD[index]
    return st.sampled_from([max(0, value - 1), value + 1, 0, 2**64 - 1, 2**63, 2**64 - value - 1])


@st.composite
def headers(draw: st.DrawFn) -> bytes:
    """``GOOD`` with up to three fields changed: at, or one away from, where a check turns."""
    fields = list(GOOD)
    for index in draw(st.lists(st.integers(0, len(GOOD) - 1), max_size=3)):
        fields[index] = draw(_near(index))
    return header(tuple(fields))
