"""The one table model every result is shown through, and its generic writers.

A result (a report, a comparison, a budget, a binary's account...) is made into ``Table`` values
once (``report_tables``, ``compare_tables``, ``checks``...): columns (the CSV/JSON key, the word
heading it for people, the kind of value), rows of plain values with their role (a named row, the
rest folded into one, overhead, the total) and nesting depth (a second ``--by`` key). Every
figure a reader sees is in the rows: shares, cumulative shares and deltas are computed when the
rows are made, never by a writer. The writers (rich text and markdown below, CSV in
``builder.render.table_csv``; ``rich`` is imported inside ``text_tables``, so the CSV path never
loads it) only format values by their
column's kind (``cell_text``), so the formats of one result cannot disagree, and a column added
to a result's table is shown by every writer with no change to them.

Untrusted text (a function's name, a path from a saved report) is marked by its type: ``Name``
(shown as code in markdown) and ``Said`` (free text); plain ``str`` is the tool's own words.
Each writer escapes the marked kinds for its medium (``builder.render.text``).
"""

from __future__ import annotations

import io
import math
from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from typing import Literal, cast

from builder.render.text import (
    human_delta,
    human_size,
    md_code,
    md_text,
    print_table,
    rich_text,
    signed_percent,
)

__all__ = [
    "ALL",
    "CHANGE",
    "CSV",
    "CSV_ONLY",
    "CUMULATIVE",
    "DOWNLOAD",
    "DOWNLOAD_SHARE",
    "FUNCTIONS",
    "PEOPLE",
    "SHARE",
    "SIZE",
    "SIZES",
    "Column",
    "Kind",
    "Name",
    "Role",
    "Row",
    "Said",
    "Table",
    "Words",
    "cell_text",
    "markdown_header",
    "markdown_line",
    "markdown_row",
    "markdown_tables",
    "text_tables",
]

Kind = Literal["text", "count", "size", "bytes", "share", "delta", "percent", "verdict"]
"""How a value is written: ``count`` and ``bytes`` exact (``1,234``), ``size`` and ``delta``
human (``1.23 kB``, ``+512 B``), ``share`` a fraction (``12.5%``), ``percent`` a change in
percent (``+1.2%``, ``new``), ``verdict`` a check's result (``pass``/``FAIL``; a failed row is
red in the terminal). CSV writes every number as it is, a share with six places, a verdict as
``true``/``false``."""

Role = Literal["row", "rest", "overhead", "total"]

ALL = frozenset({"text", "markdown", "csv"})
PEOPLE = frozenset({"text", "markdown"})
CSV = frozenset({"text", "csv"})
"""Media of the exact ``bytes`` column: the terminal table shows it beside the human size."""
CSV_ONLY = frozenset({"csv"})


class Name(str):
    """An untrusted name (a function, group, file): inline code in markdown."""

    __slots__ = ()


class Said(str):
    """Untrusted free text (a path, a target, a message naming one): plain text in markdown."""

    __slots__ = ()


Words = tuple[str, ...]
"""A line made of pieces: the tool's words (``str``) and untrusted ``Name``/``Said`` pieces."""


@dataclass(frozen=True)
class Column:
    """One column: ``key`` in CSV (and JSON), ``heading`` for people, the ``kind`` of its values,
    and the ``media`` that show it."""

    key: str
    heading: str
    kind: Kind
    media: frozenset[str] = ALL
    keep: bool = False
    """In a terminal, as wide as its longest row's cell (``_kept_widths``: a longer one goes on
    on the next line), never cut: a name that tells one row from another
    (``member_names.shortened``); the other columns wrap."""


@dataclass(frozen=True)
class Row:
    """One row's values, one per column (None: an empty cell), its role and nesting depth,
    the media that show it, and whether a rule ends its section in the terminal (the total's
    section always starts with one)."""

    values: tuple[object, ...]
    role: Role = "row"
    depth: int = 0
    media: frozenset[str] = ALL
    rule: bool = False


@dataclass(frozen=True)
class Table:
    """A titled table. ``caption`` lines follow it (a rich caption; ``<sub>`` in markdown),
    ``notes`` lines come after it in the text formats. ``context`` are the CSV cells that name
    where the rows come from (``file``, ``by``; ``library``, ``change``); ``nested`` tables have
    a second key (a ``subgroup`` CSV column); ``csv_total`` names the total row in CSV (None: no
    total row there, the rows add up by themselves); ``csv_prefix`` goes before each CSV name."""

    columns: tuple[Column, ...]
    rows: tuple[Row, ...]
    title: Words
    heading: Words = ()
    preface: tuple[Words, ...] = ()
    """Lines between the title and the rows in the text formats (a comparison's summary)."""
    caption: tuple[Words, ...] = ()
    notes: tuple[Words, ...] = ()
    context: tuple[tuple[str, str], ...] = ()
    nested: bool = False
    csv_total: str | None = None
    csv_prefix: str = ""
    compact: bool = False
    """In the terminal, a rule under the heading only (rich's ``SIMPLE_HEAD``): a wide table
    whose rows are read across, such as a history."""

    def shown(self, medium: str) -> list[tuple[int, Column]]:
        """The columns ``medium`` shows, each with its index in a row's values."""
        return [(i, c) for i, c in enumerate(self.columns) if medium in c.media]

    def value(self, row: Row, key: str) -> object:
        """``row``'s value in the first column keyed ``key``."""
        for column, value in zip(self.columns, row.values, strict=True):
            if column.key == key:
                return value
        raise KeyError(key)


# The columns results share, declared once so that a figure has one key and one heading in
# every table that shows it.
SIZE = Column("bytes", "size", "size")
SIZES = (Column("bytes", "size", "size", PEOPLE), Column("bytes", "bytes", "bytes", CSV))
"""A size human for people, and exact beside it in the terminal and in CSV."""
SHARE = Column("share", "share", "share")
CUMULATIVE = Column("cumulative", "cumulative", "share", PEOPLE)
FUNCTIONS = Column("function_count", "functions", "count")
DOWNLOAD = Column("download_bytes", "download", "size")
DOWNLOAD_SHARE = Column("download_share", "dl share", "share")
CHANGE = (
    Column("base_bytes", "base", "size"),
    Column("head_bytes", "head", "size"),
    Column("delta_bytes", "delta", "delta"),
    Column("delta_percent", "delta %", "percent"),
)
"""A size on both sides of a change, the change and the change in percent."""

_VERDICTS = {"text": ("FAIL", "pass"), "markdown": ("❌ **FAIL**", "✅ pass")}


def cell_text(kind: Kind, value: object, medium: str) -> str:
    """A value as ``medium`` writes it (text is escaped by the writer, not here)."""
    if value is None:
        return "new" if kind == "percent" and medium != "csv" else ""
    if kind == "text":
        return str(value)
    if kind == "verdict":
        return ("true" if value else "false") if medium == "csv" else _VERDICTS[medium][bool(value)]
    number = cast(float, value)
    if medium == "csv":
        if kind == "share":
            return "" if math.isnan(number) else f"{number:.6f}"
        return f"{number:.4f}" if kind == "percent" else str(value)
    if kind == "share":
        return "-" if math.isnan(number) else f"{100.0 * number:.1f}%"
    if kind == "percent":
        return signed_percent(number)
    if kind == "size":
        return human_size(number)
    if kind == "delta":
        return human_delta(cast(int, value))
    return f"{value:,}"


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
    from rich import box
    from rich.table import Table as RichTable

    from builder.render.text import text_console

    out = io.StringIO()
    console = text_console(out, color=color, width=width)
    for line in preface:
        console.print(_rich_words(line), highlight=False)
    for table in tables:
        shown = table.shown("text")
        rich = RichTable(
            box=box.SIMPLE_HEAD if table.compact else box.HEAVY_HEAD,
            pad_edge=not table.compact,
            show_edge=not table.compact,
            title=None if table.preface else _rich_words(table.title),  # else printed above
            # a compact table's caption follows it after a blank line (below): no edge to end it
            caption=None if table.compact else "\n".join(map(_rich_words, table.caption)) or None,
            title_justify="left",
            caption_justify="left",
        )
        for line in (table.title, *table.preface) if table.preface else ():
            console.print(_rich_words(line), highlight=False)
        kept = _kept_widths(table, shown, width)
        for at, column in shown:
            right = column.kind != "text"
            keep = kept.get(at)
            # a heading may be a name (a history's group columns): escaped as every cell is
            rich.add_column(
                rich_text(column.heading),
                justify="right" if right else "left",
                width=keep,
                overflow="fold" if keep else "ellipsis",  # a longer one goes on, not cut
            )
        for row in (r for r in table.rows if "text" in r.media):
            if row.role == "total":
                rich.add_section()
            cells = [_text_cell(row, at, column) for at, column in shown]
            rich.add_row(*cells, style=_style(table, row), end_section=row.rule)
        print_table(console, rich, fit=width is None)
        if table.compact and table.caption:
            console.print()
            for line in table.caption:
                console.print(_rich_words(line), highlight=False)
        for note in table.notes:
            console.print(_rich_words(note), highlight=False)
    for line in lines:
        console.print(_rich_words(line), highlight=False)
    return out.getvalue()


def _kept_widths(
    table: Table, shown: Sequence[tuple[int, Column]], width: int | None
) -> dict[int, int]:
    """The width of each ``keep`` column in a terminal (by its index in a row's values): its
    longest row's cell, or, when together they would take more than half the width, an equal
    share of two fifths of it each (a longer name goes on on the next line; the rest is left to
    the numbers: 7 columns each for four of them at 80)."""
    if width is None:
        return {}
    need = {}
    for at, column in shown:
        if column.keep:
            rows = (r for r in table.rows if r.role == "row")
            cells = [cell_text(column.kind, r.values[at], "text") for r in rows]
            words = column.heading.split()  # the heading may wrap, between its words
            need[at] = max(map(len, cells + words), default=0)
    if sum(need.values()) <= width // 2:
        return need
    return {at: min(n, width * 2 // 5 // len(need)) for at, n in need.items()}


def _text_cell(row: Row, index: int, column: Column) -> str:
    """Every cell escaped for rich (names may hold ``[`` or control characters; so do our own
    words, such as ``[container overhead]``)."""
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
    heads = "| " + " | ".join(md_text(c.heading) for c in columns) + " |"
    return [heads, "|" + "".join("---|" if c.kind == "text" else "---:|" for c in columns)]


def markdown_tables(tables: Iterable[Table], lines: Sequence[Words] = ()) -> str:
    """Each table under its heading: the title as a paragraph, the caption in ``<sub>``, the
    rows, the notes; then ``lines``."""
    parts: list[str] = []
    for table in tables:
        if table.heading:
            parts.append(f"### {markdown_line(table.heading)}\n")
        parts.append(markdown_line(table.title) + "\n")
        parts += [markdown_line(line) + "\n" for line in table.preface]
        parts += [f"<sub>{markdown_line(c)}</sub>\n" for c in table.caption]
        parts += markdown_header(table.columns)
        parts += [
            markdown_row(table.columns, row).replace("|  |", "| |")
            for row in table.rows
            if "markdown" in row.media
        ]
        notes = "\n\n".join(markdown_line(n) for n in table.notes)  # a paragraph each
        parts += ["", *([notes] if notes else []), ""]
    parts += [markdown_line(line) for line in lines]
    return "\n".join(parts).rstrip("\n") + "\n"
