"""Where code is written: the file behind each offset of a preprocessed text.

Discovery preprocesses with line markers (``# 12 "mlx/.../fft.h" 2``: the lines that follow come
from that file) so that a kernel is attributed to the file its code is *written* in, not only to
the entry file that instantiates it: MLX's ``fft.metal`` emits ``generate_bluestein_twiddles``, a
non-template kernel written in ``fft.h``; ``arg_reduce.metal`` instantiates ``arg_reduce_general``,
a kernel template written in ``arg_reduce.metal`` itself. The build side needs the difference: a
kernel compiled at run time needs the file holding its definition among the embedded sources.

:func:`split_markers` removes the marker lines (the scanner sees the text it always saw) and keeps
a table from offsets to files; :func:`tree_path` names a file as the tree does (relative to its
root, ``/`` separators) or, outside the tree, by its absolute path.
"""

from __future__ import annotations

import bisect
import os
import re
from collections.abc import Iterator, Sequence
from pathlib import Path

__all__ = [
    "FileRuns",
    "LineStarts",
    "marker_file",
    "real_tree_path",
    "split_markers",
    "tree_path",
]


class LineStarts:
    """A regular expression matched where lines start, found quickly in a long text.

    ``re.MULTILINE``'s ``^`` makes the engine try the pattern at every character (110 ms for the
    2 MB that four of MLX's entry files preprocess to); a pattern that starts with a newline is
    searched for by that character (4 ms). :meth:`finditer` gives where each matching line
    starts and the match, made after the newline, so its groups and its end are the pattern's
    own."""

    def __init__(self, pattern: str, flags: int = 0) -> None:
        self._first = re.compile(pattern, flags)
        self._next = re.compile("\n" + pattern, flags)

    def finditer(self, text: str) -> Iterator[tuple[int, re.Match[str]]]:
        match = self._first.match(text)
        if match is not None:
            yield 0, match
        pos = 0
        while (match := self._next.search(text, pos)) is not None:
            pos = match.start() + 1  # the next line may start where this match ends
            yield pos, match


# GCC and clang: "# LINE "FILE" FLAGS..." at the start of a line; the name is a C string literal
# (backslash and quote escaped, a newline as \n, other bytes as octal escapes).
_MARKER = LineStarts(r'# \d+ "((?:[^"\\\n]|\\.)*)"[ \d]*\n?')


def marker_file(name: str) -> str:
    """A line marker's file name (the text between its quotes) with its escapes undone: GCC's
    ``n\\nl.metal`` is the file ``n<newline>l.metal``, not ``nnl.metal``."""
    if "\\" not in name:
        return name
    from builder.kernels.cxx_text import unescape  # its patterns: not for embed's LineStarts

    return unescape(name, utf8_bytes=True)


class FileRuns:
    """Runs of a text, each from one file: ``file_at(offset)`` names the file."""

    def __init__(self, starts: Sequence[int], files: Sequence[str]) -> None:
        self._starts = list(starts)
        self._files = list(files)

    def file_at(self, offset: int) -> str | None:
        """The file (as the marker names it) that ``offset`` of the clean text comes from."""
        at = bisect.bisect_right(self._starts, offset) - 1
        return self._files[at] if at >= 0 else None

    @property
    def files(self) -> set[str]:
        """Every file the text came from (as the markers name them)."""
        return set(self._files)


def split_markers(text: str) -> tuple[str, FileRuns]:
    """``text`` without its line-marker lines, and where each run of it comes from."""
    pieces: list[str] = []
    starts: list[int] = []
    files: list[str] = []
    last = length = 0
    for start, match in _MARKER.finditer(text):
        piece = text[last:start]
        pieces.append(piece)
        length += len(piece)
        starts.append(length)
        files.append(marker_file(match.group(1)))
        last = match.end()
    pieces.append(text[last:])
    return "".join(pieces), FileRuns(starts, files)


def tree_path(name: str, root: Path) -> str:
    """A file named by a line marker (relative to the preprocessor's working directory, ``root``,
    or absolute) as the tree names it: relative to ``root`` with ``/`` separators when inside it,
    else its absolute path."""
    return real_tree_path(os.path.realpath(os.path.join(root, name)), os.path.realpath(root))


def real_tree_path(real: str, real_root: str) -> str:
    """:func:`tree_path` of a real path, the tree's root given as its real path too (no
    symbolic link resolved again: each one costs a ``stat`` per folder of the path)."""
    relative = os.path.relpath(real, real_root)
    if relative == os.pardir or relative.startswith(os.pardir + os.sep):
        return Path(real).as_posix()
    return Path(relative).as_posix()
