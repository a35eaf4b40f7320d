"""The extension's file search (``csrc/find.c``, ``find_bytes``), which finds the metallibs inside
a binary, against ``bytes.find`` on the same bytes: anywhere in a file, across the 1 MiB blocks
it reads, at the file's first and last bytes."""

from __future__ import annotations

import os
from collections.abc import Iterator
from pathlib import Path

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from builder.metallib.native import native_module, status

pytestmark = [
    pytest.mark.picks_container_code,
    pytest.mark.skipif(
        os.environ.get("METALLIB_BUILDER_NATIVE") == "0" or native_module() is None,
        reason=f"native search not in use: {status()}",
    ),
]

BLOCK = 1 << 20  # find.c's read size


def _find(path: Path, needle: bytes, start: int, end: int) -> int:
    fd = os.open(path, os.O_RDONLY)
    try:
        return int(native_module().find_bytes(fd, needle, start, end))  # type: ignore[union-attr]
    finally:
        os.close(fd)


def _every(data: bytes, needle: bytes) -> Iterator[int]:
    at = data.find(needle)
    while at >= 0:
        yield at
        at = data.find(needle, at + 1)


@settings(
    max_examples=300, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture]
)
@given(
    data=st.binary(max_size=300).map(lambda b: bytes(b"MTLB"[x % 4] for x in b)),
    needle=st.sampled_from([b"M", b"MT", b"MTLB", b"BLTM", b"MTLBMTLB", b"MTLBinaryArchive"]),
    start=st.integers(0, 320),
    end=st.integers(0, 330),
)
def test_find_bytes_is_bytes_find(
    tmp_path: Path, data: bytes, needle: bytes, start: int, end: int
) -> None:
    """Bytes made of the needle's own letters: matches everywhere, overlapping, cut by the
    bounds; ``end`` past the file's end reads to the end, as ``bytes.find`` clamps it."""
    path = tmp_path / "blob"
    path.write_bytes(data)
    assert _find(path, needle, start, end) == data.find(needle, start, end)


@pytest.mark.parametrize("needle", [b"MTLB", b"M", b"MTLBinaryArchive"])
def test_across_block_ends_and_at_the_files_edges(tmp_path: Path, needle: bytes) -> None:
    """The needle just inside, across and just past the end of the first block a search reads
    (blocks start where the search does), twice in a row, and at the file's last bytes."""
    n = len(needle)
    path = tmp_path / "big"
    for d in range(-n - 1, 2):
        first = BLOCK + d
        second = first + 1 + BLOCK + d  # the same place in the block of a search from first + 1
        size = second + n + BLOCK // 2
        data = bytearray(size)
        for at in (first, second, size - n):
            data[at : at + n] = needle
        path.write_bytes(bytes(data))
        walked, at = [], 0
        while (hit := _find(path, needle, at, size)) >= 0:
            walked.append(hit)
            at = hit + 1
        assert walked == list(_every(bytes(data), needle)) == [first, second, size - n]
        assert _find(path, needle, first + 1, second + n - 1) == -1  # the end bounds a match
        assert _find(path, needle, 0, first + n) == first


def test_refuses_an_empty_needle_and_a_closed_file(tmp_path: Path) -> None:
    path = tmp_path / "blob"
    path.write_bytes(b"MTLB")
    with pytest.raises(ValueError, match="1 to 64 bytes"):
        _find(path, b"", 0, 4)
    fd = os.open(path, os.O_RDONLY)
    os.close(fd)
    with pytest.raises(OSError):
        native_module().find_bytes(fd, b"MTLB", 0, 4)  # type: ignore[union-attr]
