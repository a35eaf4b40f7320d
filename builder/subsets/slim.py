"""Choose functions to keep and write the slimmed library.

Choosing is pure (names in, indices out) so it is easy to test; ``slim_file`` adds the I/O:
it never writes over its input unless asked (``builder.files.atomic.check_not_an_input``: the same
path or the same file), checks the input first (everything ``verify`` checks but the hashes: a
malformed input would give a malformed output), writes through a temporary file (removed on
failure, on SIGTERM and SIGHUP, and by the next run when a run was killed:
``builder.files.temporaries``), and renames it into place only after every check passed (the file's
size against the layout, each kept module's SHA-256 against its HASH tag), so a failed run
leaves an existing output as it was.
"""

from __future__ import annotations

import fnmatch
import os
import re
from collections.abc import Iterable, Sequence
from pathlib import Path
from typing import TYPE_CHECKING, NamedTuple

from builder.errors import UsageError
from builder.files.reading import read_text
from builder.metallib import open_metallib, parts_from_library

if TYPE_CHECKING:
    from builder.metallib import FunctionTable, Metallib, Span

__all__ = [
    "ChosenFunctions",
    "HashMismatch",
    "ModuleHashes",
    "SlimResult",
    "choose_functions",
    "describe_mismatches",
    "read_keep_list",
    "slim_file",
]


def read_keep_list(path: str | os.PathLike[str]) -> list[str]:
    """Patterns from a keep-list file: one name or glob per line; blank lines and ``#`` comments
    are ignored."""
    text = read_text(path, "keep list")
    patterns = [line.split("#", 1)[0].strip() for line in text.splitlines()]
    patterns = [p for p in patterns if p]
    if not patterns:
        raise UsageError(f"{path}: keep list names no functions")
    return patterns


class _Matcher:
    """Indices of the names matching a pattern; exact names by lookup (keep lists are mostly
    exact names, hundreds of them, against 15,000 functions)."""

    def __init__(self, names: Sequence[str]) -> None:
        self.names = names
        self._exact: dict[str, list[int]] | None = None

    def __call__(self, pattern: str) -> set[int]:
        names = self.names
        if not any(ch in pattern for ch in "*?["):
            if self._exact is None:
                self._exact = {}
                for i, name in enumerate(names):
                    self._exact.setdefault(name, []).append(i)
            return set(self._exact.get(pattern, ()))
        if pattern.strip("*") == "":
            return set(range(len(names)))
        match = re.compile(fnmatch.translate(pattern)).match  # what fnmatchcase does, compiled once
        return {i for i, name in enumerate(names) if match(name)}


def _listed(patterns: Sequence[str], limit: int = 5) -> str:
    shown = ", ".join(repr(p) for p in patterns[:limit])
    return shown + (f" and {len(patterns) - limit} more" if len(patterns) > limit else "")


class ChosenFunctions(NamedTuple):
    """What ``choose_functions`` picked: indices ascending, and the keep-list lines (first
    occurrences, in file order) that matched no function."""

    indices: list[int]
    unmatched_keep_list: list[str]


def choose_functions(
    names: Sequence[str],
    keep: Iterable[str] = (),
    drop: Iterable[str] = (),
    keep_list: Iterable[str] = (),
) -> ChosenFunctions:
    """The functions to keep: those matching ``keep`` or ``keep_list`` patterns (all of them when
    there are none), minus those matching ``drop``.

    A ``keep`` or ``drop`` pattern that matches nothing is an error (typed on a command line, it is
    a typo); a ``keep_list`` line that matches nothing is only reported back: keep lists are
    generated from an app's usage and outlive library versions. Something must remain.
    """
    keep, drop, keep_list = list(keep), list(drop), list(keep_list)
    matching = _Matcher(names)
    unmatched: list[str] = []
    chosen: set[int] = set()
    for pattern in keep:
        found = matching(pattern)
        if not found:
            unmatched.append(pattern)
        chosen |= found
    missing: dict[str, None] = {}
    for pattern in keep_list:
        found = matching(pattern)
        if not found:
            missing.setdefault(pattern)
        chosen |= found
    if not keep and not keep_list:
        chosen = set(range(len(names)))
    for pattern in drop:
        found = matching(pattern)
        if not found:
            unmatched.append(pattern)
        chosen -= found
    if unmatched:
        raise UsageError(f"no function name matches {_listed(unmatched)}")
    if not chosen:
        why = ""
        if keep_list and len(missing) == len(set(keep_list)):
            why = f" (no line of the keep list matches a function: {_listed(list(missing), 3)})"
        raise UsageError(f"the selection keeps no function; a metallib needs at least one{why}")
    return ChosenFunctions(sorted(chosen), list(missing))


class HashMismatch(NamedTuple):
    """A kept function whose module's SHA-256 differs from its HASH tag."""

    function: str
    offset: int
    """The module's byte offset in the input."""


class SlimResult(NamedTuple):
    """Counts and sizes before and after, all measured: the input file and the written output."""

    input: str
    output: str
    functions_before: int
    functions_after: int
    bytes_before: int
    bytes_after: int
    kept: tuple[str, ...]
    unmatched_keep_list: tuple[str, ...] = ()
    hash_mismatches: tuple[HashMismatch, ...] = ()
    """Copied although their hash is wrong (only with ``allow_hash_mismatch``)."""


class ModuleHashes:
    """The SHA-256 of the kept modules, computed while the output is written (``SpanHashes``:
    a thread hashes beside the copy, which runs in the kernel, and this one joins in after it),
    then compared with their HASH tags. ``close`` before the input's map is closed."""

    def __init__(self, table: FunctionTable, lib: Metallib) -> None:
        from builder.metallib.native import SpanHashes

        self._table = table
        data, offsets, fd = lib.file_spans(table.module_offsets)  # read at their place in the file
        self._hashes = SpanHashes(data, offsets, table.module_bytes, fd=fd)

    def close(self) -> None:
        self._hashes.cancel()

    def mismatches(self) -> list[HashMismatch]:
        digests, table = self._hashes.digests(), self._table
        if digests == table.hashes:
            return []
        return [
            HashMismatch(name, offset)
            for index, (name, offset) in enumerate(zip(table.names, table.module_offsets))
            if digests[32 * index : 32 * index + 32] != table.hash(index)
        ]


def describe_mismatches(bad: Sequence[HashMismatch], limit: int = 5) -> str:
    """``name (byte offset N), ...`` for messages."""
    shown = ", ".join(f"{m.function} (byte offset {m.offset})" for m in bad[:limit])
    return shown + (f" and {len(bad) - limit} more" if len(bad) > limit else "")


def _check_input(lib: Metallib, source: object, output: object, kept: set[str]) -> None:
    """UsageError (nothing written) when ``lib`` fails ``verify`` for a reason other than module
    hashes (checked while copying) in its container or in a kept function: a malformed chunk or
    name would be copied as it is, and the output would fail ``verify`` too. What the rewrite
    repairs does not count: stray bytes (left out) and problems of dropped functions."""
    from builder.metallib import verify

    problems = [
        p
        for p in verify(lib, hashes=False).problems
        if not p.stray_bytes and (p.function is None or p.function in kept)
    ]
    if problems:
        first = problems[0]
        what = f"function {first.function}: " if first.function is not None else ""
        more = f" (and {len(problems) - 1} more problem(s))" if len(problems) > 1 else ""
        raise UsageError(
            f"{source}: fails verify at byte offset {first.offset}: {what}{first.message}{more}; "
            f"{output} not written (metallib-builder verify {source} lists every problem)"
        )


def slim_file(
    source: str | os.PathLike[str],
    output: str | os.PathLike[str],
    *,
    keep: Iterable[str] = (),
    drop: Iterable[str] = (),
    keep_list: Iterable[str] = (),
    in_place: bool = False,
    allow_hash_mismatch: bool = False,
    window: Span | None = None,
) -> SlimResult:
    """Write the functions of ``source`` selected by ``keep``/``keep_list``/``drop`` to ``output``
    (``window``: the metallib's bytes when ``source`` is a binary holding it; the output is a
    standalone metallib).

    Each kept module is hashed (beside the copy) and compared with its HASH tag: a mismatch is an
    error naming the functions, and ``output`` is not touched, unless ``allow_hash_mismatch``
    (then they are copied and listed in the result). ``OutputError`` when ``output`` cannot be
    written.
    """
    from builder.files.atomic import check_not_an_input
    from builder.metallib.writer import atomic_output, check_written, write_to

    if not in_place:
        check_not_an_input(output, [source], hint="; pass --in-place to do that")
    if Path(output).is_dir():
        raise UsageError(f"{output}: is a directory; give the output file name")
    with open_metallib(source, window) as lib:
        names = lib.columns().names
        selection = choose_functions(names, keep, drop, keep_list)
        indices = selection.indices
        _check_input(lib, source, output, {names[i] for i in indices})
        with atomic_output(output) as out:  # first: an unwritable output fails before any work
            parts = parts_from_library(lib, indices)
            hashes = ModuleHashes(parts.functions, lib)  # first: it overlaps the writing
            try:
                lay = write_to(parts, out)
                check_written(out, lay, output)
                bad = hashes.mismatches()
            finally:
                hashes.close()  # never leave the thread reading a map about to close
            if bad and not allow_hash_mismatch:
                raise UsageError(
                    f"{source}: {len(bad)} kept function(s) have a module whose SHA-256 does not "
                    f"match its HASH tag: {describe_mismatches(bad)}; {output} not written "
                    "(--allow-hash-mismatch copies them anyway)"
                )
        kept = (
            tuple(names) if len(indices) == len(names) else tuple(map(names.__getitem__, indices))
        )
        before = lib.file_size
    shown = os.fspath(source)
    if window is not None:
        shown += f" (its metallib at byte {window.offset}, {window.size} bytes)"
    return SlimResult(
        shown,
        os.fspath(output),
        len(names),
        len(indices),
        before,
        lay.file_size,
        kept,
        tuple(selection.unmatched_keep_list),
        tuple(bad),
    )
