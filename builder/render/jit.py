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
from builder.size.jit_rows import by_strings

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
    if by_strings(report):  # a shipped host library: its run-time sources are the report
        return ["no metallib: the run-time sources the host library embeds"]
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


def _lines(jit: JitBreakdown, top: int | None, report: Report) -> list[_Line]:
    shown = top_rows(jit.units, top)
    rows = [(r.name, False, r) for r in shown.rows]
    if shown.rest is not None:
        what = "run-time sources" if by_strings(report) else "units"
        rows.append((f"rest ({shown.rest_groups} {what})", True, shown.rest))
    rows += [(o.name, True, o) for o in jit.overhead]
    out, cumulative = [], 0
    for name, plain, row in rows:
        cumulative += row.bytes
        out.append(_Line(name, plain, row, cumulative))
    return out


def _counted(report: Report, jit: JitBreakdown) -> str:
    """What the rows are, counted: ``3 units (92 kernels) compiled at run time``, or for a
    shipped host library ``12 run-time sources``."""
    if by_strings(report):
        return f"{len(jit.units):,} run-time sources"
    kernels = sum(r.function_count for r in jit.units)
    return f"{len(jit.units):,} units ({kernels:,} kernels) compiled at run time"


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
        + escape(f": {jit_headline(jit)}, {_counted(report, jit)}"),
        caption=caption,
        title_justify="left",
        caption_justify="left",
    )
    # a discovered tree's build with entry files embedded whole says which
    how = {j.name: j.embedding for j in report.jit_units}
    whole = "whole-file" in how.values()
    # a shipped host library's run-time sources have no kernel count and no manifest's bytes
    counts = not by_strings(report)
    first = "JIT unit" if counts else "run-time source"
    names = (first, *(("embedding",) if whole else ()), *(("kernels",) if counts else ()))
    for name in (*names, "size", "bytes", "share", "cumulative", *(("embedded",) * counts)):
        table.add_column(name, justify="left" if name in (first, "embedding") else "right")
    for line in _lines(jit, top, report):
        r = line.row
        table.add_row(
            escape(line.name) if line.plain else rich_text(line.name),
            *(("" if r.overhead or line.plain else how.get(line.name, ""),) if whole else ()),
            *(("" if r.overhead else f"{r.function_count:,}",) * counts),
            human_size(r.bytes),
            f"{r.bytes:,}",
            percent(r.bytes, jit.total),
            percent(line.cumulative, jit.total),
            *((_embedded(r),) * counts),
            style="dim" if line.plain else "",
        )
    table.add_section()
    table.add_row(
        "total",
        *(("",) if whole else ()),
        *((f"{kernels:,}",) * counts),
        human_size(jit.total),
        f"{jit.total:,}",
        "100.0%" if jit.total else "-",
        "",
        *(("",) * counts),
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
        f"{jit_headline(jit)} ({jit.total:,} bytes), {_counted(report, jit)}. "
        f"Measured: {md_text(jit.origin)}.\n"
    )
    lines += [f"<sub>{md_text(note)}</sub>\n" for note in _notes(report)]
    if report.source.path is None:
        lines.append(f"<sub>{md_text(provenance_line(report.provenance))}</sub>\n")
    how = {j.name: j.embedding for j in report.jit_units}
    whole = "whole-file" in how.values()  # the column only when some unit is embedded whole
    counts = not by_strings(report)  # as in the table
    first = "JIT unit" if counts else "run-time source"
    lines += [
        f"| {first} |{' embedding |' if whole else ''}{' kernels |' * counts} size | share | "
        + f"cumulative |{' embedded |' * counts}",
        f"|---|{'---|' if whole else ''}{'---:|' * counts}---:|---:|---:|{'---:|' * counts}",
    ]
    for line in _lines(jit, top, report):
        r = line.row
        name = line.name if line.plain else md_code(line.name)
        embedding = how.get(line.name, "") if not (r.overhead or line.plain) else ""
        kernel_cell = f"{'' if r.overhead else f' {r.function_count:,}'} |" * counts
        lines.append(
            f"| {name} |{f' {embedding} |' if whole else ''}{kernel_cell} "
            f"{human_size(r.bytes)} | {percent(r.bytes, jit.total)} | "
            f"{percent(line.cumulative, jit.total)} |{f' {_embedded(r)} |' * counts}".replace(
                "|  |", "| |"
            )
        )
    total = f"| **total** |{' |' if whole else ''}{f' {kernels:,} |' * counts}"
    lines.append(f"{total} {human_size(jit.total)} | 100.0% | |{' |' * counts}")
    return lines
