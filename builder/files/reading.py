"""The one way the tool reads a file that a user, a tree or a build names.

Every such file may come from a pull request (docs/security.md): a settings file that is a FIFO
would hang the job in ``open``, one that is a link to ``/dev/zero`` would grow until the kernel
kills it. So each read goes through :func:`open_regular`, which opens without blocking
(``O_NONBLOCK``: a FIFO with no writer opens at once) and then refuses, from the open file's own
``fstat``, anything that is not a regular file; and whole-file reads stop one byte past their
bound (``builder.files.bounds``), so a file that is too large costs at most that bound.

Every refusal is an :class:`UnreadableFile` (a UsageError: exit 2) whose one line names the file,
what it was read as, and why.
"""

from __future__ import annotations

import os
import stat
from typing import Any, BinaryIO

from builder.errors import UsageError
from builder.files.bounds import MAX_JSON, MAX_SOURCE, MAX_TEXT, Bound, parse_json

__all__ = [
    "UnreadableFile",
    "check_regular",
    "file_kind",
    "open_regular",
    "read_bytes",
    "read_json",
    "read_source",
    "read_text",
]

PathArg = str | os.PathLike[str]


class UnreadableFile(UsageError):
    """A file the tool was told to read cannot be read: missing, not a regular file, too large,
    or not the text it should be."""

    def __init__(self, path: PathArg, what: str, why: str) -> None:
        self.path, self.what, self.why = os.fspath(path), what, why
        super().__init__(f"{self.path}: cannot read {what}: {why}")


def file_kind(mode: int) -> str:
    """What a non-regular file is, for a message: ``a FIFO``, ``a device``, ``a folder``..."""
    if stat.S_ISFIFO(mode):
        return "a FIFO"
    if stat.S_ISCHR(mode) or stat.S_ISBLK(mode):
        return "a device"
    if stat.S_ISSOCK(mode):
        return "a socket"
    if stat.S_ISDIR(mode):
        return "a folder"
    return "not a file"


def _refuse_unless_regular(mode: int, path: PathArg, what: str) -> None:
    if not stat.S_ISREG(mode):
        raise UnreadableFile(path, what, f"not a regular file ({file_kind(mode)})")


def check_regular(path: PathArg, what: str) -> None:
    """UnreadableFile unless ``path`` (symbolic links followed) is a regular file: for a path
    handed on to another program or library, which would block on a FIFO or read a device
    without end. (A file this process reads itself is opened with :func:`open_regular`.)"""
    try:
        mode = os.stat(path).st_mode
    except OSError as exc:
        raise UnreadableFile(path, what, exc.strerror or str(exc)) from None
    _refuse_unless_regular(mode, path, what)


def open_regular(path: PathArg, what: str) -> BinaryIO:
    """``path`` open for binary reading, when it is a regular file (symbolic links followed);
    else UnreadableFile naming it, ``what`` it was to be read as, and what it is. Opening never
    blocks: a FIFO is refused before anything waits for a writer."""
    try:
        fd = os.open(path, os.O_RDONLY | os.O_NONBLOCK | os.O_CLOEXEC)
    except OSError as exc:
        raise UnreadableFile(path, what, exc.strerror or str(exc)) from None
    try:
        _refuse_unless_regular(os.fstat(fd).st_mode, path, what)
        os.set_blocking(fd, True)  # (no effect on a regular file; restores ordinary reads)
        return os.fdopen(fd, "rb")
    except BaseException:
        os.close(fd)
        raise


def read_bytes(path: PathArg, what: str, bound: Bound = MAX_TEXT) -> bytes:
    """The whole of the regular file ``path``, at most ``bound`` bytes (one byte more is read to
    tell a file of exactly the bound from a larger one); UnreadableFile otherwise."""
    limit = bound.value()
    with open_regular(path, what) as handle:
        try:
            data = handle.read(limit + 1)
        except OSError as exc:
            raise UnreadableFile(path, what, exc.strerror or str(exc)) from None
    if len(data) > limit:
        raise UnreadableFile(path, what, bound.exceeded(limit))
    return data


def read_text(path: PathArg, what: str, bound: Bound = MAX_TEXT) -> str:
    """:func:`read_bytes` decoded as UTF-8; text that is not UTF-8 is refused at its byte
    offset."""
    data = read_bytes(path, what, bound)
    try:
        return data.decode("utf-8")
    except UnicodeDecodeError as exc:
        raise UnreadableFile(path, what, f"not UTF-8 text (byte {exc.start})") from None


def read_source(path: PathArg) -> bytes:
    """The bytes of one file of a kernel tree that the tool reads itself (headers it scans or
    inlines), at most ``MAX_SOURCE`` of them."""
    return read_bytes(path, "the source file", MAX_SOURCE)


def read_json(path: PathArg, what: str, bound: Bound = MAX_JSON) -> Any:
    """The JSON document in ``path`` (a saved report, a build manifest, an event), read within
    bounds: at most ``bound`` bytes, numbers of at most Python's 4,300 digits, nesting as deep as
    the parser's recursion allows. Anything else is one UnreadableFile line."""
    data = read_bytes(path, what, bound)
    try:
        return parse_json(data)
    except ValueError as exc:
        raise UnreadableFile(path, what, str(exc)) from None
