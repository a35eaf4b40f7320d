"""Which folder, given with ``-I``, would resolve a quoted include that discovery could not find.

An MLX-style tree includes its headers by a path from a root above it
(``#include "mlx/backend/metal/kernels/utils.h"`` from ``mlx/backend/metal/kernels``): the
preprocessor's "No such file or directory" does not say that ``-I`` of that root is missing.

The hint only ever points at files the build may read: inside the tree or inside a folder
already given with ``-I``. A header that merely sits next to the tree (another project's, in a
sibling folder) is never proposed. The search is bounded and reads folder listings only: first
every folder above the tree (one ``stat`` each), kept only when the path found leads back into
the tree or a given folder (the include root of an MLX checkout); then the sub-folders of the
tree and of the given folders, breadth first, at most ``MAX_FOLDERS`` folders, hidden folders and
symlinked ones not entered.
"""

from __future__ import annotations

import os
import re
from collections import deque
from collections.abc import Sequence
from pathlib import Path, PurePosixPath

__all__ = ["MAX_FOLDERS", "missing_include", "resolving_folder", "with_hint"]

MAX_FOLDERS = 2000
"""At most this many folders are listed in one search: a hint must not cost a slow disk scan."""

_MISSING = (
    re.compile(r"fatal error: (?P<path>[^:\n]+): No such file or directory"),  # GCC
    re.compile(r"fatal error: '(?P<path>[^'\n]+)' file not found"),  # Clang
)


def missing_include(message: str) -> str | None:
    """The include path a preprocessor diagnostic says it could not find, or None (not a
    missing include, or a path that leaves its folder: absolute or with ``..``)."""
    for pattern in _MISSING:
        found = pattern.search(message)
        if found:
            path = PurePosixPath(found["path"].strip())
            if path.is_absolute() or ".." in path.parts or not path.parts:
                return None
            return path.as_posix()
    return None


def resolving_folder(
    source_dir: Path, include: str, include_dirs: Sequence[Path] = ()
) -> Path | None:
    """The nearest folder ``D`` in which ``D/include`` is a file inside the tree or one of
    ``include_dirs``, or None when the bounded search finds none. The folders already searched
    by the preprocessor (the tree's root, ``include_dirs``) are never the answer."""
    tree = Path(os.path.abspath(source_dir))
    allowed = [tree, *(Path(os.path.abspath(d)) for d in include_dirs)]
    for above in tree.parents:
        found = above / include
        if found.is_file() and any(found.is_relative_to(root) for root in allowed):
            return above
    queue: deque[Path] = deque(allowed)
    seen: set[Path] = set()
    while queue and len(seen) < MAX_FOLDERS:
        folder = queue.popleft()
        if folder in seen:
            continue
        seen.add(folder)
        if folder not in allowed and (folder / include).is_file():
            return folder
        queue.extend(_subfolders(folder))
    return None


def _subfolders(folder: Path) -> list[Path]:
    try:
        with os.scandir(folder) as entries:
            return sorted(
                Path(entry.path)
                for entry in entries
                if not entry.name.startswith(".") and entry.is_dir(follow_symlinks=False)
            )
    except OSError:  # unreadable: nothing to suggest from there
        return []


def with_hint(message: str, source_dir: Path, include_dirs: Sequence[Path] = ()) -> str:
    """``message`` with ``; did you mean -I DIR?`` when it reports a missing quoted include and
    the search finds the folder that holds it (DIR relative to the working folder when under
    it, as the user would type it)."""
    include = missing_include(message)
    if include is None:
        return message
    folder = resolving_folder(source_dir, include, include_dirs)
    if folder is None:
        return message
    shown = os.path.relpath(folder)
    if shown.startswith(".."):
        shown = str(folder)
    return f"{message}; did you mean -I {shown}?"
