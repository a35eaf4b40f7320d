"""The one way the tool reads a file that a user, a tree or a build names.

Every such file may come from a pull request (docs/security.md): a settings file that is a FIFO
would hang the job in ``open``, one that is a link to ``/dev/zero`` would grow until the kernel
kills it. So each read goes through :func:`open_regular`, which opens without blocking
(``O_NONBLOCK``: a FIFO with no writer opens at once) and then refuses, from the open file's own
``fstat``, anything that is not a regular file; and whole-file reads stop one byte past their
bound (``builder.files.bounds``), so a file that is too large costs at most that bound.

Every refusal is an :class:`UnreadableFile` (a UsageError: exit 2) whose one line names the file,
what it was read as, and why.

TOML settings parsed within bounds: a budget file, a pyproject.toml, a tree's metallib.toml.

These files may come from a pull request (docs/security.md). ``tomllib`` raises more than its
``TOMLDecodeError``: an integer of more than Python's 4,300 digits is a ``ValueError`` from
``int()``, and arrays or inline tables nested some hundreds deep a ``RecursionError``. Both
would end the run in a traceback with exit 1, which ``budget`` uses for "over budget". Here
each is one ``UsageError`` (exit 2) naming the file, the line and the key written there.
How the bytes are read (regular files only, a size bound) is the caller's; this is the text.
"""

from __future__ import annotations

import os
import re
import stat
import sys
from typing import Any, BinaryIO

from builder.errors import UsageError
from builder.files.bounds import MAX_JSON, MAX_SOURCE, MAX_TEXT, Bound, parse_json

__all__ = [
    "UnreadableFile",
    "check_regular",
    "file_kind",
    "open_regular",
    "parse_toml",
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


_LONG_NUMBER = re.compile(r"[0-9][0-9_]{4300,}")
_KEY = re.compile(r"\s*([A-Za-z0-9_.\-\"' ]+?)\s*=")
_DEEP = 64
"""Nesting depth past which a line is named as the too-deep one (tomllib stops near 490)."""


def parse_toml(data: bytes, path: object, error: type[UsageError] = UsageError) -> dict[str, Any]:
    """The TOML document in ``data`` (the bytes of ``path``), or ``error`` (a UsageError
    subclass) with one line naming ``path`` and what is wrong where."""
    if sys.version_info >= (3, 11):  # imported here: most runs read no TOML at all
        import tomllib
    else:  # pragma: no cover - Python 3.10
        import tomli as tomllib
    try:
        text = data.decode("utf-8")
    except UnicodeDecodeError as exc:
        raise error(f"{path}: not UTF-8 text (byte {exc.start})") from None
    try:
        return tomllib.loads(text)
    except tomllib.TOMLDecodeError as exc:
        raise error(f"{path}: invalid TOML: {exc}") from None
    except RecursionError:
        where = _place(text, _deep_position(text))
        raise error(f"{path}: {where}arrays or tables nested too deeply") from None
    except ValueError as exc:  # int() past Python's digit limit: tomllib does not catch it
        if "integer string conversion" not in str(exc):
            raise error(f"{path}: invalid TOML: {exc}") from None
        found = _LONG_NUMBER.search(text)
        where = _place(text, found.start() if found else None)
        raise error(f"{path}: {where}a number has more than 4,300 digits") from None


def _place(text: str, position: int | None) -> str:
    """``line N, key 'k': `` for ``position`` in ``text`` (the key written at the start of that
    line, when one is), or nothing when the position is unknown."""
    if position is None:
        return ""
    start = text.rfind("\n", 0, position) + 1
    line = text.count("\n", 0, position) + 1
    key = _KEY.match(text, start, position + 1)
    named = f", key {key.group(1).strip()!r}" if key else ""
    return f"line {line}{named}: "


def _deep_position(text: str) -> int | None:
    """Where ``text`` first opens its ``_DEEP``-th nested bracket or brace, skipping strings
    and comments well enough to name the line (only called once tomllib has refused it)."""
    depth, at, quote = 0, 0, ""
    while at < len(text):
        char = text[at]
        if quote:
            if char == "\\" and quote == '"':
                at += 1
            elif char == quote or char == "\n" and quote == "#":
                quote = ""
        elif char in "\"'#":
            quote = char
        elif char in "[{":
            depth += 1
            if depth >= _DEEP:
                return at
        elif char in "]}":
            depth = max(depth - 1, 0)
        at += 1
    return None
