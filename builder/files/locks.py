"""One run at a time per output: an exclusive ``flock`` on a lock file.

``build`` and ``variants`` lock their build folder (``BUILD/.metallib-builder.lock``) and
``variants --from`` its output folder (``.OUT.lock`` beside OUT): two runs writing the same place
at once would mix their results (one's settings, the other's numbers). The second run waits, and
says so on stderr, or with ``wait=False`` (``--no-wait``) stops at once: exit 2, one line.

The kernel releases a ``flock`` when its holder exits, however it exits (kill -9 included), so a
lock is never left behind by a dead run. The holder writes its process id into the file, for the
message another run shows, and removes the file when it lets go (on SIGTERM and SIGHUP too; after
kill -9 the next run does); a run that was waiting on the removed file then finds it gone (or
replaced) and locks the path anew, so two runs never both hold it.
"""

from __future__ import annotations

import fcntl
import os
import stat
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from pathlib import Path

from builder.errors import OutputError, UsageError
from builder.files.temporaries import forget, register

__all__ = ["exclusive_lock"]

_FLAGS = os.O_RDWR | os.O_CREAT | os.O_CLOEXEC | getattr(os, "O_NOFOLLOW", 0)


def _holder(fd: int) -> str:
    """`` (pid N)`` from the lock file, or nothing when it holds no process id yet."""
    try:
        text = os.pread(fd, 32, 0).decode("ascii").strip()
    except (OSError, UnicodeDecodeError):
        return ""
    return f" (pid {text})" if text.isdigit() else ""


def _still_at(fd: int, path: Path) -> bool:
    """True when ``path`` still names the file open on ``fd`` (its holder did not remove it)."""
    try:
        now, held = os.lstat(path), os.fstat(fd)
    except OSError:
        return False
    return (now.st_dev, now.st_ino) == (held.st_dev, held.st_ino)


def _open(path: Path, what: str) -> int | None:
    """The lock file open; None when its holder removed it meanwhile (open it again)."""
    try:
        fd = os.open(path, _FLAGS, 0o666)
    except OSError as exc:
        raise OutputError(f"cannot lock {what}: {path}: {exc.strerror or exc}") from exc
    info = os.fstat(fd)
    if stat.S_ISREG(info.st_mode) and info.st_nlink == 1:
        return fd
    os.close(fd)
    if stat.S_ISREG(info.st_mode) and info.st_nlink == 0:
        return None
    # A link or another kind of file: writing a process id into it would write elsewhere.
    raise OutputError(f"cannot lock {what}: {path} is not a plain lock file; remove it")


def _acquire(path: Path, what: str, wait: bool, on_wait: Callable[[str], None] | None) -> int:
    told = False
    while True:
        fd = _open(path, what)
        if fd is None:
            continue
        try:
            try:
                fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
            except BlockingIOError:
                holder = _holder(fd)
                if not wait:
                    raise UsageError(
                        f"{what} is in use by another metallib-builder run{holder}; "
                        "run again when it has finished (without --no-wait this run waits)"
                    ) from None
                if on_wait is not None and not told:
                    on_wait(
                        f"waiting for another metallib-builder run{holder} to finish with "
                        f"{what} ..."
                    )
                    told = True
                fcntl.flock(fd, fcntl.LOCK_EX)
            except OSError as exc:
                raise OutputError(f"cannot lock {what}: {path}: {exc.strerror or exc}") from exc
            if _still_at(fd, path):
                return fd
        except BaseException:
            os.close(fd)
            raise
        os.close(fd)  # the holder removed it as it let go: lock the path anew


@contextmanager
def exclusive_lock(
    path: Path, *, what: str, wait: bool = True, on_wait: Callable[[str], None] | None = None
) -> Iterator[None]:
    """Hold lock file ``path`` (created if needed) for the block; ``what`` names the locked
    place in messages. While another process holds it: wait, after calling ``on_wait`` once
    with a line to show, or with ``wait=False`` raise ``UsageError`` (exit 2). ``OutputError``
    when the lock file cannot be created."""
    fd = _acquire(path, what, wait, on_wait)
    register(path)  # SIGTERM, SIGHUP: removed like a temporary file (the lock is ours)
    try:
        try:
            os.ftruncate(fd, 0)
            os.pwrite(fd, f"{os.getpid()}\n".encode("ascii"), 0)
        except OSError:
            pass  # the process id only improves another run's message
        yield
    finally:
        forget(path)
        try:
            if _still_at(fd, path):
                os.unlink(path)
        except OSError:
            pass  # a folder gone read-only: the file stays, unlocked, and is reused
        os.close(fd)
