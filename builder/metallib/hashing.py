"""SHA-256 of every module span: the bulk of ``verify``'s and ``slim``'s work.

Two ways, chosen once: with the native extension built against OpenSSL (``csrc/sha256.c``), C
threads hash the spans without the GIL and without a Python object per span, on both cores;
otherwise hashlib hashes them one after the other in this thread (hashlib releases the GIL for
large buffers, so a caller may still overlap it with other work, as ``slim`` does with its copy).
The digests come back in span order, concatenated, so comparing them with the stored HASH tags
(``FunctionTable.hashes``) is one bytes comparison.
"""

from __future__ import annotations

import os
from collections.abc import Callable, Sequence
from typing import Literal

from builder.metallib.native import has_native_sha256, native_module

__all__ = ["Mode", "hash_spans"]

Mode = Literal["auto", "native", "inline"]

# Below this many bytes a second thread costs more than it saves.
PARALLEL_MIN = 8 << 20
# Spans per native call when progress is reported between calls.
_BATCH = 1024


def hash_spans(
    data: memoryview,
    offsets: Sequence[int],
    sizes: Sequence[int],
    *,
    mode: Mode = "auto",
    progress: Callable[[int], None] | None = None,
) -> bytes:
    """The SHA-256 of each ``data[offset : offset + size]``, joined in order.

    ``mode``: "native" (OpenSSL on C threads; needs the extension built with OpenSSL), "inline"
    (hashlib), or "auto": native when built. ``progress(n)`` gets the bytes hashed so far.
    """
    if mode == "auto":
        mode = "native" if has_native_sha256() else "inline"
    if mode == "native":
        return _native_hash(data, offsets, sizes, progress)
    return _hashlib_hash(data, offsets, sizes, progress)


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


def _hashlib_hash(
    data: memoryview, offsets: Sequence[int], sizes: Sequence[int],
    progress: Callable[[int], None] | None,
) -> bytes:  # fmt: skip
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
