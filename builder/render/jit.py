"""The JIT side of reports and comparisons as text: rich tables, markdown, CSV rows, JSON.

A build's JIT units are measured in its host library (``builder.size.jit_sizes``), never in the
metallib, so they get tables of their own whose caption says what was measured and where. For a
build with no metallib (every unit JIT) these tables are the report; with a metallib they
follow its table. Rows are always units, whatever ``--by`` says: the host library has no
per-function sizes.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, NamedTuple

from builder.render.markup import md_code, md_text, print_table, rich_text
from builder.render.provenance import provenance_line
from builder.render.rows import top_rows
from builder.render.text import human_size, percent

if TYPE_CHECKING:
    from rich.console import Console

    from builder.size.jit_rows import JitBreakdown
    from builder.size.report import Report
    from builder.size.rollup import Rollup

__all__ = [
    "jit_headline",
    "report_jit_markdown",
    "report_jit_table",
]


def jit_headline(jit: JitBreakdown) -> str:
    """``JIT host library 350.5 kB`` or ``embedded JIT source 296.9 kB``: what the total is."""
    what = "JIT host library" if jit.host_measured else "embedded JIT source"
    return f"{what} {human_size(jit.total)}"


def _notes(report: Report) -> list[str]:
    notes = []
    if report.source.path is None:
        notes.append("no metallib: every unit is compiled at run time")
    if report.by != "kernel":
        notes.append(
            f"rows are JIT units whatever --by {report.by} says: the host library "
            "has no per-function sizes"
        )
    return notes


class _Line(NamedTuple):
    """A row of a report's JIT table: a unit, the folded rest, or host bytes no unit owns."""

    name: str
    """Escaped for the medium already for the rest and overhead rows (plain text)."""
    plain: bool
    """``name`` is the tool's own words (rest, overhead), not an untrusted unit name."""
    row: Rollup
    cumulative: int


def _lines(jit: JitBreakdown, top: int | None) -> list[_Line]:
    shown = top_rows(jit.units, top)
    rows = [(r.name, False, r) for r in shown.rows]
    if shown.rest is not None:
        rows.append((f"rest ({shown.rest_groups} units)", True, shown.rest))
    rows += [(o.name, True, o) for o in jit.overhead]
    out, cumulative = [], 0
    for name, plain, row in rows:
        cumulative += row.bytes
        out.append(_Line(name, plain, row, cumulative))
    return out


def _embedded(row: Rollup) -> str:
    return "" if row.overhead else human_size(row.embedded_bytes or 0)


def report_jit_table(
    report: Report, jit: JitBreakdown, console: Console, top: int | None, *, fit: bool = False
) -> None:
    """Print the JIT table of ``report``: units, the host bytes no unit owns, the total."""
    from rich.markup import escape
    from rich.table import Table

    kernels = sum(r.function_count for r in jit.units)
    caption = "; ".join([f"measured: {rich_text(jit.origin)}", *map(escape, _notes(report))])
    if report.source.path is None:  # the metallib table, which names the provenance, is skipped
        caption += "\n" + rich_text(provenance_line(report.provenance))
    table = Table(
        title=rich_text(report.source.label)
        + escape(
            f": {jit_headline(jit)}, {len(jit.units):,} units "
            f"({kernels:,} kernels) compiled at run time"
        ),
        caption=caption,
        title_justify="left",
        caption_justify="left",
    )
    # a discovered tree's build with entry files embedded whole says which
    how = {j.name: j.embedding for j in report.jit_units}
    whole = "whole-file" in how.values()
    names = ("JIT unit", *(("embedding",) if whole else ()), "kernels", "size", "bytes")
    for name in (*names, "share", "cumulative", "embedded"):
        table.add_column(name, justify="left" if name in ("JIT unit", "embedding") else "right")
    for line in _lines(jit, top):
        r = line.row
        table.add_row(
            escape(line.name) if line.plain else rich_text(line.name),
            *(("" if r.overhead or line.plain else how.get(line.name, ""),) if whole else ()),
            "" if r.overhead else f"{r.function_count:,}",
            human_size(r.bytes),
            f"{r.bytes:,}",
            percent(r.bytes, jit.total),
            percent(line.cumulative, jit.total),
            _embedded(r),
            style="dim" if line.plain else "",
        )
    table.add_section()
    table.add_row(
        "total",
        *(("",) if whole else ()),
        f"{kernels:,}",
        human_size(jit.total),
        f"{jit.total:,}",
        "100.0%" if jit.total else "-",
        "",
        "",
        style="bold",
    )
    print_table(console, table, fit=fit)


def report_jit_markdown(report: Report, jit: JitBreakdown, top: int | None) -> list[str]:
    """Markdown lines for the JIT side of ``report`` (a heading of its own after a metallib)."""
    kernels = sum(r.function_count for r in jit.units)
    lines = (
        []
        if report.source.path is None
        else [f"#### JIT units of {md_code(report.source.label)}\n"]
    )
    lines.append(
        f"{jit_headline(jit)} ({jit.total:,} bytes), {len(jit.units):,} units "
        f"({kernels:,} kernels) compiled at run time. Measured: {md_text(jit.origin)}.\n"
    )
    lines += [f"<sub>{md_text(note)}</sub>\n" for note in _notes(report)]
    if report.source.path is None:
        lines.append(f"<sub>{md_text(provenance_line(report.provenance))}</sub>\n")
    how = {j.name: j.embedding for j in report.jit_units}
    whole = "whole-file" in how.values()  # the column only when some unit is embedded whole
    lines += [
        f"| JIT unit |{' embedding |' if whole else ''} kernels | size | share | "
        + "cumulative | embedded |",
        f"|---|{'---|' if whole else ''}---:|---:|---:|---:|---:|",
    ]
    for line in _lines(jit, top):
        r = line.row
        name = line.name if line.plain else md_code(line.name)
        embedding = how.get(line.name, "") if not (r.overhead or line.plain) else ""
        kernel_cell = "" if r.overhead else f" {r.function_count:,}"
        lines.append(
            f"| {name} |{f' {embedding} |' if whole else ''}{kernel_cell} | "
            f"{human_size(r.bytes)} | {percent(r.bytes, jit.total)} | "
            f"{percent(line.cumulative, jit.total)} | {_embedded(r)} |".replace("|  |", "| |")
        )
    total = f"| **total** |{' |' if whole else ''} {kernels:,} | {human_size(jit.total)}"
    lines.append(f"{total} | 100.0% | | |")
    return lines
