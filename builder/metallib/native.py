"""The optional native fast path of the container code: the ``builder.metallib._native`` extension,
and the job it speeds up most, the SHA-256 of every module span.

``pip install`` builds it from ``builder/metallib/csrc/`` (cmake/MetallibNative.cmake) into this
package. Without it, or when ``METALLIB_BUILDER_NATIVE=0`` is set, the pure-Python code does the
same work, more slowly; results are identical (tested). The extension only decides the accepted,
well-formed case: for anything else it answers None and the Python code reports the problem with
its byte offset.

Hashing the modules is the bulk of ``verify``'s and ``slim``'s work, and has two ways, chosen
once (``hash_spans``): with the extension built against OpenSSL (``csrc/sha256.c``), C threads
hash the spans without the GIL and without a Python object per span, on both cores; otherwise
hashlib hashes them one after the other in this thread (hashlib releases the GIL for large
buffers, so a caller may still overlap it with other work, as ``slim`` does with its copy). The
digests come back in span order, concatenated, so comparing them with the stored HASH tags
(``FunctionTable.hashes``) is one bytes comparison. ``SpanHashes`` hashes in the background while
the caller works, then with it.
"""

from __future__ import annotations

import os
from collections.abc import Callable, Iterator, Sequence
from contextlib import contextmanager
from importlib import import_module
from types import ModuleType

TYPE_CHECKING = False  # typing.TYPE_CHECKING without importing typing (start-up: --version)
if TYPE_CHECKING:
    from typing import Literal

    Mode = Literal["auto", "native", "inline"]

__all__ = [
    "ABI",
    "SpanHashes",
    "disabled",
    "has_native_sha256",
    "hash_spans",
    "native_module",
    "status",
    "version_text",
]


ABI = 16
"""The extension's result layout. Stated only here: CMake reads this line (``file(STRINGS)`` in
cmake/MetallibNative.cmake) and compiles it in, and an extension built for another number is not
used. Bump it whenever a native function's arguments or results change."""


def _load() -> tuple[ModuleType | None, str]:
    if os.environ.get("METALLIB_BUILDER_NATIVE", "1") == "0":
        return None, "off (METALLIB_BUILDER_NATIVE=0)"
    try:
        module = import_module("builder.metallib._native")
    except ImportError:
        return None, "not built (pure-Python parser)"
    where = getattr(module, "__file__", None) or module.__name__
    found = getattr(module, "ABI", None)
    if found != ABI:
        return None, f"ignored: {where} has ABI {found}, this package needs {ABI} (reinstall)"
    hashing = (
        "module hashes by OpenSSL"
        if getattr(module, "HAS_SHA256", 0)
        else "module hashes by hashlib"
    )
    deflate = "in C" if getattr(module, "HAS_DEFLATE", 0) else "in Python (built without zlib)"
    return module, f"on, {hashing}, download model {deflate} ({where})"


_MODULE, _STATUS = _load()


def native_module() -> ModuleType | None:
    """The extension module, or None when the pure-Python path is in use."""
    return _MODULE


def has_native_sha256() -> bool:
    """Whether the extension was built with OpenSSL and hashes modules itself."""
    return _MODULE is not None and bool(getattr(_MODULE, "HAS_SHA256", False))


def status() -> str:
    """One line saying whether the native parser is used, and why not."""
    return _STATUS


def version_text() -> str:
    """What ``metallib-builder --version`` prints: the tool's version and :func:`status`."""
    from builder import __version__

    return f"metallib-builder, version {__version__}\nnative container reader: {status()}"


@contextmanager
def disabled() -> Iterator[None]:
    """Run the pure-Python paths inside the block, as ``METALLIB_BUILDER_NATIVE=0`` does for a
    whole process: the tests compare both paths in one process. Not thread-safe."""
    global _MODULE
    saved = _MODULE
    _MODULE = None
    try:
        yield
    finally:
        _MODULE = saved


# -- the SHA-256 of module spans --------------------------------------------------------------

# Below this many bytes a second thread costs more than it saves.
PARALLEL_MIN = 8 << 20
# Spans per native call when progress is reported between calls.
_BATCH = 1024


def hash_spans(
    data: memoryview,
    offsets: Sequence[int],
    sizes: Sequence[int],
    *,
    fd: int | None = None,
    mode: Mode = "auto",
    threads: int | None = None,
    progress: Callable[[int], None] | None = None,
) -> bytes:
    """The SHA-256 of each ``data[offset : offset + size]``, joined in order.

    ``mode``: "native" (OpenSSL on C threads; needs the extension built with OpenSSL), "inline"
    (hashlib), or "auto": native when built. ``fd``, the open file ``data`` maps, lets the native
    hashing read the spans with ``pread`` (cheaper than faulting the map in). ``progress(n)``
    gets the bytes hashed so far. ``threads``: how many C threads (default: two when the spans
    are large enough and there are two cores).
    """
    if mode == "auto":
        mode = "native" if has_native_sha256() else "inline"
    if mode == "native":
        if threads is None:
            threads = 2 if sum(sizes) >= PARALLEL_MIN and (os.cpu_count() or 1) >= 2 else 1
        return _native_hash(data, offsets, sizes, fd, threads, progress)
    return _hashlib_hash(data, offsets, sizes, progress)


def _native_hash(
    data: memoryview,
    offsets: Sequence[int],
    sizes: Sequence[int],
    fd: int | None,
    threads: int,
    progress: Callable[[int], None] | None,
) -> bytes:
    native = native_module()
    if native is None or not has_native_sha256():
        raise RuntimeError("native hashing is not built (needs OpenSSL headers at install time)")
    offsets = offsets if isinstance(offsets, list) else list(offsets)  # the C function takes lists
    sizes = sizes if isinstance(sizes, list) else list(sizes)
    file = -1 if fd is None else fd
    if progress is None:
        return native.sha256_spans(data, offsets, sizes, threads, file)  # type: ignore[no-any-return]
    parts, done = [], 0
    for at in range(0, len(offsets), _BATCH):
        batch = sizes[at : at + _BATCH]
        parts.append(native.sha256_spans(data, offsets[at : at + _BATCH], batch, threads, file))
        done += sum(batch)
        progress(done)
    return b"".join(parts)


def _hashlib_hash(
    data: memoryview,
    offsets: Sequence[int],
    sizes: Sequence[int],
    progress: Callable[[int], None] | None,
) -> bytes:
    from hashlib import sha256  # only without the native hashing

    out = []
    done = 0
    for count, (at, n) in enumerate(zip(offsets, sizes), 1):
        out.append(sha256(data[at : at + n]).digest())
        done += n
        if progress is not None and count % 512 == 0:
            progress(done)
    if progress is not None:
        progress(done)
    return b"".join(out)


class SpanHashes:
    """The SHA-256 of many spans, computed in batches on a thread of its own while the caller does
    other work (``slim``: the copy, which runs in the kernel); ``digests`` then hashes the batches
    left on the calling thread too, so both cores finish the job. One hashing thread beside the
    copy, then two, beats two beside it from the start: three busy threads on two cores contend.
    The thread reads ``data``: call ``digests`` or ``cancel`` before the buffer goes away.
    """

    def __init__(
        self,
        data: memoryview,
        offsets: list[int],
        sizes: list[int],
        *,
        fd: int | None = None,
        mode: Mode = "auto",
    ) -> None:
        import threading
        from collections import deque

        if mode == "auto":
            mode = "native" if has_native_sha256() else "inline"
        self._mode, self._fd = mode, fd
        self._spans = (data, offsets, sizes)
        self._batches = deque(_batches(sizes))
        self._done: dict[int, bytes] = {}
        self._error: BaseException | None = None
        self._thread = threading.Thread(target=self._work, name="span-hashes", daemon=True)
        self._thread.start()

    def _work(self) -> None:
        data, offsets, sizes = self._spans
        while self._error is None:
            try:
                start, end = self._batches.popleft()  # atomic: both threads take batches
            except IndexError:
                return
            try:
                self._done[start] = hash_spans(
                    data,
                    offsets[start:end],
                    sizes[start:end],
                    fd=self._fd,
                    mode=self._mode,
                    threads=1,
                )
            except BaseException as exc:  # noqa: BLE001 - re-raised by digests()
                self._error = exc

    def digests(self) -> bytes:
        """Every span's digest, in order, once both threads are through the batches."""
        self._work()
        self._thread.join()
        if self._error is not None:
            raise self._error
        return b"".join(self._done[start] for start in sorted(self._done))

    def cancel(self) -> None:
        """Stop after the batch in hand and wait for the thread (the caller failed)."""
        self._batches.clear()
        self._thread.join()


_BATCH_BYTES = 2 << 20
"""Bytes per batch: small enough that the two threads finish together, large enough that taking
a batch costs nothing (about 60 batches for mlx.metallib's 124 MB of modules)."""


def _batches(sizes: Sequence[int]) -> list[tuple[int, int]]:
    """``(start, end)`` index ranges of consecutive spans holding about ``_BATCH_BYTES`` each."""
    found, start, held = [], 0, 0
    for index, size in enumerate(sizes):
        held += size
        if held >= _BATCH_BYTES:
            found.append((start, index + 1))
            start, held = index + 1, 0
    if start < len(sizes):
        found.append((start, len(sizes)))
    return found
