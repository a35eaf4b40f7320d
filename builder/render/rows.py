"""Which rows a table shows: the largest groups, and the rest folded into one row.

Every format that limits its rows (table, markdown, CSV) asks ``top_rows`` for any level of a
rollup (``builder.size.rollup``): the groups of a report, or the children of one group.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import TYPE_CHECKING, NamedTuple

from builder.size.rollup import Rollup, fold

if TYPE_CHECKING:
    from builder.size.compare import Comparison

__all__ = ["Shown", "compare_rows", "shown_count", "top_rows"]


class Shown(NamedTuple):
    """The rows of one rollup level to show, and the others summed into ``rest`` (None when
    every row is shown; its name is empty: each format words it)."""

    rows: Sequence[Rollup]
    rest: Rollup | None
    rest_groups: int


def shown_count(count: int, top: int | None) -> int:
    """How many of ``count`` rows a table limited to ``top`` shows (all when None). A rest row
    stands for two rows or more: folding a single one would hide its name and save no line."""
    return count if top is None or top >= count - 1 else max(top, 0)


def top_rows(groups: Sequence[Rollup], top: int | None) -> Shown:
    """The largest ``top`` groups (all when None), and the others summed into one rollup."""
    top = shown_count(len(groups), top)
    if top >= len(groups):
        return Shown(groups, None, 0)
    rest = groups[top:]
    folded = fold("", rest)
    return Shown(groups[:top], folded, len(rest))


def compare_rows(
    comparison: Comparison, top: int | None
) -> tuple[list[Rollup], Rollup | None, Rollup]:
    """Groups to show (top N by |delta|), a folded rest (or None), and the overhead row."""
    groups = [g for g in comparison.groups if not g.overhead]
    overhead = next(g for g in comparison.groups if g.overhead)
    top = shown_count(len(groups), top)
    if top >= len(groups):
        return groups, None, overhead
    rest = groups[top:]
    return groups[:top], fold(f"rest ({len(rest)} groups)", rest), overhead
