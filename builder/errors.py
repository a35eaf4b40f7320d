"""Errors the CLI turns into one line of text and an exit code.

Library code raises these (the container's own: ``MetallibError`` and what derives from it); only
``builder.cli`` decides how they are shown. Exit codes: 1 means a check ran and failed, 2 means
the input or the usage was bad.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence

__all__ = [
    "BinaryFormatError",
    "BuilderError",
    "CheckFailed",
    "InternalError",
    "MetallibError",
    "MetallibFormatError",
    "MetallibUnsupportedError",
    "OutputError",
    "TruncatedBinaryError",
    "UsageError",
    "closest_hint",
    "step_exit",
]


class BuilderError(Exception):
    """Root of the tool's own errors; ``exit_code`` is what the CLI exits with.

    The message is one line. ``detail`` is the output of another tool that the error quotes
    (Ninja's failing command and its output, CMake's log): the CLI prints it below the message
    line by line, each line escaped on its own, so a compiler's diagnostics read as they were
    written while a newline in a name within the message still cannot start a line of its own.
    ``str()`` gives both, the message first."""

    exit_code = 2

    def __init__(self, message: str = "", *, detail: str = "") -> None:
        super().__init__(message)
        self.detail = detail

    @property
    def message(self) -> str:
        """The one line, without the detail."""
        return super().__str__()

    def __str__(self) -> str:
        return f"{self.message}\n{self.detail}" if self.detail else self.message


class UsageError(BuilderError):
    """The user asked for something that cannot be done (bad selection, missing file...)."""


class CheckFailed(BuilderError):
    """A check ran to completion and its verdict is negative (hash mismatch, size gate)."""

    exit_code = 1


class OutputError(BuilderError):
    """An output could not be written (missing folder, read-only file system, disk full...).

    The message names the path and the operating system's reason; nothing partial is left behind.
    """


def closest_hint(word: str, known: Sequence[str], *, list_known: bool = True) -> str:
    """What an unknown-word message ends with: ``; did you mean 'x'?`` for the known word
    closest to ``word``, else `` (known: a, b)`` (nothing without ``list_known``)."""
    import difflib

    close = difflib.get_close_matches(word, list(known), n=1)
    if close:
        return f"; did you mean {close[0]!r}?"
    return f" (known: {', '.join(known)})" if list_known else ""


class MetallibError(Exception):
    """Root of the format library's errors. ``exit_code`` 2: the input is unusable."""

    exit_code = 2


class MetallibFormatError(MetallibError):
    """The bytes do not form a valid metallib; ``offset`` is where the problem was found."""

    def __init__(self, offset: int, message: str, path: str | None = None) -> None:
        self.offset = offset
        self.message = message
        self.path = path
        super().__init__(self._text())

    def _text(self) -> str:
        where = f"{self.path}: " if self.path else ""
        return f"{where}byte offset {self.offset} (0x{self.offset:x}): {self.message}"

    def with_path(self, path: str) -> MetallibFormatError:
        """The same error, naming the file it came from."""
        return MetallibFormatError(self.offset, self.message, path)


class BinaryFormatError(MetallibFormatError):
    """A Mach-O or ELF file whose layout cannot be trusted: a header, table, segment or section
    that lies outside its slice, or load commands that do not parse. What such a file holds
    cannot be told (a cut may have taken a library with it), so it is refused, not searched."""


class TruncatedBinaryError(BinaryFormatError):
    """A Mach-O or ELF file whose headers point past its end: the file was cut short (``offset``
    is where the named section or table would end)."""


class MetallibUnsupportedError(MetallibError):
    """A valid metallib that uses a feature this tool cannot rewrite (e.g. embedded sources)."""


class InternalError(MetallibError):
    """An invariant of this tool's own code broke: a bug here, not a problem with the input.

    Raised instead of ``assert`` (which escapes as a traceback, or is skipped under ``-O``), so
    the user gets one line that says so and names the file and byte offset to put in a report.
    """

    def __init__(self, message: str, *, path: str | None = None, offset: int = 0) -> None:
        self.message = message
        self.path = path
        self.offset = offset
        where = f"{path}: " if path else ""
        super().__init__(
            f"{where}byte offset {offset} (0x{offset:x}): internal error, a bug in "
            f"metallib-builder (please report it with this line): {message}"
        )


def step_exit(step: Callable[[], object], *also: type[Exception]) -> int:
    """Run ``step``, a build step CMake runs as ``python -m``, for its exit code: 0, or 2 with one
    ``error:`` line on stderr when its input is unusable (a BuilderError, or one of ``also``).
    CMake shows the line as it is and stops the build; a traceback would bury it."""
    import sys

    caught: tuple[type[Exception], ...] = (BuilderError, *also)
    try:
        step()
    except caught as exc:
        print(f"error: {exc}", file=sys.stderr)
        return 2
    return 0
