r"""Writing outputs safely: the project's one way to write a file, and the check that no output
is one of the command's inputs.

Every output file (slim's metallib, ``report -o``, ``embed -o``, generated sources, the build
manifest, ``variants.json``) goes through :func:`atomic_write`:

- the content goes to a temporary file beside the target (``.NAME.<hex>.tmp``,
  ``builder.files.temporaries``: locked while it is written, removed on SIGTERM and SIGHUP, and by
  the
  next write of the same target when a run was killed), renamed over it only when the caller's
  block finishes without error: readers see the old file or the new one, never a partial one,
  and on any failure the temporary file is removed;
- a failed write (missing folder, read-only file system, full disk) raises ``OutputError``: one
  line naming the path and the system's reason (exit 2), not an OSError traceback;
- permissions are those ``open(path, "w")`` would give: a new file gets 0666 & ~umask, a replaced
  file keeps its mode (and its owner where we may set it); a symlink is written through, so its
  target is replaced and the link stays a link;
- an existing target that is not a regular file (``/dev/null``, a FIFO) cannot be replaced by a
  rename without destroying it, so it is written directly.

:func:`check_not_an_input` is the one check that no command writes over what it reads
(``report X -o X``, ``compare A B -o B``, ``slim IN -o IN``, ``variants --from L -o`` a folder
holding L). A whole output folder is replaced by ``builder.files.output_folder``; one run at a time
writes a build or output folder (``builder.files.temporaries``).

:func:`write_if_changed` serves generators that run on every configure or build step: rewriting
an identical file would bump its mtime and make Ninja rebuild everything downstream.

Standard library only (``builder.errors`` is plain Python too): CMake runs the generators that
import this inside scikit-build-core's isolated environment.

Make-syntax depfiles for generated sources: which files an output was made from.

Ninja (``deps = gcc``), CMake's ``add_custom_command(DEPFILE)`` and GNU Make all read the format
GCC writes with ``-MD``: one rule ``target: prerequisite...``, continued with ``\``-newline.
Paths are escaped the way GCC escapes them, which is what those readers undo:

- a space or tab becomes ``\ `` (backslashes right before it are doubled, so they stay literal);
- ``#`` becomes ``\#`` (Make would start a comment);
- ``$`` becomes ``$$`` (Make would expand a variable; Ninja and CMake read ``$$`` as ``$``).

A newline cannot be written in a rule at all, so a path holding one is refused. A path's bytes
that are not UTF-8 are written as they are (the file names the same file for Make and Ninja). The
depfile is written atomically and only when its bytes change, like the output it describes: a build
tool that compares timestamps (Ninja's ``restat``) then sees no change after a regeneration that
changed nothing.
"""

from __future__ import annotations

import errno
import os
import re
import stat
import sys
import tempfile
from collections.abc import Iterable, Iterator
from contextlib import contextmanager, suppress
from pathlib import Path
from typing import BinaryIO

from builder.errors import OutputError, UsageError
from builder.files.reading import PathArg, open_regular, read_text
from builder.files.temporaries import create_temp_file, forget, remove_temporary

__all__ = [
    "atomic_write",
    "cannot",
    "check_can_write",
    "check_not_an_input",
    "depfile_text",
    "escape_make_path",
    "make_dirs",
    "own_modules",
    "write_atomic",
    "write_depfile",
    "write_if_changed",
]


def cannot(verb: str, path: PathArg, exc: OSError) -> OutputError:
    """The one-line error; callers raise it ``from exc`` so that --debug shows the OSError."""
    return OutputError(f"cannot {verb} {os.fspath(path)}: {exc.strerror or exc}")


def check_can_write(path: PathArg) -> None:
    """OutputError (the one line ``write_atomic`` would give) when a file cannot be created
    beside ``path``: a missing folder, a file in the way, a read-only file system. A probe,
    made and removed at once, so that a command writing several files finds out before it
    measures anything and writes none of them (a disk that fills later can still stop it)."""
    folder = os.path.dirname(os.path.abspath(path))
    try:
        with tempfile.TemporaryFile(dir=folder):
            pass
    except OSError as exc:
        raise cannot("write", path, exc) from exc


def _mkdirs(folder: Path) -> None:
    """``mkdir -p``; a file in the way is ENOTDIR, as for any path through a file."""
    try:
        folder.mkdir(parents=True, exist_ok=True)
    except FileExistsError as exc:
        raise NotADirectoryError(errno.ENOTDIR, os.strerror(errno.ENOTDIR), str(folder)) from exc


def make_dirs(path: PathArg) -> Path:
    """Create folder ``path`` and its parents unless it exists; ``OutputError`` if that fails."""
    folder = Path(path)
    try:
        _mkdirs(folder)
    except OSError as exc:
        raise cannot("create folder", folder, exc) from exc
    return folder


def _umask() -> int:
    """The process umask, read without changing it where Linux shows it (setting it, even for a
    moment, races other threads that create files)."""
    try:
        for line in read_text("/proc/self/status", "the process status").splitlines():
            if line.startswith("Umask:"):
                return int(line.split()[1], 8)
    except (UsageError, ValueError):
        pass
    mask = os.umask(0o022)
    os.umask(mask)
    return mask


@contextmanager
def atomic_write(path: PathArg) -> Iterator[BinaryIO]:
    """A binary file to write ``path``'s new content to; it replaces ``path`` only if the block
    succeeds. Raise in the block (a failed check) and ``path`` is left as it was.

    OSError inside the block or while creating, closing or renaming the file becomes
    ``OutputError`` naming ``path``, so the block should only write (its inputs read beforehand).
    """
    try:
        existing: os.stat_result | None = os.stat(path)  # follows links, /dev/stdout's too
    except OSError:
        existing = None  # missing, or unreachable: creating the temporary file says why
    if existing is not None and stat.S_ISDIR(existing.st_mode):
        raise cannot("write", path, IsADirectoryError(errno.EISDIR, os.strerror(errno.EISDIR)))
    if existing is not None and not stat.S_ISREG(existing.st_mode):
        with _direct(path) as handle:
            yield handle
        return
    target = Path(os.path.realpath(path))  # through symlinks: the link stays a link
    mode = stat.S_IMODE(existing.st_mode) if existing is not None else 0o666 & ~_umask()
    try:
        fd, tmp = create_temp_file(target)
    except OSError as exc:
        raise cannot("write", path, exc) from exc
    try:
        lock = os.dup(fd)  # holds the temporary file's lock until it is renamed or removed
    except OSError as exc:
        os.close(fd)
        remove_temporary(tmp)
        forget(tmp)
        raise cannot("write", path, exc) from exc
    try:
        with os.fdopen(fd, "wb") as handle:
            yield handle
            handle.flush()
            if existing is not None:
                _keep_owner(fd, existing)
            os.fchmod(fd, mode)  # created 0600
        os.replace(tmp, target)
    except OSError as exc:
        remove_temporary(tmp)
        raise cannot("write", path, exc) from exc
    except BaseException:
        remove_temporary(tmp)
        raise
    finally:
        forget(tmp)
        os.close(lock)


@contextmanager
def _direct(path: PathArg) -> Iterator[BinaryIO]:
    """Write a device or FIFO in place: renaming a file over it would destroy it."""
    try:
        handle = open(path, "wb")  # noqa: SIM115 - closed below, errors mapped
    except OSError as exc:
        raise cannot("write", path, exc) from exc
    try:
        with handle:
            yield handle
    except OSError as exc:
        raise cannot("write", path, exc) from exc


def _keep_owner(fd: int, existing: os.stat_result) -> None:
    """Give the new file the replaced file's owner and group, where we may (root, or a group we
    belong to); otherwise it is ours, as after any editor's save. Before the chmod: a chown
    clears set-id bits."""
    now = os.fstat(fd)
    if (now.st_uid, now.st_gid) == (existing.st_uid, existing.st_gid):
        return
    with suppress(OSError):
        os.fchown(fd, existing.st_uid, existing.st_gid)


def write_atomic(path: PathArg, data: bytes | str) -> None:
    """Replace ``path`` with ``data`` (str as UTF-8) through :func:`atomic_write`."""
    raw = data.encode("utf-8") if isinstance(data, str) else data
    with atomic_write(path) as handle:
        handle.write(raw)


def write_if_changed(path: PathArg, data: bytes | str) -> bool:
    """Write ``data`` to ``path`` (creating its folder) unless it already holds exactly that;
    True when written. Atomic, and ``OutputError`` on failure, as :func:`atomic_write`."""
    raw = data.encode("utf-8") if isinstance(data, str) else data
    try:  # (a FIFO is not read: that would wait for a writer; nor more than raw's length)
        with open_regular(path, "the output") as handle:
            if handle.read(len(raw) + 1) == raw:
                return False
    except (UsageError, OSError):
        pass
    try:
        _mkdirs(Path(os.path.realpath(path)).parent)
    except OSError as exc:
        raise cannot("write", path, exc) from exc
    write_atomic(path, raw)
    return True


# -- never over an input ------------------------------------------------------------------------
# Paths are compared as the file system sees them: the same resolved path (through symbolic
# links and "..") or the same file (device and inode: a hard link, a bind mount).


def _identity(path: PathArg) -> tuple[int, int] | None:
    try:
        info = os.stat(path)
    except (OSError, ValueError):
        return None
    return info.st_dev, info.st_ino


def _is_at(path: PathArg, output: PathArg, output_id: tuple[int, int] | None) -> bool:
    """True when ``path`` is ``output``: by resolved path or by device and inode."""
    if os.path.realpath(path) == os.path.realpath(output):
        return True
    return output_id is not None and _identity(path) == output_id


def check_not_an_input(
    output: PathArg,
    inputs: Iterable[PathArg | None],
    *,
    replaces_folder: bool = False,
    hint: str = "",
) -> None:
    """``UsageError`` (exit 2, one line naming both) when writing ``output`` would write over
    one of ``inputs`` (paths the command reads; None and missing ones are skipped). With
    ``replaces_folder``, ``output`` is a folder replaced as a whole, so an input anywhere inside
    it counts too. ``hint`` is appended to the message (``slim``: how to do it on purpose)."""
    output_id = _identity(output)
    for given in inputs:
        if given is None or _identity(given) is None:
            continue
        if _is_at(given, output, output_id):
            same = os.fspath(given) == os.fspath(output)
            named = "" if same else f" {os.fspath(given)}"
            raise UsageError(f"{os.fspath(output)}: refusing to write over the input{named}{hint}")
        if replaces_folder:
            for parent in Path(os.path.realpath(given)).parents:
                if _is_at(parent, output, output_id):
                    raise UsageError(
                        f"{os.fspath(output)}: refusing to write over the input "
                        f"{os.fspath(given)}: it is inside this folder, which is replaced as a "
                        f"whole{hint}"
                    )


_BLANK = re.compile(r"(\\*)([ \t])")


def escape_make_path(path: str | os.PathLike[str]) -> str:
    """``path`` as one word of a Make rule (GCC's ``-MD`` escaping)."""
    text = os.fspath(path)
    if "\n" in text or "\r" in text:
        raise UsageError(f"cannot name {text!r} in a depfile: it holds a line break")
    text = _BLANK.sub(lambda m: m.group(1) * 2 + "\\" + m.group(2), text)
    return text.replace("#", "\\#").replace("$", "$$")


def depfile_text(
    target: str | os.PathLike[str], prerequisites: Iterable[str | os.PathLike[str]]
) -> str:
    """One rule: ``target`` depends on ``prerequisites`` (in order, each once)."""
    unique = dict.fromkeys(os.fspath(p) for p in prerequisites)
    words = [escape_make_path(p) for p in unique]
    return f"{escape_make_path(target)}:" + "".join(f" \\\n  {w}" for w in words) + "\n"


def write_depfile(
    path: str | os.PathLike[str],
    target: str | os.PathLike[str],
    prerequisites: Iterable[str | os.PathLike[str]],
) -> bool:
    """Write the depfile at ``path`` (atomically, only on change); True when it was written."""
    text = depfile_text(target, prerequisites)
    return write_if_changed(path, text.encode("utf-8", "surrogateescape"))


def own_modules() -> list[Path]:
    """The files of this package's modules loaded in this process, sorted: what a generator or
    the planner ran, so what its output depends on besides its inputs. Read from the process,
    never a hand-kept list, so a module that shapes the output cannot be left out of it."""
    package = Path(__file__).resolve().parents[1]
    found = set()
    for module in list(sys.modules.values()):
        path = getattr(module, "__file__", None)
        if path and path.endswith(".py") and Path(path).resolve().is_relative_to(package):
            found.add(Path(path).resolve())
    return sorted(found)
