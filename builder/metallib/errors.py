"""Errors raised by the metallib format library."""

from __future__ import annotations

__all__ = [
    "BinaryFormatError",
    "InternalError",
    "MetallibError",
    "MetallibFormatError",
    "MetallibUnsupportedError",
    "TruncatedBinaryError",
]


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
