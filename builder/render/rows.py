"""Which rows a table shows: the largest groups, and the rest folded into one row.

Every format that limits its rows (table, markdown, CSV) asks ``top_rows`` for any level of a
rollup (``builder.size.rollup``): the groups of a report, or the children of one group.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import NamedTuple

from builder.size.rollup import Rollup, fold

__all__ = ["Line", "Shown", "delta_rows", "report_lines", "shown_count", "top_rows"]


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


def delta_rows(groups: Sequence[Rollup], top: int | None, unit: str) -> list[tuple[Rollup, str]]:
    """The rows of a joined table (``builder.size.rollup.join``) to show, each with its style:
    the ``top`` largest changes (red grown, green shrunk), the others folded into one rest row,
    then the overhead rows (both dim)."""
    changed = [g for g in groups if not g.overhead]
    shown = changed[: shown_count(len(changed), top)]
    rows = [(g, "red" if g.delta > 0 else "green" if g.delta < 0 else "") for g in shown]
    rest = changed[len(shown) :]
    if rest:
        rows.append((fold(f"rest ({len(rest)} {unit})", rest), "dim"))
    return rows + [(g, "dim") for g in groups if g.overhead]


class Line(NamedTuple):
    """A row of a report's group table, in the order every format shows them."""

    row: Rollup
    parent: Rollup | None
    """The group a second-key row belongs to (None for a group or the groups' rest row)."""
    rest: int
    """How many rows a rest row folds (0 for a named row)."""
    cumulative: int | None
    """Bytes of the groups so far, this one included (None for second-key rows)."""


def report_lines(groups: Sequence[Rollup], top: int | None) -> list[Line]:
    """The largest ``top`` groups, each followed by its largest ``top`` children (two ``--by``
    keys) and their rest, then the rest of the groups."""
    lines, cumulative = [], 0
    shown = top_rows(groups, top)
    for group in shown.rows:
        cumulative += group.bytes
        lines.append(Line(group, None, 0, cumulative))
        children = top_rows(group.children, top)
        lines += [Line(child, group, 0, None) for child in children.rows]
        if children.rest is not None:
            lines.append(Line(children.rest, group, children.rest_groups, None))
    if shown.rest is not None:
        lines.append(Line(shown.rest, None, shown.rest_groups, cumulative + shown.rest.bytes))
    return lines
