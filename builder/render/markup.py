"""Escaping for each output medium: rich markup, CSV cells, GitHub markdown.

Names and other untrusted text (a saved report's target or grouping) reach tables, CSV and
markdown only through these functions, each of which shows control characters escaped
(``visible``); JSON needs nothing more than its own escaping (and ``builder.files.jsontext`` for
file
names that are not UTF-8).
"""

from __future__ import annotations

import re
from collections.abc import Sequence
from typing import IO, TYPE_CHECKING

from builder.render.text import visible

if TYPE_CHECKING:
    from rich.console import Console
    from rich.table import Table

__all__ = [
    "clip",
    "csv_line",
    "csv_text",
    "md_code",
    "md_text",
    "print_table",
    "rich_text",
    "text_console",
]


def rich_text(text: str) -> str:
    """Untrusted text for a rich table or line: control characters shown escaped (``visible``)
    and ``[`` escaped so a name is never read as rich markup (the consoles also have emoji codes
    such as ``:x:`` turned off)."""
    from rich.markup import escape

    return escape(visible(text))


_FORMULA_START = ("=", "+", "-", "@")  # a tab or CR at the start is escaped by visible()


_CSV_QUOTED = re.compile(r'[,"\r\n]')


def csv_text(text: str) -> str:
    """A text cell that neither a terminal nor a spreadsheet acts on: control and invisible
    characters shown escaped (``visible``: ``cat report.csv`` runs no escape sequence, a CR
    starts no row), and OWASP's rule, a leading ``'`` before a cell that starts with ``=``,
    ``+``, ``-`` or ``@``. Only for text columns: numbers (negative deltas included) are written
    as they are."""
    clean = visible(text)
    return "'" + clean if clean.startswith(_FORMULA_START) else clean


def csv_line(cells: Sequence[str | int]) -> str:
    """One CSV record (RFC 4180), ``\\n``-terminated: a cell holding a comma, quote, CR or LF is
    quoted with its quotes doubled. Written here rather than with the csv module, whose writer
    leaves a CR unquoted when rows end in ``\\n`` (a spreadsheet then starts a new row there)."""
    out = []
    for cell in cells:
        text = str(cell)
        if _CSV_QUOTED.search(text):
            text = '"' + text.replace('"', '""') + '"'
        out.append(text)
    return ",".join(out) + "\n"


def clip(text: str, cap: int) -> str:
    """``text`` cut to ``cap`` characters, the cut marked with an ellipsis."""
    return text if len(text) <= cap else text[: cap - 1] + "…"


def md_code(text: str, cap: int | None = None) -> str:
    """Untrusted text as inline code that cannot break out: control characters shown escaped
    (``visible``, so no newline ends a table row), backticks (which would end the span) become
    ``'`` and pipes are escaped for tables. Inside a code span GitHub renders HTML tags, links
    and mentions as plain text."""
    clean = visible(text)
    if cap is not None:
        clean = clip(clean, cap)
    return "`" + clean.replace("`", "'").replace("|", "\\|") + "`"


_MARKDOWN_ACTIVE = re.compile(r"[<>`|\[\]@]")


_MARKDOWN_QUOTED = {"<": "&lt;", ">": "&gt;", "@": "`@`"}


def md_text(text: str) -> str:
    """Untrusted text (a saved report's target or grouping, gate messages and notes naming it,
    provenance) as plain markdown that stays plain: control characters shown escaped, no HTML
    tag (``<`` ``>`` as entities), no code span, link or image (backticks and brackets
    backslash-escaped), no table cell break (``\\|``), no mention (``@`` as code). Ordinary
    text is returned unchanged."""
    clean = visible(text)
    if _MARKDOWN_ACTIVE.search(clean) is None:
        return clean
    return _MARKDOWN_ACTIVE.sub(lambda m: _MARKDOWN_QUOTED.get(m.group(), "\\" + m.group()), clean)


_UNBOUNDED = 1 << 20
"""Columns a table may take when measured for its natural width (more than any real name)."""


def text_console(out: IO[str], *, color: bool, width: int | None) -> Console:
    """The rich console a text rendering writes to ``out``: ``width`` columns (a terminal's).
    ``width`` None (stdout is a pipe, a file, a CI log): nothing is wrapped or cut. Lines,
    titles and captions stay whole (soft wrap: a path is never broken mid-word), and tables
    printed with ``print_table(fit=True)`` are as wide as their cells."""
    from rich.console import Console

    return Console(
        file=out,
        force_terminal=color,
        no_color=not color,
        width=width or 100,
        soft_wrap=width is None,
        emoji=False,
    )


def print_table(console: Console, table: Table, *, fit: bool) -> None:
    """Print a rich table; ``fit`` (stdout is not a terminal): as wide as its cells need rather
    than the console's width, so no function name is cut with an ellipsis or folded."""
    if fit:
        unbounded = console.options.update_width(_UNBOUNDED)
        width = console.width
        console.width = max(width, console.measure(table, options=unbounded).maximum)
        try:
            console.print(table)
        finally:
            console.width = width
    else:
        console.print(table)
