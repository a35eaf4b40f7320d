"""Run-time-only kernels: kernel templates written in a tree's headers that no entry file
instantiates.

MLX's host compiles some kernels only at run time, in every build: ``indexing/scatter.h``,
``scatter_axis.h``, ``gather_axis.h``, ``gather_front.h``, ``masked_scatter.h`` and ``hadamard.h``
define kernel templates (``template <...> [[kernel]] void scatter_axis(...)``) that no ``.metal``
file instantiates; the host library carries those headers as preambles and instantiates them
when it needs one. Such kernels are in no metallib, so every variant must embed their headers.

A header of the tree (``*.h``, ``*.hh``, ``*.hpp``, ``*.hxx`` under the root, hidden folders
skipped) holds run-time-only kernels when

- no entry file reads it (the preprocessor's line markers of every entry file say which files
  each one reads), no excluded entry file reaches it through quoted includes (read as text: an
  excluded file's headers belong to what was excluded, like MLX's ``*_nax.h``) and no
  ``--exclude`` glob names it; and
- preprocessed on its own, as an entry file is, it defines kernel templates itself.

A header that does not preprocess on its own (it expects a macro from the file including it) is
read as written instead. Kernel templates in headers that entry files do read are not run-time
only: a tree's ``#if`` decides those (MLX's ``__METAL_VERSION__ >= 320`` kernels).
"""

from __future__ import annotations

import os
import re
from collections.abc import Iterable, Sequence
from pathlib import Path, PurePath
from typing import TYPE_CHECKING

from builder.kernels.definitions import split_markers, tree_path
from builder.kernels.kernel_scan import ScanError, scan_text
from builder.kernels.preprocess import PreprocessError, Preprocessor, preprocess

if TYPE_CHECKING:
    from builder.kernels.discovery import RuntimeTemplate
    from builder.kernels.tree_config import TreeConfig

__all__ = ["HEADER_SUFFIXES", "runtime_templates", "tree_headers"]

HEADER_SUFFIXES = (".h", ".hh", ".hpp", ".hxx")
_QUOTED = re.compile(rb'^[ \t]*#[ \t]*include[ \t]*"([^"\n]+)"', re.MULTILINE)
_STAGE = re.compile(rb"\bkernel\b|\bvertex\b|\bfragment\b|\[\[\s*(?:visible|stitchable|mesh|"
                    rb"object|intersection)\b")  # fmt: skip


def tree_headers(root: Path) -> list[str]:
    """Every header under ``root`` (relative, ``/``), sorted; hidden folders skipped."""
    found = []
    for folder, dirs, files in os.walk(root):
        dirs[:] = sorted(d for d in dirs if not d.startswith("."))
        base = PurePath(os.path.relpath(folder, root))
        for name in files:
            if name.endswith(HEADER_SUFFIXES) and not name.startswith("."):
                found.append((base / name).as_posix() if str(base) != "." else name)
    return sorted(found)


def _reached(starts: Iterable[Path], search: Sequence[Path], root: Path) -> set[str]:
    """Tree paths of every file the quoted includes of ``starts`` lead to, read as text (no
    ``#if`` settled: everything a file might include)."""
    seen: set[str] = set()
    todo = [p.resolve() for p in starts]
    while todo:
        path = todo.pop()
        key = tree_path(str(path), root)
        if key in seen:
            continue
        seen.add(key)
        try:
            data = path.read_bytes()
        except OSError:
            continue
        for match in _QUOTED.finditer(data):
            name = match.group(1).decode("utf-8", "replace")
            for folder in [path.parent, *search]:
                candidate = folder / name
                if candidate.is_file():
                    todo.append(candidate.resolve())
                    break
    return seen


def _texts(
    headers: list[str], root: Path, pp: Preprocessor, include_dirs: Sequence[Path],
    defines: Sequence[str],
) -> list[str]:  # fmt: skip
    """Each header preprocessed as an entry file is (one run for all when they all do), or its
    text as written when it does not preprocess alone."""
    try:
        return preprocess(pp, headers, include_dirs, defines, root, line_markers=True)
    except PreprocessError:
        if len(headers) > 1:
            return [t for h in headers for t in _texts([h], root, pp, include_dirs, defines)]
        return [(root / headers[0]).read_text(encoding="utf-8", errors="replace")]


def _defined_here(header: str, text: str, root: Path) -> list[str]:
    """The kernel templates ``header`` itself defines, read from its preprocessed ``text``."""
    clean, runs = split_markers(text)
    try:
        scan = scan_text(clean, header)
    except ScanError:
        return []
    names: list[str] = []
    for name, offset in scan.templates:
        marker = runs.file_at(offset)
        where = header if marker is None else tree_path(marker, root)
        if where == header and name not in names:
            names.append(name)
    return names


def runtime_templates(
    root: Path, entries: Sequence[str], files_read: Iterable[set[str]], config: TreeConfig,
    pp: Preprocessor, include_dirs: Sequence[Path], defines: Sequence[str],
) -> tuple[RuntimeTemplate, ...]:  # fmt: skip
    """The run-time-only kernel templates of the tree at ``root`` (see the module docstring),
    in header order; ``files_read`` are the tree paths each entry file read."""
    from builder.kernels.discovery import RuntimeTemplate, entry_files, path_matches

    read: set[str] = set().union(*files_read)
    kept = set(entries)
    excluded = [root / e for e in entry_files(root) if e not in kept]
    candidates = [h for h in tree_headers(root) if h not in read and not path_matches(h, config.exclude)]
    if candidates and excluded:
        reached = _reached(excluded, [*config.include_dirs, root.resolve()], root)
        candidates = [h for h in candidates if h not in reached]
    with_stages = []
    for header in candidates:
        try:
            if _STAGE.search((root / header).read_bytes()):
                with_stages.append(header)
        except OSError:
            continue
    if not with_stages:
        return ()
    texts = _texts(with_stages, root, pp, include_dirs, defines)
    return tuple(RuntimeTemplate(t, header) for header, text in zip(with_stages, texts)
                 for t in _defined_here(header, text, root))  # fmt: skip
