"""A report's template parameters as a table (``report --by param``, ``builder.size.params``).

A row per group (its functions, bytes and share of the library), then, for each parameter its
names carry, a row per value: the functions that carry it, their bytes (what dropping the value
saves) and their share of the group. The values of one parameter add up to their group; a group
whose names carry no parameter says so in a row of its own. ``--top`` keeps the largest groups
and, per parameter, the largest values; the rest of each is one row.

In CSV each value row is a record: the group, ``subgroup`` (``bm=64``), and ``parameter`` and
``value`` apart (columns only CSV shows), so a spreadsheet can sum one parameter's values.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import TYPE_CHECKING

from builder.render.table import (
    CSV_ONLY,
    FUNCTIONS,
    SHARE,
    SIZES,
    Column,
    Name,
    Role,
    Row,
    Table,
)

if TYPE_CHECKING:
    from builder.size.params import GroupParameters, Value
    from builder.size.report import Report

__all__ = ["NO_PARAMETER", "parameter_table"]

NO_PARAMETER = "no parameter in its names"

_COLUMNS = (
    Column("group", "group / parameter=value", "text"),
    Column("parameter", "parameter", "text", CSV_ONLY),
    Column("value", "value", "text", CSV_ONLY),
    FUNCTIONS,
    *SIZES,
    SHARE,
    Column("group_share", "of group", "share"),
)


def _share(part: int, whole: int) -> float | None:
    return part / whole if whole else None


def _shown(count: int, top: int | None) -> int:
    """As the group table folds (``report_tables.shown_count``): a rest row stands for two
    rows or more."""
    return count if top is None or top >= count - 1 else max(top, 0)


def _group_rows(group: GroupParameters, top: int | None, whole: int) -> list[Row]:
    """The group's row, then its parameters' values (or the row saying it has none)."""
    size, count = group.bytes, group.function_count

    def part(name: str, parameter: str, value: str, n: int, b: int, role: Role = "row") -> Row:
        # a parameter and its value are read from names: untrusted, as the names are
        cells = (Name(parameter), Name(value), n, b, b, None, _share(b, size))
        return Row((name, *cells), role, 1)

    rows = [Row((Name(group.group), None, None, count, size, size, _share(size, whole), None))]
    if not group.parameters:
        rows.append(part(NO_PARAMETER, "", "", count, size))
    for parameter in group.parameters:
        values: Sequence[Value] = parameter.values
        shown = _shown(len(values), top)
        for value in values[:shown]:
            name = Name(f"{parameter.name}={value.value}")
            rows.append(part(name, parameter.name, value.value, value.function_count, value.bytes))
        rest = values[shown:]
        if rest:
            n, b = sum(v.function_count for v in rest), sum(v.bytes for v in rest)
            words = f"{parameter.name}: rest ({len(rest)} values)"
            rows.append(part(words, parameter.name, "", n, b, "rest"))
    return rows


def parameter_table(report: Report, top: int | None) -> Table | None:
    """The table of ``report.parameters`` (None when the report was not grouped by param)."""
    groups = report.parameters
    if groups is None:
        return None
    whole = report.file_size
    shown = _shown(len(groups), top)
    rows = [row for group in groups[:shown] for row in _group_rows(group, top, whole)]
    rest = groups[shown:]
    if rest:
        count, size = sum(g.function_count for g in rest), sum(g.bytes for g in rest)
        words = f"rest ({len(rest)} groups)"
        rows.append(Row((words, None, None, count, size, size, _share(size, whole), None), "rest"))
    src = report.source
    return Table(
        _COLUMNS,
        tuple(rows),
        title=(Name(src.label), ": template parameters, each value's bytes"),
        heading=("Template parameters of ", Name(src.label)),
        caption=(
            (
                (
                    "each parameter's values add up to their group; dropping a value saves "
                    "its bytes (the functions whose names carry it)"
                ),
            ),
        ),
        context=(("file", src.path or ""), ("by", report.by)),
        nested=True,
    )
