"""The extension's file search (``csrc/find.c``, ``find_header``), which finds the metallibs inside
a binary, against a reference written here (docs/metallib-format.md, the header's fields) on the
same bytes: headers that pass and headers that fail each check by one, anywhere in a file,
across the 1 MiB blocks it reads, at the file's first and last bytes."""

from __future__ import annotations

import os
from pathlib import Path

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from support.metallib_headers import GOOD, header, headers, reference

from builder.metallib.native import native_module, status

pytestmark = [
    pytest.mark.picks_container_code,
    pytest.mark.skipif(
        os.environ.get("METALLIB_BUILDER_NATIVE") == "0" or native_module() is None,
        reason=f"native search not in use: {status()}",
    ),
]

BLOCK = 1 << 20  # find.c's read size


def _find(path: Path, start: int, end: int) -> int:
    fd = os.open(path, os.O_RDONLY)
    try:
        return int(native_module().find_header(fd, start, end))  # type: ignore[union-attr]
    finally:
        os.close(fd)


def _walk(path: Path, start: int, end: int) -> list[int]:
    found, at = [], start
    while (hit := _find(path, at, end)) >= 0:
        found.append(hit)
        at = hit + 1
    return found


def _expected(data: bytes, start: int, end: int) -> list[int]:
    end = min(end, len(data))
    return [
        at
        for at in range(start, end - 87)
        if data[at : at + 4] == b"MTLB" and reference(data[at : at + 88])
    ]


@settings(
    max_examples=300, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture]
)
@given(
    pieces=st.lists(
        st.one_of(
            headers(),
            st.binary(max_size=40).map(lambda b: bytes(b"MTLB\x58\0"[x % 6] for x in b)),
        ),
        max_size=6,
    ),
    start=st.integers(0, 400),
    end=st.integers(0, 700),
)
def test_find_header_is_the_reference(
    tmp_path: Path, pieces: list[bytes], start: int, end: int
) -> None:
    """Headers a field away from passing, each check on its own, beside magics and the bytes of
    the function list's offset; headers overlapping where a piece is cut short by the next;
    ``end`` past the file's end reads to the end."""
    data = b"".join(pieces)
    path = tmp_path / "blob"
    path.write_bytes(data)
    assert _walk(path, start, end) == _expected(data, start, end)


def test_each_check_on_its_own(tmp_path: Path) -> None:
    """One field off by one at a time: the header is not found, and the reference agrees."""
    good = header(GOOD)
    assert reference(good)
    wrong = {
        "version 0.7": (0, 7),
        "version 10.7": (10, 7),
        "version 2.100": (2, 100),
        "list at 89": (2, 7, 1000, 89),
        "extension under 4 bytes": (2, 7, 1000, 88, 101),
        "private before public's end": (2, 7, 1000, 88, 100, 196, 11),
        "bitcode before private's end": (2, 7, 1000, 88, 100, 196, 10, 206, 21),
        "bitcode past the declared end": (2, 7, 925, 88, 100, 196, 10, 206, 20, 226, 700),
        "a wrapped size": (2, 7, 1000, 88, 100, 196, 10, 206, 2**64 - 206, 0, 0),
    }
    for what, fields in wrong.items():
        bad = header(fields + GOOD[len(fields) :])
        assert not reference(bad), what
        path = tmp_path / "one"
        path.write_bytes(bytes(5) + bad + bytes(100))
        assert _find(path, 0, 200) == -1, what
        path.write_bytes(bytes(5) + good + bytes(100))
        assert _find(path, 0, 200) == 5


def test_across_block_ends_and_at_the_files_edges(tmp_path: Path) -> None:
    """A header just inside, across and just past the end of the first block a search reads
    (blocks start where the search does, and overlap by 87 bytes), twice in a row, and as the
    file's last 88 bytes; one byte shorter, the last is not found (its header is cut)."""
    good = header(GOOD)
    path = tmp_path / "big"
    for d in range(-90, -84):
        first = BLOCK + d
        second = first + 1 + BLOCK + d  # the same place in the block of a search from first + 1
        size = second + 88 + BLOCK // 2 + 88
        data = bytearray(size)
        for at in (first, second, size - 88):
            data[at : at + 88] = good
        path.write_bytes(bytes(data))
        assert _walk(path, 0, size) == [first, second, size - 88]
        assert _walk(path, 0, size - 1) == [first, second]
        assert _find(path, first + 1, second + 87) == -1  # the end bounds a header


def test_refuses_a_closed_file(tmp_path: Path) -> None:
    path = tmp_path / "blob"
    path.write_bytes(header(GOOD))
    fd = os.open(path, os.O_RDONLY)
    os.close(fd)
    with pytest.raises(OSError):
        native_module().find_header(fd, 0, 88)  # type: ignore[union-attr]
