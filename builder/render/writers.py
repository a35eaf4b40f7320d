"""The generic writers of ``builder.render.table.Table``: rich text, markdown and CSV.

Each writer formats a row's values by its columns' kinds (``table.cell_text``) and escapes
untrusted text for its medium (``builder.render.markup``); none of them computes a figure. The
rich text writer imports ``rich`` inside its function, so the CSV path never loads it.
"""

from __future__ import annotations

import io
from collections.abc import Iterable, Sequence

from builder.render.markup import csv_line, csv_text, md_code, md_text, print_table, rich_text
from builder.render.table import Column, Name, Row, Said, Table, Words, cell_text

__all__ = [
    "csv_records",
    "markdown_header",
    "markdown_line",
    "markdown_row",
    "markdown_tables",
    "text_tables",
]

_STYLES = {"rest": "dim", "overhead": "dim", "total": "bold"}


def _rich_words(words: Words) -> str:
    from rich.markup import escape

    return "".join(rich_text(w) if isinstance(w, (Name, Said)) else escape(w) for w in words)


def _delta(table: Table, row: Row) -> int | None:
    for column, value in zip(table.columns, row.values, strict=True):
        if column.kind == "delta" and isinstance(value, int):
            return value
    return None


def _style(table: Table, row: Row) -> str:
    """Grown rows red, shrunk rows green (a table with a delta column), the rest and overhead
    dim, the total bold."""
    if row.role != "row":
        return _STYLES[row.role]
    for column, value in zip(table.columns, row.values, strict=True):
        if column.kind == "verdict" and value is False:
            return "bold red"
    delta = _delta(table, row)
    return "" if not delta else "red" if delta > 0 else "green"


def text_tables(
    tables: Iterable[Table],
    *,
    color: bool,
    width: int | None,
    preface: Sequence[Words] = (),
    lines: Sequence[Words] = (),
) -> str:
    """``preface`` lines, rich tables each followed by its notes, then ``lines``. ``width``
    None (not a terminal): each table as wide as its cells need, so no name is cut."""
    from rich.table import Table as RichTable

    from builder.render.markup import text_console

    out = io.StringIO()
    console = text_console(out, color=color, width=width)
    for line in preface:
        console.print(_rich_words(line), highlight=False)
    for table in tables:
        shown = [c for c in table.columns if "text" in c.media]
        rich = RichTable(
            title=_rich_words(table.title),
            caption="\n".join(map(_rich_words, table.caption)) or None,
            title_justify="left",
            caption_justify="left",
        )
        for column in shown:
            right = column.kind != "text"
            rich.add_column(column.heading, justify="right" if right else "left")
        for row in (r for r in table.rows if "text" in r.media):
            if row.role == "total":
                rich.add_section()
            cells = [_text_cell(table, c, row) for c in shown]
            rich.add_row(*cells, style=_style(table, row))
        print_table(console, rich, fit=width is None)
        for note in table.notes:
            console.print(_rich_words(note), highlight=False)
    for line in lines:
        console.print(_rich_words(line), highlight=False)
    return out.getvalue()


def _cells(table: Table, medium: str) -> list[tuple[int, Column]]:
    return [(i, c) for i, c in enumerate(table.columns) if medium in c.media]


def _text_cell(table: Table, column: Column, row: Row) -> str:
    """Every cell escaped for rich (names may hold ``[`` or control characters; so do our own
    words, such as ``[container overhead]``)."""
    index = table.columns.index(column)
    text = rich_text(cell_text(column.kind, row.values[index], "text"))
    return "  └ " + text if index == 0 and row.depth else text


def markdown_line(words: Words) -> str:
    """A line of pieces for markdown: names as code, untrusted text escaped, our words as is."""
    return "".join(
        md_code(w) if isinstance(w, Name) else md_text(w) if isinstance(w, Said) else w
        for w in words
    )


def markdown_row(
    columns: Sequence[Column], row: Row, keys: Sequence[str] | None = None, cap: int | None = None
) -> str:
    """One markdown table row (``keys``: only those columns, in their order; ``cap``: names
    cut to that many characters). A total row has its name and deltas in bold."""
    cells = []
    for index, column in _md_columns(columns, keys):
        value = row.values[index]
        text = cell_text(column.kind, value, "markdown")
        if isinstance(value, Name):
            text = md_code(text, cap)
        elif isinstance(value, Said):
            text = md_text(text)
        if index == 0 and row.depth:
            text = "↳ " + text
        if row.role == "total" and (index == 0 or column.kind == "delta") and text:
            text = f"**{text}**"
        cells.append(text)
    return "| " + " | ".join(cells) + " |"


def _md_columns(columns: Sequence[Column], keys: Sequence[str] | None) -> list[tuple[int, Column]]:
    if keys is None:
        return [(i, c) for i, c in enumerate(columns) if "markdown" in c.media]
    found = {c.key: (i, c) for i, c in reversed(list(enumerate(columns)))}
    return [found[k] for k in keys if k in found]


def markdown_header(columns: Sequence[Column], keys: Sequence[str] | None = None) -> list[str]:
    """A markdown table's header and alignment lines."""
    columns = [c for _, c in _md_columns(columns, keys)]
    heads = "| " + " | ".join(c.heading for c in columns) + " |"
    return [heads, "|" + "".join("---|" if c.kind == "text" else "---:|" for c in columns)]


def markdown_tables(tables: Iterable[Table], lines: Sequence[Words] = ()) -> str:
    """Each table under its heading: the title as a paragraph, the caption in ``<sub>``, the
    rows, the notes; then ``lines``."""
    parts: list[str] = []
    for table in tables:
        if table.heading:
            parts.append(f"### {markdown_line(table.heading)}\n")
        parts.append(markdown_line(table.title) + "\n")
        parts += [f"<sub>{markdown_line(c)}</sub>\n" for c in table.caption]
        parts += markdown_header(table.columns)
        parts += [
            markdown_row(table.columns, row).replace("|  |", "| |")
            for row in table.rows
            if "markdown" in row.media
        ]
        parts += ["", *(markdown_line(n) for n in table.notes)]
        parts.append("")
    parts += [markdown_line(line) for line in lines]
    return "\n".join(parts).rstrip("\n") + "\n"


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
        columns = _cells(table, "csv")
        keys[columns[0][1].key] = None
        if nested:
            keys["subgroup"] = None
        keys.update(dict.fromkeys(c.key for _, c in columns[1:]))
    header = list(keys)
    out = [csv_line(header)]
    for table in tables:
        out += _csv_rows(table, header)
    return "".join(out)


def _csv_rows(table: Table, header: list[str]) -> list[str]:
    columns = _cells(table, "csv")
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
