"""A history's tables (``history``): per library, a row per target in order with its change
from the one before and a column per group of its top; then the groups that moved most between
each target and the one before it, so growth in the long tail is seen and not only the largest
groups (``builder.size.history.moves``). The terminal, markdown and CSV write these; the HTML
page draws the same rows (``builder.render.html``).
"""

from __future__ import annotations

from collections.abc import Sequence
from itertools import pairwise
from typing import TYPE_CHECKING

from builder.render.compare_tables import DOWNLOAD_METHOD
from builder.render.table import (
    CHANGE,
    DOWNLOAD,
    FUNCTIONS,
    SIZE,
    Column,
    Name,
    Row,
    Said,
    Table,
    Words,
)
from builder.render.text import visible

if TYPE_CHECKING:
    from builder.size.history import HistoryPoint, LibraryHistory, Step

__all__ = ["history_tables", "moves_table", "one_package"]


def history_tables(
    histories: Sequence[LibraryHistory], by: str, width: int | None = None
) -> list[Table]:
    """A table per library: a row per target (size, change from the previous row, download,
    functions), then a column per group of its ``top``; with a terminal's ``width``, as many
    of them as fit (the caption says how many did not)."""
    return [_history_table(h.points, h.top, by, h.library, width) for h in histories]


def _history_table(
    points: Sequence[HistoryPoint],
    top: list[str],
    by: str,
    library: str | None,
    width: int | None,
) -> Table:
    download = any(p.download_bytes is not None for p in points)
    package = one_package([p.target for p in points])
    labels = [p.target.split("==", 1)[1] if package else p.target for p in points]
    columns = [
        Column("target", "version" if package else "target", "text"),
        SIZE,
        Column("change", "change", "delta"),
        *([DOWNLOAD] if download else []),
        FUNCTIONS,
    ]
    changes = [None, *(b.bytes - a.bytes for a, b in pairwise(points))]
    values = [
        [Name(label), p.bytes, change, *([p.download_bytes] if download else []), p.function_count]
        for label, p, change in zip(labels, points, changes, strict=True)
    ]
    sizes = [{g.name: g.bytes for g in p.groups} for p in points]
    fixed = sum(max(len(c.heading), 10) + 3 for c in columns) + max(map(len, labels), default=0)
    room = float("inf") if width is None else width - 1 - fixed
    left_out = 0
    for name in top:
        cells = [s.get(name) for s in sizes]
        need = max(len(visible(name)), 9) + 3
        if need > room:
            left_out += 1
            continue
        room -= need
        columns.append(Column(name, name, "size"))
        for row, cell in zip(values, cells, strict=True):
            row.append(cell)
    caption: list[Words] = [
        ("measured in ", Said("; ".join(m for p in points for m in p.measured_in)))
    ]
    if left_out:
        caption.append(
            (f"{left_out} more of the top {len(top)} groups do not fit (--format json)",)
        )
    if download:
        caption.append((f"download: {DOWNLOAD_METHOD}",))
    what = f"{package}==VERSION" if package else "target"
    of = (Said(library), " in ") if library is not None else ()
    return Table(
        tuple(columns),
        tuple(Row(tuple(v)) for v in values),
        title=("Size history of ", *of, Said(f"{len(points)} targets ({what}, groups by {by})")),
        caption=tuple(caption),
        context=(("library", library or ""),) if library is not None else (),
        compact=True,
    )


def one_package(targets: Sequence[str]) -> str | None:
    """The package when every target is ``PACKAGE==VERSION`` of the same one (the table then
    shows versions only)."""
    names = {t.split("==", 1)[0] if "==" in t else None for t in targets}
    return next(iter(names)) if len(names) == 1 else None


def moves_table(history: LibraryHistory, by: str) -> Table | None:
    """The groups that moved most from each target to the next (``LibraryHistory.steps``), a
    section per step; None for a history of one point."""
    if not history.steps:
        return None
    package = one_package([p.target for p in history.points])

    def short(target: str) -> str:
        return target.split("==", 1)[1] if package else target

    rows: list[Row] = []
    caption: list[Words] = []
    for step in history.steps:
        when = f"{short(step.base)} → {short(step.head)}"
        for at, g in enumerate(step.moves):
            assert g.base_bytes is not None
            values = (Said(when), Name(g.name), g.base_bytes, g.bytes, g.delta, g.percent)
            rows.append(Row(values, rule=at == len(step.moves) - 1))
        caption.append((Said(when), ": ", _explained(step)))
    of = (Said(history.library), " in ") if history.library is not None else ()
    return Table(
        (Column("step", "step", "text"), Column("group", by, "text"), *CHANGE),
        tuple(rows),
        title=("Groups that moved most in ", *of, "each step (largest |delta| first)"),
        caption=tuple(caption),
        context=(("library", history.library),) if history.library is not None else (),
    )


def _explained(step: Step) -> str:
    """What a step's rows explain, and the level they were rolled up to."""
    said = f"these rows explain {step.explained:.1%} of the groups' change (sum of |delta|)"
    if step.label_tokens is None:
        return said
    s = "s" if step.label_tokens > 1 else ""
    return f"{said}; groups rolled up to their labels' first {step.label_tokens} token{s} (PREFIX*)"
