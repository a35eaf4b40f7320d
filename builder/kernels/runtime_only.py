"""Run-time-only kernels: kernel templates written in a tree's headers that no entry file
instantiates.

MLX's host compiles some kernels only at run time, in every build: ``indexing/scatter.h``,
``scatter_axis.h``, ``gather_axis.h``, ``gather_front.h``, ``masked_scatter.h`` and ``hadamard.h``
define kernel templates (``template <...> [[kernel]] void scatter_axis(...)``) that no ``.metal``
file instantiates; the host library carries those headers as preambles and instantiates them
when it needs one. Such kernels are in no metallib, so every variant must embed their headers.

A header of the tree (``*.h``, ``*.hh``, ``*.hpp``, ``*.hxx`` under the root, hidden folders
skipped) holds run-time-only kernels when

- no entry file of the tree reaches it through its includes, read as text: every quoted or angle
  include of the entry files and, transitively, of what they include, whatever ``#if`` says
  (so headers behind ``#if __METAL_VERSION__ >= 400`` are the gated kernels of some entry file,
  and an excluded entry file's headers, like MLX's ``*_nax.h``, belong to what was excluded),
  nor did the preprocessor read it for an entry file (``#include SOME_MACRO``), and no
  ``--exclude`` glob names it; and
- preprocessed on its own, as an entry file is, it defines kernel templates itself.

A header that does not preprocess on its own (it expects a macro from the file including it) is
read as written instead. The candidates are known before any entry file is preprocessed, so
discovery preprocesses them beside the entry files, in the same pool.
"""

from __future__ import annotations

import os
import re
from collections.abc import Iterable, Sequence
from pathlib import Path
from typing import TYPE_CHECKING, NamedTuple

from builder.errors import UsageError
from builder.files.reading import read_source
from builder.kernels.bounded_run import PreprocessError
from builder.kernels.confinement import TreeBounds
from builder.kernels.definitions import real_tree_path, split_markers, tree_path
from builder.kernels.kernel_scan import ScanError, scan_text
from builder.kernels.preprocess import Preprocessor, preprocess
from builder.kernels.tree_files import entry_files, path_matches, tree_headers

if TYPE_CHECKING:
    from builder.kernels.tree_config import TreeConfig

__all__ = ["RuntimeTemplate", "candidate_headers", "runtime_templates"]


class RuntimeTemplate(NamedTuple):
    """A kernel template no entry file instantiates: its kernels exist only when the host
    compiles them at run time (MLX: ``indexing/scatter.h``, ``hadamard.h``...)."""

    template: str
    source: str
    """The header it is written in, relative to the tree root (``/`` separators)."""


_INCLUDE = re.compile(rb'^[ \t]*#[ \t]*include[ \t]*(?:"([^"\n]+)"|<([^>\n]+)>)', re.MULTILINE)
_STAGE = re.compile(
    rb"\bkernel\b|\bvertex\b|\bfragment\b|\[\[\s*(?:visible|stitchable|mesh|"
    rb"object|intersection)\b"
)


def _reached(starts: Iterable[Path], search: Sequence[Path], root: Path) -> set[str]:
    """Tree paths of every file the includes of ``starts`` lead to, read as text (no ``#if``
    settled: everything a file might include). A quoted include is looked for beside the file
    first, an angle one only in ``search``."""
    seen: set[str] = set()  # real paths
    followed: set[str] = set()  # includes already found (as written: folder/name), each once
    todo = [os.path.realpath(p) for p in starts]
    while todo:
        path = todo.pop()
        if path in seen:
            continue
        seen.add(path)
        try:
            data = read_source(Path(path))
        except (OSError, UsageError):  # not a file to scan: preprocessing names what is wrong
            continue
        for match in _INCLUDE.finditer(data):
            quoted, angle = match.groups()
            name = (quoted or angle).decode("utf-8", "replace")
            folders: list[str | Path] = [os.path.dirname(path), *search] if quoted else [*search]
            for folder in folders:
                candidate = os.path.join(folder, name)
                if candidate in followed:
                    break
                if os.path.isfile(candidate):
                    followed.add(candidate)
                    todo.append(os.path.realpath(candidate))
                    break
    real_root = os.path.realpath(root)
    return {real_tree_path(path, real_root) for path in seen}


def _texts(
    headers: list[str],
    root: Path,
    pp: Preprocessor,
    include_dirs: Sequence[Path],
    defines: Sequence[str],
    bounds: TreeBounds,
) -> list[str]:
    """Each header preprocessed as an entry file is (one run for all when they all do), or its
    text as written when it does not preprocess alone; what it reads stays in ``bounds``."""
    try:
        return preprocess(
            pp, headers, include_dirs, defines, root, line_markers=True, confine=bounds
        )
    except PreprocessError:
        if len(headers) > 1:
            return [
                t for h in headers for t in _texts([h], root, pp, include_dirs, defines, bounds)
            ]
        return [read_source(root / headers[0]).decode("utf-8", "replace")]


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


def candidate_headers(root: Path, config: TreeConfig, bounds: TreeBounds) -> list[str]:
    """The headers that may hold run-time-only kernels: reached by no entry file of the tree
    (excluded ones included), named by no ``--exclude`` glob, and holding a shader word. A
    header that is a symbolic link leading out of ``bounds`` (the tree and its include folders)
    is no header of the tree: it is not read, and never embedded for its own sake."""
    headers = [h for h in tree_headers(root) if not path_matches(h, config.exclude)]
    if not headers:
        return []
    reached = _reached(
        (root / e for e in entry_files(root)), [*config.include_dirs, root.resolve()], root
    )
    found = []
    for header in headers:
        if header in reached or not bounds.allows(os.path.abspath(root / header)):
            continue
        try:
            if _STAGE.search(read_source(root / header)):
                found.append(header)
        except (OSError, UsageError):  # a FIFO, a device, an endless file: no kernels to find
            continue
    return found


def runtime_templates(
    root: Path,
    headers: Sequence[str],
    pp: Preprocessor,
    include_dirs: Sequence[Path],
    defines: Sequence[str],
    bounds: TreeBounds,
) -> tuple[RuntimeTemplate, ...]:
    """The kernel templates each of ``headers`` (from :func:`candidate_headers`) defines
    itself, in header order; every file they read must lie in ``bounds`` (the tree and its
    include folders; ``builder.kernels.confinement``)."""
    if not headers:
        return ()
    texts = _texts(list(headers), root, pp, include_dirs, defines, bounds)
    return tuple(
        RuntimeTemplate(t, header)
        for header, text in zip(headers, texts)
        for t in _defined_here(header, text, root)
    )
