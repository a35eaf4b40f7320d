"""The run-time sources of host libraries (``builder.size.host_strings``) as tables: one per
binary (a wheel's member each), one row per function returning a string literal, with the bytes
its string holds in the file."""

from __future__ import annotations

import io
from collections.abc import Sequence
from typing import TYPE_CHECKING

from builder.render.text import human_size, print_table, rich_text, text_console

if TYPE_CHECKING:
    from rich.table import Table

    from builder.size.host_strings import HostString

__all__ = ["host_sources_text"]

Found = Sequence[tuple[str | None, Sequence["HostString"]]]
"""Each binary's member path in the wheel (None: the binary given itself) and its sources."""


def host_sources_text(
    shown: str, found: Found, namespace: str | None, *, color: bool, width: int | None
) -> str:
    """One rich table per binary, titled by its member of the wheel ``shown`` when it is one:
    function, architecture (a fat file lists each), file offset, bytes (``width`` None: not a
    terminal, nothing wrapped or cut)."""
    out = io.StringIO()
    console = text_console(out, color=color, width=width)
    for member, sources in found:
        title = shown if member is None else f"{member} of {shown}"
        print_table(console, _table(title, sources, namespace), fit=width is None)
    return out.getvalue()


def _table(shown: str, found: Sequence[HostString], namespace: str | None) -> Table:
    from rich.table import Table

    total = sum(s.size for s in found)
    where = f" in {namespace}" if namespace else ""
    table = Table(
        title=rich_text(
            f"{shown}: {len(found)} run-time source(s){where}, {human_size(total)} "
            f"({total:,} bytes, NULs included)"
        ),
        title_justify="left",
    )
    table.add_column("function")
    archs = len({s.arch for s in found}) > 1
    if archs:
        table.add_column("arch")
    table.add_column("offset", justify="right")
    table.add_column("size", justify="right")
    table.add_column("bytes", justify="right")
    for item in found:
        cells = [rich_text(item.label)] + ([item.arch] if archs else [])
        table.add_row(*cells, f"{item.offset:#x}", human_size(item.size), f"{item.size:,}")
    table.add_section()
    table.add_row("total", *([""] if archs else []), "", human_size(total), f"{total:,}")
    return table
