"""Replacing an output folder as a whole: readers see the old complete folder or the new one.

:func:`replaced_folder` (``variants --from -o OUT``) hands out a new, empty sibling folder
``.OUT.<hex>.tmp``; everything is written there, and only when the block succeeds does it take
OUT's place:

1. where the system can swap two paths in one step (Linux ``renameat2(RENAME_EXCHANGE)``, macOS
   ``renamex_np(RENAME_SWAP)``), the new folder and OUT are swapped; the old content, now under
   the temporary name, is removed;
2. elsewhere, two renames: OUT to ``.OUT.<hex>.old``, then the new folder to OUT (SIGTERM and
   SIGHUP wait until both are done); then the old one is removed.

A run killed between those two renames (kill -9) leaves no OUT but both complete folders under
the same ``<hex>``. The next run that writes OUT, holding OUT's lock, finishes that swap before
anything else (the ``.tmp`` holding the new result becomes OUT; were it gone, the ``.old`` goes
back), then removes every other temporary left for OUT. A failure or a signal before the swap
removes the new folder and leaves OUT as it was. The whole run holds ``.OUT.lock``
(``builder.files.temporaries``), so two runs never write the same OUT at once.

OUT must be missing, empty, or hold ``marker`` (the file an earlier run of the same command
wrote): replacing a folder as a whole must never take away files the user put there.
"""

from __future__ import annotations

import errno
import os
import stat
import sys
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from pathlib import Path

from builder.errors import BuilderError, UsageError
from builder.files.atomic import cannot, make_dirs
from builder.files.reading import PathArg
from builder.files.temporaries import (
    exclusive_lock,
    forget,
    register,
    remove_stale,
    remove_temporary,
    signals_deferred,
    temp_path,
)

__all__ = ["exchange_paths", "lock_path", "replaced_folder"]

_AT_FDCWD = -100
_EXCHANGE = 2  # RENAME_EXCHANGE (linux/fs.h) and RENAME_SWAP (macOS sys/stdio.h) alike
_UNSUPPORTED = {errno.ENOSYS, errno.EINVAL, errno.ENOTSUP, errno.EOPNOTSUPP, errno.EXDEV}


def exchange_paths(first: Path, second: Path) -> bool:
    """Swap two existing paths atomically; False (nothing done) where the system or the file
    system cannot, OSError for any other failure."""
    import ctypes

    try:
        libc = ctypes.CDLL(None, use_errno=True)
    except OSError:
        return False
    a, b = os.fsencode(first), os.fsencode(second)
    if sys.platform == "darwin":
        func = getattr(libc, "renamex_np", None)
        args: tuple[object, ...] = (a, b, ctypes.c_uint(_EXCHANGE))
    else:
        func = getattr(libc, "renameat2", None)
        args = (ctypes.c_int(_AT_FDCWD), a, ctypes.c_int(_AT_FDCWD), b, ctypes.c_uint(_EXCHANGE))
    if func is None:
        return False
    func.restype = ctypes.c_int
    if func(*args) == 0:
        return True
    code = ctypes.get_errno()
    if code in _UNSUPPORTED:
        return False
    raise OSError(code, os.strerror(code), os.fspath(second))


def lock_path(folder: Path) -> Path:
    """The lock file of output folder ``folder``: beside it, since the folder itself is
    replaced."""
    return folder.parent / f".{folder.name}.lock"


def _recover(target: Path) -> None:
    """Finish (or undo) a swap a killed run left half done, then remove every other temporary
    folder left for ``target``. Call only holding ``target``'s lock."""
    left = remove_stale(target, folders=True)
    moved_aside = [p for p in left if p.name.endswith(".old")]
    if moved_aside and not os.path.lexists(target):
        new = moved_aside[0].with_name(moved_aside[0].name[: -len("old")] + "tmp")
        settled = new if new in left else moved_aside[0]  # the new result, complete; else the old
        os.rename(settled, target)
        left.remove(settled)
    for path in left:
        remove_temporary(path, folder=True)


def _check_replaceable(folder: PathArg, target: Path, marker: str) -> None:
    try:
        info = os.stat(target)
    except FileNotFoundError:
        return
    if not stat.S_ISDIR(info.st_mode):
        raise UsageError(f"{os.fspath(folder)}: not a folder")
    names = os.listdir(target)
    if names and marker not in names:
        raise UsageError(
            f"{os.fspath(folder)}: holds files but no {marker}, so it is not an earlier output of "
            "this command; it would be replaced as a whole: give a new or empty folder"
        )


def _swap(staged: Path, target: Path) -> None:
    """Put ``staged`` in ``target``'s place (see the module docstring)."""
    if not os.path.lexists(target):
        os.rename(staged, target)
        forget(staged)
        return
    if exchange_paths(staged, target):
        remove_temporary(staged, folder=True)  # it holds the old content now
        forget(staged)
        return
    old = staged.with_name(staged.name[: -len("tmp")] + "old")
    with signals_deferred():
        os.rename(target, old)
        register(old, folder=True)
        try:
            os.rename(staged, target)
        except OSError:
            os.rename(old, target)
            forget(old)
            raise
        forget(staged)
    remove_temporary(old, folder=True)
    forget(old)


def _keep_mode(staged: Path, target: Path) -> None:
    """The new folder gets the permissions of the one it replaces (once it is written: they may
    not let us write)."""
    try:
        mode = stat.S_IMODE(os.stat(target).st_mode)
    except FileNotFoundError:
        return
    os.chmod(staged, mode)


@contextmanager
def replaced_folder(
    folder: PathArg,
    *,
    marker: str,
    wait: bool = True,
    on_wait: Callable[[str], None] | None = None,
) -> Iterator[Path]:
    """A new empty folder to write ``folder``'s next content into; it replaces ``folder`` as a
    whole when the block succeeds (see the module docstring), and is removed when the block
    raises. ``folder``'s parents are created; through a symbolic link the folder it names is
    replaced. ``UsageError`` when ``folder`` is a file, or holds files but not ``marker``, or is
    locked and ``wait`` is False; ``OutputError`` naming ``folder`` when a step fails. A
    ``BuilderError`` from the block that names a file in the new folder names it in ``folder``."""
    target = Path(os.path.realpath(folder))
    if target.name in ("", ".", ".."):
        raise UsageError(f"{os.fspath(folder)}: cannot replace the root folder")
    make_dirs(target.parent)
    with exclusive_lock(
        lock_path(target), what=f"output folder {os.fspath(folder)}", wait=wait, on_wait=on_wait
    ):
        try:
            _recover(target)
            _check_replaceable(folder, target, marker)
            staged = temp_path(target)
            with signals_deferred():  # a signal right after the folder is made removes it
                os.mkdir(staged)
                register(staged, folder=True)
        except OSError as exc:
            raise cannot("write", folder, exc) from exc
        try:
            yield staged
            try:
                _keep_mode(staged, target)
                _swap(staged, target)
            except OSError as exc:
                raise cannot("write", folder, exc) from exc
        except BuilderError as exc:
            remove_temporary(staged, folder=True)
            forget(staged)
            # Name the files where the user will look for them, not in the removed folder.
            if exc.args and isinstance(exc.args[0], str):
                exc.args = (
                    exc.args[0].replace(os.fspath(staged), os.fspath(folder)),
                    *exc.args[1:],
                )
            raise
        except BaseException:
            remove_temporary(staged, folder=True)
            forget(staged)
            raise
