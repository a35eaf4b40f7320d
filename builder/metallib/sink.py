"""Sequential output for the writer: new bytes, and runs of the source copied (by the kernel when
both sides are files)."""

from __future__ import annotations

import io
import os
from typing import Any, BinaryIO

from builder.metallib.errors import MetallibError
from builder.metallib.parts import Bytes

__all__ = ["OutputSink"]


class OutputSink:
    """Sequential output with two kinds of writes: new bytes, and runs of the source file.

    Adjacent source runs are merged and copied in one piece, in the kernel when both sides are
    files (``os.copy_file_range``), else through the map. When ``digest`` is set, everything
    written while ``hashing`` is on also feeds it (the derived UUID).
    """

    def __init__(
        self, out: BinaryIO, data: memoryview, source: tuple[int, int] | None, digest: Any
    ) -> None:
        self.out = out
        self.data = data
        # the file ``data`` maps and where ``data`` starts in it (an embedded library's offset)
        self.source_fd: int | None = source[0] if source is not None else None
        self.source_base = source[1] if source is not None else 0
        self.out_fd = _fileno(out)
        self.digest = digest
        self.hashing = digest is not None
        self.position = out.tell()
        self.run: tuple[int, int] | None = None  # pending source run [start, end)

    def write(self, data: Bytes) -> None:
        if self.run is not None:
            self._flush_run(self.run)
        self.out.write(data)
        self.position += len(data)
        if self.hashing:
            self.digest.update(data)

    def copy(self, start: int, length: int) -> None:
        """Append ``length`` bytes of the source file starting at ``start``."""
        if self.run is not None and self.run[1] == start:
            self.run = (self.run[0], start + length)
            return
        if self.run is not None:
            self._flush_run(self.run)
        self.run = (start, start + length)

    def set_hashing(self, on: bool) -> None:
        if self.run is not None:
            self._flush_run(self.run)
        self.hashing = on and self.digest is not None

    def finish(self) -> None:
        if self.run is not None:
            self._flush_run(self.run)
        self.out.flush()

    def _flush_run(self, run: tuple[int, int]) -> None:
        start, end = run
        self.run = None
        view = self.data[start:end]
        if self.hashing:
            self.digest.update(view)
        if (
            self.source_fd is not None
            and self.out_fd is not None
            and _kernel_copy(
                self.out,
                self.source_fd,
                self.out_fd,
                self.source_base + start,
                end - start,
                self.position,
            )
        ):
            self.position += end - start
            return
        self.out.write(view)
        self.position += end - start


def _fileno(out: BinaryIO) -> int | None:
    try:
        return out.fileno()
    except (OSError, AttributeError, io.UnsupportedOperation):
        return None


def _kernel_copy(out: BinaryIO, src: int, dst: int, start: int, length: int, position: int) -> bool:
    """Copy with ``copy_file_range``; False (nothing written) where the kernel cannot."""
    copy_range = getattr(os, "copy_file_range", None)
    if copy_range is None:
        return False
    out.flush()
    done = 0
    try:
        while done < length:
            n = copy_range(src, dst, length - done, start + done, position + done)
            if n == 0:
                break
            done += n
    except OSError:
        if done:
            raise
        return False
    if done != length:
        raise MetallibError(f"short copy: {done} of {length} bytes")
    out.seek(position + length)
    return True
