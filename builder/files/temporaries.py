"""What a run holds while it writes an output, and removing it when the run ends early:
temporary files and folders beside the output, and the lock of a build or output folder.

An output ``NAME`` is prepared as ``.NAME.<12 hex digits>.tmp`` in the same folder (a file for
``builder.files.atomic.atomic_write``, a folder for
``builder.files.output_folder.replaced_folder``), then renamed into place. A name of exactly that
form is taken as ours; nothing else is ever removed.

A run that ends early leaves no temporary behind:

- an error or Ctrl-C: the code that made the temporary removes it as the exception passes;
- SIGTERM or SIGHUP: the handler :func:`install_signal_cleanup` sets up removes every temporary
  still registered (:func:`register`), then the process dies of that signal as it would have
  (a shell sees status 128 + N);
- kill -9, a crash or a power cut: the next run that writes the same output removes what is left
  (:func:`remove_stale`). Another run may be writing that output at the same moment, so a
  temporary *file* is removed only when no process holds the ``flock`` its writer takes on it for
  its whole life (:func:`create_temp_file`; the kernel drops it when the writer dies, however it
  dies). A temporary *folder* is made and removed only by a run that holds its output's lock
  (:func:`exclusive_lock`), so any other one it finds is left from a dead run.

One run at a time per output (:func:`exclusive_lock`, an exclusive ``flock`` on a lock file):
``build`` and ``variants`` lock their build folder (``BUILD/.metallib-builder.lock``) and
``variants --from`` its output folder (``.OUT.lock`` beside OUT): two runs writing the same place
at once would mix their results (one's settings, the other's numbers). The second run waits, and
says so on stderr, or with ``wait=False`` (``--no-wait``) stops at once: exit 2, one line. The
kernel releases a ``flock`` when its holder exits, however it exits, so a lock is never left
behind by a dead run. The holder writes its process id into the file, for the message another run
shows, and removes the file when it lets go (registered like a temporary, so on SIGTERM and SIGHUP
too; after kill -9 the next run does); a run that was waiting on the removed file then finds it
gone (or replaced) and locks the path anew, so two runs never both hold it.
"""

from __future__ import annotations

import errno
import fcntl
import os
import re
import shutil
import signal
import stat
from collections.abc import Callable, Iterator
from contextlib import contextmanager, suppress
from pathlib import Path
from types import FrameType

from builder.errors import OutputError, UsageError

__all__ = [
    "create_temp_file",
    "exclusive_lock",
    "forget",
    "install_signal_cleanup",
    "register",
    "remove_stale",
    "remove_temporary",
    "signals_deferred",
    "temp_path",
]


_TOKEN_BYTES = 6
_FLAGS = os.O_CLOEXEC | getattr(os, "O_NOFOLLOW", 0)


def temp_path(target: Path, suffix: str = "tmp") -> Path:
    """A fresh temporary name for ``target``: ``.NAME.<12 hex>.tmp`` in the same folder (a rename
    within one file system is atomic). ``suffix`` ``old`` names an output moved aside."""
    return target.parent / f".{target.name}.{os.urandom(_TOKEN_BYTES).hex()}.{suffix}"


def _pattern(name: str) -> re.Pattern[str]:
    return re.compile(rf"\.{re.escape(name)}\.([0-9a-f]{{{2 * _TOKEN_BYTES}}})\.(tmp|old)\Z")


# -- removing what a run leaves when it ends early ---------------------------------------------

_registered: dict[str, bool] = {}
"""Temporaries this process has made and not yet renamed or removed: path -> is a folder."""
_deferring = 0
_pending: list[int] = []


def register(path: Path, *, folder: bool = False) -> None:
    """Remove ``path`` if SIGTERM or SIGHUP ends this process before :func:`forget`."""
    _registered[os.fspath(path)] = folder


def forget(path: Path) -> None:
    """``path`` was renamed into place or removed: a signal no longer concerns it."""
    _registered.pop(os.fspath(path), None)


def remove_temporary(path: str | os.PathLike[str], *, folder: bool = False) -> None:
    """Remove a temporary of ours: a file, or a folder whole (never through a symbolic link).
    Best effort: what is gone already (renamed into place) or cannot be removed is left, and the
    next run that writes the same output tries again."""
    with suppress(OSError):
        if not folder:
            os.unlink(path)
        elif stat.S_ISDIR(os.lstat(path).st_mode):
            shutil.rmtree(path, ignore_errors=True)


def _die(signum: int) -> None:
    """Remove the registered temporaries (the newest first: files inside a folder before it),
    then die of ``signum`` with its default action, as if no handler had been set."""
    for path, folder in reversed(list(_registered.items())):
        remove_temporary(path, folder=folder)
    _registered.clear()
    signal.signal(signum, signal.SIG_DFL)
    os.kill(os.getpid(), signum)
    os._exit(128 + signum)  # only if the signal did not end the process


def _on_signal(signum: int, _frame: FrameType | None) -> None:
    if _deferring:
        _pending.append(signum)
        return
    _die(signum)


def install_signal_cleanup() -> None:
    """Make SIGTERM and SIGHUP remove this process's registered temporaries before it dies. A
    signal the process was started with ignored (``nohup``) or handled stays as it was. Call it
    from the main thread (the CLI does, at start)."""
    for name in ("SIGTERM", "SIGHUP"):
        signum = getattr(signal, name, None)
        if signum is not None and signal.getsignal(signum) == signal.SIG_DFL:
            signal.signal(signum, _on_signal)


@contextmanager
def signals_deferred() -> Iterator[None]:
    """Hold SIGTERM and SIGHUP (with :func:`install_signal_cleanup`'s handler) until the block
    ends: for steps that must not stop half way, such as a pair of renames."""
    global _deferring
    _deferring += 1
    try:
        yield
    finally:
        _deferring -= 1
        if not _deferring and _pending:
            _die(_pending[0])


# -- temporary files -----------------------------------------------------------------------------


def _try_lock(fd: int) -> bool | None:
    """Take ``fd``'s flock without waiting: True, False when another process holds it, None when
    the file system cannot lock (the caller then cannot tell a live file from a dead one)."""
    try:
        fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
    except BlockingIOError:
        return False
    except OSError:
        return None
    return True


def create_temp_file(target: Path) -> tuple[int, Path]:
    """Create and open (read-write, mode 0600) a new temporary file for ``target``, locked and
    registered, after removing those an earlier, killed run left for it. The caller keeps the
    descriptor (or a duplicate) open until the file is renamed or removed, then calls
    :func:`forget`. OSError when the folder cannot take a new file."""
    remove_stale(target)
    for _ in range(100):
        tmp = temp_path(target)
        with signals_deferred():  # a signal right after the file is made still removes it
            try:
                fd = os.open(tmp, os.O_RDWR | os.O_CREAT | os.O_EXCL | _FLAGS, 0o600)
            except FileExistsError:
                continue
            try:
                # Another run's remove_stale may open the file between its creation and this
                # lock: it then holds the lock (False) or has unlinked the file: another name.
                locked = _try_lock(fd)
                if locked is not False and os.fstat(fd).st_nlink > 0:
                    register(tmp)
                    return fd, tmp
            except BaseException:
                os.close(fd)
                raise
            os.close(fd)
    raise FileExistsError(errno.EEXIST, "no free temporary file name", os.fspath(target.parent))


def _remove_dead_file(path: Path) -> None:
    """Remove temporary file ``path`` unless a live process holds its lock."""
    try:
        fd = os.open(path, os.O_RDONLY | os.O_NONBLOCK | _FLAGS)
    except OSError:
        return  # gone, or a symbolic link (never one of ours)
    try:
        info = os.fstat(fd)
        if stat.S_ISREG(info.st_mode) and _try_lock(fd):
            now = os.lstat(path)
            if (now.st_dev, now.st_ino) == (info.st_dev, info.st_ino):
                os.unlink(path)
    except OSError:
        pass
    finally:
        os.close(fd)


def remove_stale(target: Path, *, folders: bool = False) -> list[Path]:
    """Remove the temporary files an earlier run left for ``target`` (those no live process
    holds). With ``folders`` (only under the lock of ``target``: no live run has one then),
    return the temporary folders too, sorted, for the caller to recover from or remove.
    Best effort: a folder that cannot be listed is left alone."""
    pattern = _pattern(target.name)
    try:
        with os.scandir(target.parent) as entries:
            found = sorted(
                (entry.name, entry.is_dir(follow_symlinks=False))
                for entry in entries
                if pattern.match(entry.name)
            )
    except OSError:
        return []
    left = []
    for name, is_folder in found:
        path = target.parent / name
        if is_folder:
            if folders:
                left.append(path)
        elif name.endswith(".tmp"):  # (only a folder is ever moved aside as .old)
            _remove_dead_file(path)
    return left


_LOCK_FLAGS = os.O_RDWR | os.O_CREAT | os.O_CLOEXEC | getattr(os, "O_NOFOLLOW", 0)


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
        fd = os.open(path, _LOCK_FLAGS, 0o666)
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
        with suppress(OSError):  # the process id only improves another run's message
            os.ftruncate(fd, 0)
            os.pwrite(fd, f"{os.getpid()}\n".encode("ascii"), 0)
        yield
    finally:
        forget(path)
        with suppress(OSError):  # a folder gone read-only: the file stays, unlocked, and is reused
            if _still_at(fd, path):
                os.unlink(path)
        os.close(fd)
