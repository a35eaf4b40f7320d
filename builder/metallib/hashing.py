"""SHA-256 of every module span, on two cores.

Hashing is nearly all of ``verify``'s work (141 MB of modules in mlx.metallib). With the native
extension built against OpenSSL (``_native/sha256.c``), C threads hash the spans without the GIL
and without a Python object per span. Otherwise the spans are split: a worker hashes the tail
while this process runs the caller's other work (the structural screen) and then hashes the
head with hashlib. That worker is a forked child when that is safe (no other thread alive:
forking a threaded process can deadlock the child), else a thread, which also runs in parallel
because hashlib releases the GIL for large buffers. The digests come back in span order,
concatenated, so comparing them with the HASH tags is one bytes comparison.
"""

from __future__ import annotations

import os
import threading
from collections.abc import Callable, Sequence
from typing import Literal, TypeVar

from builder.metallib.native import has_native_sha256, native_module

__all__ = ["Mode", "hash_spans"]

T = TypeVar("T")
Mode = Literal["auto", "native", "fork", "thread", "inline"]

# Below this many bytes a second worker costs more than it saves.
PARALLEL_MIN = 8 << 20
# Share of the bytes the worker takes (this process also runs ``meanwhile``, a few ms in verify;
# the child first faults in its pages of the map). Measured best at 0.5 on mlx 0.32.
WORKER_SHARE = 0.5
_DIGEST = 32
# Spans per native call when progress is reported between calls.
_BATCH = 1024


def hash_spans(
    data: memoryview,
    offsets: Sequence[int],
    sizes: Sequence[int],
    meanwhile: Callable[[], T],
    *,
    mode: Mode = "auto",
    progress: Callable[[int], None] | None = None,
) -> tuple[bytes, T]:
    """``(digests, meanwhile())``: the SHA-256 of each ``data[offset : offset + size]``, joined.

    ``progress(n)`` gets the bytes hashed by this process so far (and the total at the end).
    """
    total = sum(sizes)
    if mode == "auto":
        mode = _auto_mode(total)
    if mode == "native":
        result = meanwhile()
        return _native_hash(data, offsets, sizes, progress), result
    split = len(offsets) if mode == "inline" else _split(sizes, total * (1 - WORKER_SHARE))
    worker = _start(mode, data, offsets[split:], sizes[split:]) if split < len(offsets) else None
    try:
        result = meanwhile()
        head = _hash(data, offsets[:split], sizes[:split], progress)
    except BaseException:
        if worker is not None:
            worker.cancel()
        raise
    tail = worker.join() if worker is not None else b""
    if progress is not None:
        progress(total)
    return head + tail, result


def _native_hash(
    data: memoryview, offsets: Sequence[int], sizes: Sequence[int],
    progress: Callable[[int], None] | None,
) -> bytes:  # fmt: skip
    native = native_module()
    if native is None or not has_native_sha256():
        raise RuntimeError("native hashing is not built (needs OpenSSL headers at install time)")
    threads = 2 if sum(sizes) >= PARALLEL_MIN and (os.cpu_count() or 1) >= 2 else 1
    offsets = offsets if isinstance(offsets, list) else list(offsets)  # the C function takes lists
    sizes = sizes if isinstance(sizes, list) else list(sizes)
    if progress is None:
        return native.sha256_spans(data, offsets, sizes, threads)  # type: ignore[no-any-return]
    parts, done = [], 0
    for at in range(0, len(offsets), _BATCH):
        chunk = sizes[at : at + _BATCH]
        parts.append(native.sha256_spans(data, offsets[at : at + _BATCH], chunk, threads))
        done += sum(chunk)
        progress(done)
    return b"".join(parts)


def _auto_mode(total: int) -> Mode:
    if has_native_sha256():
        return "native"
    if total < PARALLEL_MIN or (os.cpu_count() or 1) < 2:
        return "inline"
    if hasattr(os, "fork") and threading.active_count() == 1:
        return "fork"
    return "thread"


def _split(sizes: Sequence[int], head_bytes: float) -> int:
    """Index of the first span the worker takes: the head holds about ``head_bytes``."""
    done = 0
    for index, size in enumerate(sizes):
        if done >= head_bytes:
            return index
        done += size
    return len(sizes)


def _hash(
    data: memoryview, offsets: Sequence[int], sizes: Sequence[int],
    progress: Callable[[int], None] | None = None,
) -> bytes:  # fmt: skip
    from hashlib import sha256  # the fallback paths only: the native one needs no hashlib

    if progress is None:
        return b"".join([sha256(data[at : at + n]).digest() for at, n in zip(offsets, sizes)])
    out = []
    done = 0
    for count, (at, n) in enumerate(zip(offsets, sizes), 1):
        out.append(sha256(data[at : at + n]).digest())
        done += n
        if count % 512 == 0:
            progress(done)
    return b"".join(out)


class _Worker:
    def join(self) -> bytes:
        raise NotImplementedError

    def cancel(self) -> None:
        raise NotImplementedError


class _ThreadWorker(_Worker):
    def __init__(self, data: memoryview, offsets: Sequence[int], sizes: Sequence[int]) -> None:
        self._result: bytes | BaseException = b""
        self._thread = threading.Thread(target=self._run, args=(data, offsets, sizes), daemon=True)
        self._thread.start()

    def _run(self, data: memoryview, offsets: Sequence[int], sizes: Sequence[int]) -> None:
        try:
            self._result = _hash(data, offsets, sizes)
        except BaseException as exc:  # noqa: BLE001 - re-raised in join()
            self._result = exc

    def join(self) -> bytes:
        self._thread.join()
        if isinstance(self._result, BaseException):
            raise self._result
        return self._result

    def cancel(self) -> None:
        pass  # a daemon thread; its result is dropped


class _ForkWorker(_Worker):
    """A forked child that inherits the map, hashes, and writes the digests to a pipe."""

    def __init__(self, data: memoryview, offsets: Sequence[int], sizes: Sequence[int]) -> None:
        self._spans = (data, offsets, sizes)
        self._expected = len(offsets) * _DIGEST
        read_end, write_end = os.pipe()
        pid = os.fork()
        if pid == 0:  # child: never returns
            status = 1
            try:
                os.close(read_end)
                digests = memoryview(_hash(data, offsets, sizes))
                while digests:
                    digests = digests[os.write(write_end, digests) :]
                status = 0
            finally:
                os._exit(status)
        os.close(write_end)
        self._pid, self._read = pid, read_end

    def join(self) -> bytes:
        chunks = []
        try:
            while chunk := os.read(self._read, 1 << 20):
                chunks.append(chunk)
        finally:
            os.close(self._read)
            _, status = os.waitpid(self._pid, 0)
        digests = b"".join(chunks)
        if status != 0 or len(digests) != self._expected:
            return _hash(*self._spans)  # the child failed: do its share here
        return digests

    def cancel(self) -> None:
        try:
            os.kill(self._pid, 9)
        finally:
            os.close(self._read)
            os.waitpid(self._pid, 0)


def _start(mode: Mode, data: memoryview, offsets: Sequence[int], sizes: Sequence[int]) -> _Worker:
    if mode == "fork":
        return _ForkWorker(data, offsets, sizes)
    return _ThreadWorker(data, offsets, sizes)
