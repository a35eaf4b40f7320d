"""The standard streams: the one rich console for progress and logs (stderr, colour only on a
terminal, NO_COLOR wins), and what happens when a reader closes its pipe.

Data output (tables, JSON) goes to stdout through click; everything for a watching person goes
to stderr, so piping stdout stays clean.
"""

from __future__ import annotations

import io
import os
import sys
from functools import lru_cache
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from _typeshed import ReadableBuffer
    from rich.console import Console
    from rich.progress import Progress, ProgressColumn

__all__ = [
    "guard_closed_pipes",
    "stderr_bar",
    "stderr_console",
    "stdout_color",
    "stdout_table_width",
    "table_width",
]


class _Discarding(io.RawIOBase):
    """A standard stream's file descriptor whose reader may go away (``| head``): the first write
    that finds the pipe closed points the descriptor at /dev/null, and that write and every later
    one (ours, a child's that inherited it, the flush at exit) are dropped."""

    def __init__(self, fd: int) -> None:
        super().__init__()
        self._fd = fd

    def writable(self) -> bool:
        return True

    def fileno(self) -> int:
        return self._fd

    def isatty(self) -> bool:
        return os.isatty(self._fd)

    def write(self, data: ReadableBuffer) -> int:
        size = memoryview(data).nbytes
        try:
            return os.write(self._fd, data)
        except BrokenPipeError:
            _to_devnull(self._fd)
            return size


def _to_devnull(fd: int) -> None:
    """Point ``fd`` at /dev/null (the pipe it wrote to has no reader any more)."""
    devnull = os.open(os.devnull, os.O_WRONLY)
    try:
        os.dup2(devnull, fd)
    finally:
        os.close(devnull)


def guard_closed_pipes() -> None:
    """Let the command run to its verdict when the reader of stdout or stderr goes away.

    A closed pipe (``compare ... 2>&1 | head``) is not a result: what is left to print is
    dropped, every gate is still decided, the comment still posted, and the exit code is the one
    the run would have had (0, 1 for a failed gate or check, 2 for unusable input). Without this
    Click turns the BrokenPipeError into exit 1, "gate failed". Only the process's own streams
    on descriptors 1 and 2 are replaced (a test's captured streams are left alone)."""
    for name, fd in (("stdout", 1), ("stderr", 2)):
        stream = getattr(sys, name)
        if stream is not getattr(sys, f"__{name}__") or not isinstance(stream, io.TextIOWrapper):
            continue
        try:
            if stream.fileno() != fd:
                continue
            stream.flush()
        except BrokenPipeError:
            _to_devnull(fd)
        except (OSError, ValueError):  # closed or not a real descriptor: nothing to guard
            continue
        guarded = io.TextIOWrapper(
            io.BufferedWriter(_Discarding(fd)),
            encoding=stream.encoding,
            errors=stream.errors,
            line_buffering=stream.line_buffering,
            write_through=stream.write_through,
        )
        setattr(sys, name, guarded)


@lru_cache(maxsize=1)
def stderr_console() -> Console:
    """The shared stderr console (rich is imported only when this is first called)."""
    from rich.console import Console

    return Console(stderr=True, no_color=bool(os.environ.get("NO_COLOR")), highlight=False)


def stderr_bar(*columns: str | ProgressColumn) -> Progress:
    """A progress bar on stderr that goes away when done, shown only on a terminal: in logs
    (CI) a bar is noise."""
    from rich.progress import Progress

    console = stderr_console()
    return Progress(*columns, console=console, transient=True, disable=not console.is_terminal)


def stdout_color() -> bool:
    """Colour in what goes to stdout: only on a terminal, never with NO_COLOR set."""
    return sys.stdout.isatty() and "NO_COLOR" not in os.environ


def stdout_table_width() -> int | None:
    """Width of a report table on stdout: :func:`table_width` on a terminal; None for a pipe or a
    file (as wide as the cells need, so no function name is cut)."""
    return table_width() if sys.stdout.isatty() else None


def table_width() -> int:
    """Width of a table on stdout: the terminal's, kept within 80 to 160 columns (100 when
    stdout is not a terminal)."""
    import shutil

    return max(80, min(shutil.get_terminal_size((100, 24)).columns, 160))
