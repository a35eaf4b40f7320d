"""Choose functions to keep and write the slimmed library.

Selection is pure (names in, indices out) so it is easy to test; ``slim_file`` adds the I/O:
it never writes over its input unless asked, and writes through a temporary file and a rename.
"""

from __future__ import annotations

import fnmatch
import os
import re
from collections.abc import Iterable, Sequence
from pathlib import Path
from typing import NamedTuple

from builder.errors import UsageError
from builder.metallib import open_metallib, parts_from_library, write_library

__all__ = ["SlimResult", "read_keep_list", "select_functions", "slim_file"]


def read_keep_list(path: str | os.PathLike[str]) -> list[str]:
    """Patterns from a keep-list file: one name or glob per line; blank lines and ``#`` comments
    are ignored."""
    try:
        text = Path(path).read_text(encoding="utf-8")
    except OSError as exc:
        raise UsageError(f"{path}: cannot read keep list: {exc.strerror or exc}") from None
    patterns = [line.split("#", 1)[0].strip() for line in text.splitlines()]
    patterns = [p for p in patterns if p]
    if not patterns:
        raise UsageError(f"{path}: keep list names no functions")
    return patterns


def _matching(names: Sequence[str], pattern: str) -> set[int]:
    if not any(ch in pattern for ch in "*?["):
        return {i for i, name in enumerate(names) if name == pattern}
    if pattern.strip("*") == "":
        return set(range(len(names)))
    match = re.compile(fnmatch.translate(pattern)).match  # what fnmatchcase does, compiled once
    return {i for i, name in enumerate(names) if match(name)}


def select_functions(
    names: Sequence[str], keep: Iterable[str] = (), drop: Iterable[str] = ()
) -> list[int]:
    """Indices (ascending) of the functions to keep.

    ``keep`` patterns choose functions (all of them when there are none); ``drop`` patterns then
    remove functions. Every pattern must match at least one name, and something must remain:
    a typo in a pattern is an error, not a silently different library.
    """
    keep, drop = list(keep), list(drop)
    unmatched: list[str] = []
    chosen: set[int] = set()
    for pattern in keep:
        found = _matching(names, pattern)
        if not found:
            unmatched.append(pattern)
        chosen |= found
    if not keep:
        chosen = set(range(len(names)))
    for pattern in drop:
        found = _matching(names, pattern)
        if not found:
            unmatched.append(pattern)
        chosen -= found
    if unmatched:
        shown = ", ".join(repr(p) for p in unmatched[:5])
        more = f" and {len(unmatched) - 5} more" if len(unmatched) > 5 else ""
        raise UsageError(f"no function name matches {shown}{more}")
    if not chosen:
        raise UsageError("the selection keeps no function; a metallib needs at least one")
    return sorted(chosen)


class SlimResult(NamedTuple):
    """Counts and sizes before and after, all measured: the input file and the written output."""

    input: str
    output: str
    functions_before: int
    functions_after: int
    bytes_before: int
    bytes_after: int
    kept: tuple[str, ...]


def slim_file(
    source: str | os.PathLike[str],
    output: str | os.PathLike[str],
    *,
    keep: Iterable[str] = (),
    drop: Iterable[str] = (),
    in_place: bool = False,
) -> SlimResult:
    """Write the functions of ``source`` selected by ``keep``/``drop`` to ``output``."""
    same = Path(output).resolve() == Path(source).resolve()
    if same and not in_place:
        raise UsageError(f"{output}: refusing to write over the input; pass --in-place to do that")
    if Path(output).is_dir():
        raise UsageError(f"{output}: is a directory; give the output file name")
    with open_metallib(source) as lib:
        names = lib.columns().names
        indices = select_functions(names, keep, drop)
        expected = write_library(parts_from_library(lib, indices), output).file_size
        kept = tuple(names) if len(indices) == len(names) else tuple(map(names.__getitem__, indices))
        before = lib.file_size
    written = os.path.getsize(output)
    if written != expected:  # the writer's own layout and the file on disk must agree
        raise UsageError(f"{output}: wrote {written} bytes, layout says {expected}")
    return SlimResult(
        os.fspath(source), os.fspath(output), len(names), len(indices), before, written, kept
    )
