"""Which files a kernel tree has: its ``.metal`` entry files, its headers, and the glob rules
that select them (``--exclude``, ``aot-only``, ``--aot``/``--jit``).

A ``.metal`` file is an entry file unless it is a header in all but name (:func:`metal_headers`):
another ``.metal`` file includes it (llama.cpp's ``fa_common.metal``), or it says
``#pragma once`` and names no kernel (candle's ``utils.metal``). The Metal compiler would compile
such a file on its own into nothing, or into duplicates of the kernels of the files that include
it; the projects' own builds compile only the others.

Shared by discovery (``builder.kernels.discovery``, which re-exports these names) and the search
for run-time-only kernels (``builder.kernels.runtime_only``).
"""

from __future__ import annotations

import fnmatch
import functools
import itertools
import os
import re
from collections.abc import Iterable, Sequence
from pathlib import Path, PurePath

from builder.errors import UsageError
from builder.files.reading import read_source

__all__ = [
    "ENTRY_SUFFIX",
    "HEADER_SUFFIXES",
    "check_excludes",
    "entry_files",
    "metal_headers",
    "path_matches",
    "tree_headers",
    "unmatched_glob",
]

ENTRY_SUFFIX = ".metal"
HEADER_SUFFIXES = (".h", ".hh", ".hpp", ".hxx")

_METAL_INCLUDE = re.compile(rb'^[ \t]*#[ \t]*include[ \t]*"([^"\n]+\.metal)"', re.MULTILINE)
_PRAGMA_ONCE = re.compile(rb"^[ \t]*#[ \t]*pragma[ \t]+once\b", re.MULTILINE)
_KERNEL_WORD = re.compile(rb"\bkernel\b")


@functools.lru_cache(maxsize=256)
def _glob_regexes(pattern: str) -> tuple[re.Pattern[str], ...]:
    # "**/" may also stand for no folder at all (steel/**/x.metal matches steel/x.metal).
    pieces = pattern.split("**/")
    variants = {
        "".join(p + (sep or "") for p, sep in zip(pieces, (*choice, None)))
        for choice in itertools.product(("**/", ""), repeat=len(pieces) - 1)
    }
    return tuple(re.compile(fnmatch.translate(v)) for v in sorted(variants))


def path_matches(relative: str, patterns: Iterable[str]) -> bool:
    """Whether ``relative`` (``/`` separators) matches any glob: fnmatch rules, where ``*`` also
    crosses ``/`` and ``**/`` also matches no folder."""
    return any(rx.match(relative) for p in patterns for rx in _glob_regexes(p))


def unmatched_glob(patterns: Iterable[str], names: Sequence[str]) -> str | None:
    """The first of ``patterns`` that matches none of ``names`` (:func:`path_matches` rules), or
    None: a glob that selects nothing is a typo, and a silent one changes what is measured."""
    for pattern in patterns:
        if not any(path_matches(name, (pattern,)) for name in names):
            return pattern
    return None


def _count(number: int, what: str) -> str:
    return f"{number:,} {what}{'s' if number != 1 else ''}"


def check_excludes(
    root: Path,
    exclude: Sequence[str],
    entries: Sequence[str],
    origin: tuple[Path, Sequence[str]] | None = None,
) -> None:
    """UsageError naming an exclude glob that matches no entry file (``entries``: all of them)
    or header of the tree at ``root``: a typo that would silently measure what it meant to skip.
    Headers count because an exclude also keeps a header from the run-time-only search.
    ``origin``: the settings file and the globs it gave (the others came from ``--exclude``)."""
    if unmatched_glob(exclude, entries) is None:
        return
    headers = tree_headers(root)
    glob = unmatched_glob(exclude, [*entries, *headers])
    if glob is None:
        return
    key = f"{origin[0]}: [kernels] exclude" if origin and glob in origin[1] else "--exclude"
    raise UsageError(
        f"{key} {glob!r} matches no entry file or header of {root} "
        f"({_count(len(entries), 'entry file')}, {_count(len(headers), 'header')})"
    )


def _walk(source_dir: Path, suffixes: tuple[str, ...]) -> list[str]:
    """Files under ``source_dir`` ending in ``suffixes``, as sorted relative paths (``/``);
    hidden files and folders are skipped, symlinked folders are not followed."""
    found = []
    for folder, dirs, files in os.walk(source_dir):
        dirs[:] = sorted(d for d in dirs if not d.startswith("."))
        base = PurePath(os.path.relpath(folder, source_dir))
        for name in files:
            if name.endswith(suffixes) and not name.startswith("."):
                found.append((base / name).as_posix() if str(base) != "." else name)
    found.sort()
    return found


def metal_headers(source_dir: Path) -> dict[str, str]:
    """The ``.metal`` files under ``source_dir`` that are headers -> why, in tree order:
    ``included by F`` (a quoted include from another ``.metal`` file F, resolved against F's
    folder, then the tree's root) or ``#pragma once, no kernel`` (the word ``kernel`` nowhere
    in the text, comments included: a file that mentions it stays an entry file, the safe side,
    since discovery then finds what it really defines).

    One run asks several times (discovery, the run-time-only search, the cache key, the
    listing); the texts are read again only when a file's size or time changed."""
    metal = _walk(source_dir, (ENTRY_SUFFIX,))
    stamps = []
    for name in metal:
        try:
            info = os.stat(source_dir / name)
            stamps.append((name, info.st_size, info.st_mtime_ns))
        except OSError:
            stamps.append((name, -1, -1))  # read_source says what is wrong
    return dict(_metal_headers(str(source_dir), tuple(stamps)))


@functools.lru_cache(maxsize=16)
def _metal_headers(
    source_dir: str, stamps: tuple[tuple[str, int, int], ...]
) -> tuple[tuple[str, str], ...]:
    root = Path(source_dir)
    metal = [name for name, _, _ in stamps]
    known = set(metal)
    why: dict[str, str] = {}
    for name in metal:
        text = read_source(root / name)
        if _PRAGMA_ONCE.search(text) and not _KERNEL_WORD.search(text):
            why.setdefault(name, "#pragma once, no kernel")
        folder = PurePath(name).parent
        for found in _METAL_INCLUDE.finditer(text):
            included = found.group(1).decode("utf-8", "surrogateescape")
            for candidate in (os.path.normpath(folder / included), os.path.normpath(included)):
                candidate = PurePath(candidate).as_posix()
                if candidate in known and candidate != name:
                    why.setdefault(candidate, f"included by {name}")
                    break
    return tuple((name, why[name]) for name in metal if name in why)


def entry_files(source_dir: Path, exclude: Sequence[str] = ()) -> list[str]:
    """Every ``*.metal`` under ``source_dir`` that is not a header (:func:`metal_headers`) nor
    matched by ``exclude``, as sorted relative paths; hidden folders are skipped, symlinked
    folders are not followed."""
    headers = metal_headers(source_dir)
    return [
        f
        for f in _walk(source_dir, (ENTRY_SUFFIX,))
        if f not in headers and not path_matches(f, exclude)
    ]


def tree_headers(root: Path) -> list[str]:
    """Every header under ``root`` (:data:`HEADER_SUFFIXES`, and the ``.metal`` files that are
    headers), as sorted relative paths."""
    return sorted([*_walk(root, HEADER_SUFFIXES), *metal_headers(root)])
