"""The coverage check: a split of a kernel tree loses no kernel.

A split (a variant of ``variants --from``, or a ``build`` with JIT entry files) ships every kernel
discovery finds either compiled, in its metallib, or as source, among its embedded run-time
preambles. So, for each kernel:

- its entry file is AOT, and the metallib holds it (a build compiles every AOT entry file; a
  variant is a subset of a library, and a kernel that library lacks is counted apart: no split
  could ship it); or
- its entry file is JIT, and the file its code is written in (``KernelTree.defined_in``: the
  header holding its template, or the function itself) is one of the files the run-time sources
  inline. An entry file embedded whole (``KernelTree.embeddings``) is its own run-time
  source, so it ships every kernel written in it or in what it quote-includes; only a kernel
  behind a computed include (``#include SOME_MACRO``, left to the run-time compiler) is lost.

And every run-time-only kernel template (``KernelTree.runtime_only``) has its header among them,
whatever is JIT. The files a preamble inlines are found as the inliner finds them
(``builder.jit.preamble.quoted_includes``, from each root header, each file once), without
making the text. A split that loses kernels is refused before anything is written:
``CheckFailed`` (exit 1) naming each entry file and how many of its kernels would be lost.
"""

from __future__ import annotations

import os
from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING

from builder.errors import CheckFailed
from builder.jit.preamble import inlined_files

if TYPE_CHECKING:
    from builder.jit.tree_preambles import PreambleSpec
    from builder.kernels.discovery import KernelTree

__all__ = ["Coverage", "Lost", "check_coverage", "require_coverage"]


@dataclass(frozen=True)
class Lost:
    """Kernels of one entry file (or run-time-only header) a split would ship nowhere."""

    source: str
    kernels: int
    written_in: tuple[str, ...]
    """The files holding their code, none of which the split embeds."""


@dataclass(frozen=True)
class Coverage:
    """How a split ships the tree's kernels."""

    kernels: int
    """Kernels discovery finds."""
    in_metallib: int
    in_sources: int
    absent: int
    """Kernels of AOT entry files that the input library does not hold (another release)."""
    runtime_only: int
    """Run-time-only kernel templates, each with its header embedded."""
    lost: tuple[Lost, ...]

    @property
    def complete(self) -> bool:
        return not self.lost


def _real(tree: KernelTree, name: str) -> Path:
    return Path(os.path.realpath(tree.root / name))


def check_coverage(
    tree: KernelTree,
    jit: Iterable[str],
    preambles: Sequence[PreambleSpec],
    include_dirs: Sequence[Path],
    *,
    in_metallib: Callable[[str], bool] | None = None,
) -> Coverage:
    """Where each kernel of ``tree`` ships when ``jit`` entry files are compiled at run time
    from ``preambles``; ``in_metallib(name)`` says whether the metallib holds a kernel of an AOT
    entry file (None: a build, which compiles every one)."""
    chosen = set(jit)
    embedded = {
        str(p) for p in inlined_files((h for spec in preambles for h in spec.headers), include_dirs)
    }
    missing: dict[str, list[str]] = {}
    in_lib = in_src = absent = 0
    if in_metallib is not None:
        for record in tree.kernels:
            if record.source not in chosen:
                if in_metallib(record.name):
                    in_lib += 1
                else:
                    absent += 1
    real: dict[str, str] = {}
    for (source, _, _), (where, count) in tree.code_sites.items():
        if source not in chosen:
            in_lib += count if in_metallib is None else 0
        elif (real.get(where) or real.setdefault(where, str(_real(tree, where)))) in embedded:
            in_src += count
        else:
            missing.setdefault(source, []).extend([where] * count)
    lost = [
        Lost(source, len(files), tuple(dict.fromkeys(files))) for source, files in missing.items()
    ]
    runtime_lost: dict[str, int] = {}
    for template in tree.runtime_only:
        if str(_real(tree, template.source)) not in embedded:
            runtime_lost[template.source] = runtime_lost.get(template.source, 0) + 1
    lost += [Lost(header, count, (header,)) for header, count in runtime_lost.items()]
    return Coverage(
        len(tree.kernels),
        in_lib,
        in_src,
        absent,
        len(tree.runtime_only) - sum(runtime_lost.values()),
        tuple(lost),
    )


def require_coverage(coverage: Coverage, split: str) -> None:
    """``CheckFailed`` (exit 1) when ``split`` (a variant's or build's name) loses kernels: one
    line naming every entry file with its count and where the code is written."""
    if coverage.complete:
        return
    parts = [
        f"{lost.source}: {lost.kernels:,} kernel(s), code in {', '.join(lost.written_in)}"
        for lost in coverage.lost
    ]
    total = sum(lost.kernels for lost in coverage.lost)
    raise CheckFailed(
        f"{split} would lose {total:,} kernel(s), in neither its metallib nor its embedded "
        f"sources ({'; '.join(parts)}); keep those entry files AOT or embed the files "
        "holding their code"
    )
