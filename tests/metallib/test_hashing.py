"""Module hashing: every way (OpenSSL threads through the map or with pread, hashlib, in batches
beside other work) gives hashlib's digests of the same spans."""

from __future__ import annotations

import hashlib
import mmap
import os
import random
from collections.abc import Iterator
from pathlib import Path

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from builder.metallib.native import SpanHashes, has_native_sha256, hash_spans, native_module, status

pytestmark = pytest.mark.picks_container_code

SIZE = (5 << 20) + 12345  # several 1 MiB read blocks and several 2 MiB batches

needs_native_sha = pytest.mark.skipif(
    not has_native_sha256(), reason=f"native SHA-256 not built: {status()}"
)


@pytest.fixture(scope="module")
def mapped(tmp_path_factory: pytest.TempPathFactory) -> Iterator[tuple[memoryview, int, bytes]]:
    """(a map of a file of random bytes, its open descriptor, the bytes)."""
    data = random.Random(7).randbytes(SIZE)
    path = tmp_path_factory.mktemp("hashing") / "data.bin"
    path.write_bytes(data)
    with open(path, "rb") as handle:
        buffer = mmap.mmap(handle.fileno(), 0, access=mmap.ACCESS_READ)
        view = memoryview(buffer)
        yield view, handle.fileno(), data
        view.release()
        buffer.close()


def _expected(data: bytes, offsets: list[int], sizes: list[int]) -> bytes:
    return b"".join(hashlib.sha256(data[at : at + n]).digest() for at, n in zip(offsets, sizes))


_spans = st.lists(st.tuples(st.integers(0, SIZE), st.integers(0, 3 << 20)), max_size=30).map(
    lambda pairs: [(at, min(n, SIZE - at)) for at, n in pairs]
)


@needs_native_sha
@settings(
    max_examples=60, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture]
)
@given(spans=_spans, threads=st.integers(1, 3), ordered=st.booleans())
def test_native_sha256_reads_the_file_or_the_map_alike(
    mapped: tuple[memoryview, int, bytes], spans: list[tuple[int, int]], threads: int, ordered: bool
) -> None:
    """Spans in any order, across and larger than the 1 MiB read blocks."""
    view, fd, data = mapped
    if ordered:
        spans = sorted(spans)
    offsets, sizes = [at for at, _ in spans], [n for _, n in spans]
    expected = _expected(data, offsets, sizes)
    native = native_module()
    assert native is not None
    assert native.sha256_spans(view, offsets, sizes, threads, fd) == expected
    assert native.sha256_spans(view, offsets, sizes, threads) == expected


@needs_native_sha
def test_native_sha256_says_when_the_file_cannot_be_read(
    mapped: tuple[memoryview, int, bytes], tmp_path: Path
) -> None:
    view, _, _ = mapped
    unreadable = os.open(tmp_path, os.O_RDONLY)  # a directory: pread fails with EISDIR
    try:
        with pytest.raises(RuntimeError, match="could not read the file"):
            native_module().sha256_spans(view, [0], [100], 1, unreadable)  # type: ignore[union-attr]
    finally:
        os.close(unreadable)


def _modules(seed: int) -> tuple[list[int], list[int]]:
    """Back-to-back spans of 1 kB to 300 kB over the whole file, like modules in a bitcode
    section."""
    rng = random.Random(seed)
    offsets, sizes, at = [], [], 0
    while at < SIZE:
        n = min(rng.randint(1000, 300_000), SIZE - at)
        offsets.append(at)
        sizes.append(n)
        at += n
    return offsets, sizes


@pytest.mark.parametrize("mode", ["inline", pytest.param("native", marks=needs_native_sha)])
@pytest.mark.parametrize("use_fd", [True, False])
def test_every_way_gives_hashlibs_digests(
    mapped: tuple[memoryview, int, bytes], mode: str, use_fd: bool
) -> None:
    view, fd, data = mapped
    offsets, sizes = _modules(3)
    expected = _expected(data, offsets, sizes)
    file = fd if use_fd else None
    assert hash_spans(view, offsets, sizes, fd=file, mode=mode) == expected  # type: ignore[arg-type]
    seen: list[int] = []
    assert hash_spans(view, offsets, sizes, fd=file, mode=mode, progress=seen.append) == expected  # type: ignore[arg-type]
    assert seen and seen[-1] == SIZE and seen == sorted(seen)
    background = SpanHashes(view, offsets, sizes, fd=file, mode=mode)  # type: ignore[arg-type]
    assert background.digests() == expected


def test_background_hashing_stops_when_cancelled(mapped: tuple[memoryview, int, bytes]) -> None:
    """``slim`` cancels when the write fails: no thread may go on reading the map it closes."""
    import threading

    view, _, _ = mapped
    offsets, sizes = _modules(5)
    background = SpanHashes(view, offsets * 20, sizes * 20, mode="inline")  # 100 MB: still at work
    assert "span-hashes" in [thread.name for thread in threading.enumerate()]
    background.cancel()
    assert "span-hashes" not in [thread.name for thread in threading.enumerate()]
