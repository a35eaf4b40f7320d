"""Which folder, given with ``-I``, would resolve a quoted include that discovery could not find.

An MLX-style tree includes its headers by a path from a root above it
(``#include "mlx/backend/metal/kernels/utils.h"`` from ``mlx/backend/metal/kernels``): the
preprocessor's "No such file or directory" does not say that ``-I`` of that root is missing. The
search is bounded and reads folder listings only: first every folder above the tree (one
``stat`` each: the include root of an MLX checkout is one of them), then the tree itself and up
to ``PARENT_LEVELS`` folders above it, breadth first, at most ``MAX_FOLDERS`` folders, hidden
folders and symlinked ones not entered.
"""

from __future__ import annotations

import os
import re
from collections import deque
from pathlib import Path, PurePosixPath

__all__ = ["MAX_FOLDERS", "PARENT_LEVELS", "missing_include", "resolving_folder", "with_hint"]

PARENT_LEVELS = 3
"""How many folders above the tree are searched (with their sub-folders) for the include."""
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


def resolving_folder(source_dir: Path, include: str) -> Path | None:
    """The nearest folder ``D`` around ``source_dir`` in which ``D/include`` is a file, or None
    when the bounded search finds none."""
    tree = Path(os.path.abspath(source_dir))
    for above in tree.parents:
        if (above / include).is_file():
            return above
    top = tree
    for _ in range(PARENT_LEVELS):
        top = top.parent
    queue: deque[Path] = deque([tree, *_between(tree, top)])
    seen: set[Path] = set()
    while queue and len(seen) < MAX_FOLDERS:
        folder = queue.popleft()
        if folder in seen:
            continue
        seen.add(folder)
        if folder != tree and (folder / include).is_file():
            return folder
        queue.extend(_subfolders(folder))
    return None


def _between(tree: Path, top: Path) -> list[Path]:
    """The folders above ``tree`` up to ``top``, nearest first."""
    found = []
    for above in tree.parents:
        found.append(above)
        if above == top:
            break
    return found


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


def with_hint(message: str, source_dir: Path) -> str:
    """``message`` with ``; did you mean -I DIR?`` when it reports a missing quoted include and
    the search finds the folder that holds it (DIR relative to the working folder when under
    it, as the user would type it)."""
    include = missing_include(message)
    if include is None:
        return message
    folder = resolving_folder(source_dir, include)
    if folder is None:
        return message
    shown = os.path.relpath(folder)
    if shown.startswith(".."):
        shown = str(folder)
    return f"{message}; did you mean -I {shown}?"
