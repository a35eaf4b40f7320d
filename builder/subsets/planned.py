"""The ``planned`` variant of ``variants --from --ceiling``: the planner (``builder.subsets
.variant_plan``) over the input library's movable entry files, by one measure, with the proxy
of run-time compile cost (``builder.subsets.split_costs``) as its objective and the entry files a
project pins AOT (``--keep-aot GLOB``, ``[build] keep-aot`` of metallib.toml: the kernels it calls
on its hot path) left out of its candidates.

Pins that alone leave the variant over the ceiling are a failed check (exit 1), as any ceiling
below the least reachable size is: the message names the pinned files and their bytes.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Callable, Sequence
from typing import TYPE_CHECKING

from builder.errors import CheckFailed, UsageError
from builder.kernels.tree_files import entry_files, path_matches, unmatched_glob
from builder.subsets.split_costs import EmbedCosts
from builder.subsets.variant_library import DownloadMeasure, MetallibMeasure, counted
from builder.subsets.variant_plan import ROUNDS, Candidate, Plan, plan_ceiling

if TYPE_CHECKING:
    from builder.kernels.kernel_tree import KernelTree
    from builder.subsets.variant_library import LibraryIndex, VariantWriter

__all__ = ["kept_aot", "matching", "plan_split", "plan_variant"]


def matching(index: LibraryIndex, option: str, value: str) -> set[str]:
    """The entry files one ``--aot``/``--jit``/``--keep-aot`` value names (comma-separated
    globs); a glob that names no entry file is a typo (exit 2)."""
    from builder.kernels.catalog import split_names

    globs = split_names(value)
    if not globs:
        raise UsageError(f"{option} {value!r}: names no entry file glob")
    found: set[str] = set()
    for glob in globs:
        hits = {s for s in index.entries if path_matches(s, [glob])}
        if not hits:
            raise UsageError(
                f"{option} {glob!r} matches no entry file of {index.root or 'the tree'} "
                f"({counted(index.entries)}, after exclusions)"
            )
        found |= hits
    return found


def kept_aot(tree: KernelTree, index: LibraryIndex, flags: Sequence[str]) -> tuple[str, ...]:
    """The entry files pinned AOT, in tree order: ``[build] keep-aot``'s globs and every
    ``--keep-aot`` value's (both count). A file's glob that matches no entry file, excluded
    ones included, is a typo (exit 2, as ``aot-only``); one naming only files the platform
    leaves out pins nothing."""
    globs = tree.config.keep_aot
    if globs and unmatched_glob(globs, tree.sources) is not None:
        every = entry_files(tree.root) if tree.kind == "discovered" else tree.sources
        missing = unmatched_glob(globs, every)
        if missing is not None:
            raise UsageError(
                f"{tree.config.path}: [build] keep-aot {missing!r} matches no entry file of "
                f"{tree.root} ({counted(every)})"
            )
    pinned = {s for s in index.entries if globs and path_matches(s, globs)}
    for value in flags:
        pinned |= matching(index, "--keep-aot", value)
    return tuple(s for s in index.entries if s in pinned)


def plan_split(
    tree: KernelTree,
    writer: VariantWriter,
    limit: tuple[int, str],
    kept: Sequence[str],
    costs: EmbedCosts,
) -> Plan:
    """The planner's split for ``limit`` (the ceiling, ``metallib`` or ``download``), ``kept``
    pinned AOT; ``costs`` the split's source bytes and the proxy per entry file."""
    ceiling, ceiling_of = limit
    index = writer.index
    held = sum(bool(e.held) for e in index.entries.values())
    pinned = [s for s in kept if not index.entries[s].held]
    pins = ""
    if pinned:
        pinned_bytes = sum(index.entries[s].bytes for s in pinned)
        pins = (
            f"{len(pinned)} entry file(s) --keep-aot / [build] keep-aot pin AOT "
            f"({pinned_bytes:,} bytes of functions: {', '.join(pinned)}), "
        )
    fixed = (
        f"{pins}{held} entry file(s) that stay AOT, {len(index.other):,} function(s) no "
        "entry file produces and the container's framing"
    )
    measure = (
        DownloadMeasure(writer, tree, costs)
        if ceiling_of == "download"
        else MetallibMeasure(writer)
    )
    return plan_variant(
        index,
        ceiling,
        measure,
        embedded_of=costs,
        fixed=fixed,
        first_use=costs.first_use,
        kept=pinned,
    )


def plan_variant(
    index: LibraryIndex,
    ceiling: int,
    measure: MetallibMeasure | DownloadMeasure,
    *,
    embedded_of: EmbedCosts,
    fixed: str,
    first_use: Callable[[str], int] = lambda _source: 0,
    kept: Sequence[str] = (),
) -> Plan:
    """The planner over ``index``'s movable entry files by ``measure``, its answer measured: when
    the measure is an estimate and the measured figure is over the ceiling, planned again with the
    ceiling lowered by the overshoot (``ROUNDS`` at most; ``CheckFailed`` then). ``first_use``:
    each file's proxy cost (``Candidate.cost``); ``kept``: files pinned AOT (never moved)."""
    pinned = set(kept)
    candidates = [
        Candidate(s, len(e.functions), measure.saving(s), first_use(s))
        for s, e in index.entries.items()
        if not e.held and s not in pinned
    ]
    target = ceiling
    for _ in range(ROUNDS):
        plan = plan_ceiling(
            candidates,
            target,
            size_of=measure.size_of,
            embedded_of=embedded_of,
            fixed=fixed,
            measure=measure.words,
        )
        measured = measure.measured(plan.jit, plan.metallib_bytes)
        if measured <= ceiling:
            return dataclasses.replace(
                plan,
                ceiling=ceiling,
                ceiling_of=measure.of,
                metallib_bytes=measured,
                kept_aot=tuple(s for s in index.entries if s in pinned),
            )
        target -= measured - ceiling
    raise CheckFailed(
        f"--ceiling {ceiling:,} bytes --ceiling-of {measure.of}: the planned split measured "
        f"{measured:,} bytes after {ROUNDS} rounds of planning on estimates"
    )
