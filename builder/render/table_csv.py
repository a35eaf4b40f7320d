"""The CSV writer of the one table model (``builder.render.table``): every table of a result in
one CSV, a header that is the union of their keys. Kept apart from the rich and markdown writers
so that the CSV path loads neither."""

from __future__ import annotations

from collections.abc import Sequence

from builder.render.table import Table, cell_text
from builder.render.text import csv_line, csv_text

__all__ = ["csv_records"]


def csv_records(tables: Sequence[Table]) -> str:
    """One CSV of every table: a header that is the union of their keys (context first, the
    name, ``subgroup`` when a table is nested, the rest in first-seen order), then one record per
    leaf row (a group with children is written as its children, so a column still adds up),
    the total only where the table names it (``csv_total``)."""
    nested = any(t.nested for t in tables)
    keys: dict[str, None] = {}
    for table in tables:
        keys.update(dict.fromkeys(k for k, _ in table.context))
    for table in tables:
        columns = table.shown("csv")
        keys[columns[0][1].key] = None
        if nested:
            keys["subgroup"] = None
        keys.update(dict.fromkeys(c.key for _, c in columns[1:]))
    header = list(keys)
    out = [csv_line([csv_text(key) for key in header])]  # a key may be a name (a group's)
    for table in tables:
        out += _csv_rows(table, header)
    return "".join(out)


def _csv_rows(table: Table, header: list[str]) -> list[str]:
    columns = table.shown("csv")
    context = [(k, csv_text(v)) for k, v in table.context]
    lines, parent = [], ""
    rows = table.rows
    for at, row in enumerate(rows):
        if "csv" not in row.media or (row.role == "total" and table.csv_total is None):
            continue
        has_children = at + 1 < len(rows) and rows[at + 1].depth > row.depth
        if has_children:
            parent = str(row.values[0])
            continue
        name = table.csv_prefix + ("[rest]" if row.role == "rest" else str(row.values[0]))
        if row.role == "total":
            name = table.csv_total or ""
        cells: dict[str, str | int] = dict(context)
        if row.depth:
            cells.update({columns[0][1].key: csv_text(parent), "subgroup": csv_text(name)})
        else:
            cells[columns[0][1].key] = csv_text(name)
        for index, column in columns[1:]:
            value = row.values[index]
            text = cell_text(column.kind, value, "csv")
            cells[column.key] = csv_text(text) if column.kind == "text" else text
        lines.append(csv_line([cells.get(k, "") for k in header]))
    return lines
