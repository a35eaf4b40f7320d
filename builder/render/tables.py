"""Reports and comparisons as rich tables for people (``--format table``).

``rich`` is imported inside the functions, so the JSON and CSV paths never load it. Every table
names the measured file(s) in its caption.
"""

from __future__ import annotations

import io
from collections.abc import Sequence
from typing import TYPE_CHECKING

from builder.render.checks import gate_message
from builder.render.download import (
    DownloadColumn,
    compare_download_line,
    download_line,
    wheel_file_rows,
    wheels_of,
)
from builder.render.markup import print_table, rich_text, text_console
from builder.render.pairs import pair_sides
from builder.render.provenance import provenance_line
from builder.render.rows import delta_rows, report_lines
from builder.render.text import (
    OVERHEAD_LABEL,
    grouping_text,
    human_delta,
    human_size,
    origin,
    percent,
    signed_percent,
    visible,
)
from builder.size.jit_rows import by_strings, jit_breakdown

if TYPE_CHECKING:
    from rich.table import Table

    from builder.size.checks import Check
    from builder.size.compare import Comparison
    from builder.size.download_report import WheelFiles
    from builder.size.report import Report
    from builder.size.rollup import FunctionRow, Rollup

__all__ = ["compare_table", "report_table"]


def report_table(
    reports: Sequence[Report],
    top: int | None = 20,
    *,
    color: bool = False,
    width: int | None = 100,
) -> str:
    """The human view: a rich table per library, sorted by bytes, with a rest row.

    ``width`` None (stdout is not a terminal): each table as wide as its cells need, so no
    function name is ever cut."""
    from rich.markup import escape
    from rich.table import Table

    out = io.StringIO()
    console = text_console(out, color=color, width=width)
    for report in reports:
        jit = jit_breakdown(report)
        if jit is not None:
            from builder.render.jit import report_jit_table

            if report.source.path is None:  # no metallib: the JIT units are the report
                report_jit_table(report, jit, console, top, fit=width is None)
                continue
        table = Table(
            title=rich_text(report.source.label)
            + escape(
                f": {human_size(report.file_size)}, "
                f"{report.function_count:,} functions, by {report.by}"
            ),
            caption=(
                f"measured in {rich_text(origin(report))}; "
                f"grouping: {rich_text(grouping_text(report))}\n"
                f"{rich_text(provenance_line(report.provenance))}"
            ),
            title_justify="left",
            caption_justify="left",
        )
        table.add_column(report.by)
        table.add_column("functions", justify="right")
        table.add_column("size", justify="right")
        table.add_column("bytes", justify="right")
        table.add_column("share", justify="right")
        table.add_column("cumulative", justify="right")
        dl = DownloadColumn.of(report)
        if dl is not None:
            table.add_column("download", justify="right")
            table.add_column("dl share", justify="right")
        _group_rows(table, report, top, dl)
        table.add_row(
            escape(OVERHEAD_LABEL),
            "",
            human_size(report.overhead_bytes),
            f"{report.overhead_bytes:,}",
            percent(report.overhead_bytes, report.file_size),
            "100.0%" if report.file_size else "-",
            *(dl.cells(dl.overhead) if dl else ()),
            style="dim",
        )
        table.add_section()
        table.add_row(
            "total",
            f"{report.function_count:,}",
            human_size(report.file_size),
            f"{report.file_size:,}",
            "100.0%" if report.file_size else "-",
            "",
            *(dl.cells(dl.total) if dl else ()),
            style="bold",
        )
        print_table(console, table, fit=width is None)
        line = download_line(report)
        if line is not None:
            console.print(rich_text(line), highlight=False)
        if jit is not None:
            report_jit_table(report, jit, console, top, fit=width is None)
    for wheel in wheels_of(reports):
        print_table(console, _wheel_table(wheel, top), fit=width is None)
    return out.getvalue()


def _group_rows(table: Table, report: Report, top: int | None, dl: DownloadColumn | None) -> None:
    """The largest groups with their share and the cumulative share, then the rest; with two
    ``--by`` keys each group's children follow it, indented (cumulative counts groups only)."""
    whole = report.file_size

    def cells(g: Rollup) -> list[str]:
        return [
            f"{g.function_count:,}",
            human_size(g.bytes),
            f"{g.bytes:,}",
            percent(g.bytes, whole),
        ]

    def extra(g: Rollup) -> tuple[str, ...]:
        return dl.cells(g.download_bytes) if dl else ()

    for line in report_lines(report.groups, top):
        g = line.row
        name = f"rest ({line.rest} groups)" if line.rest else rich_text(g.name)
        table.add_row(
            "  └ " + name if line.parent else name,
            *cells(g),
            "" if line.cumulative is None else percent(line.cumulative, whole),
            *extra(g),
            style="dim" if line.rest else "",
        )


def _wheel_table(wheel: WheelFiles, top: int | None) -> Table:
    """Every file of a wheel (the largest ``top``), with the zip's real compressed sizes."""
    from rich.markup import escape
    from rich.table import Table

    table = Table(
        title=rich_text(wheel.path) + f": {human_size(wheel.bytes)} wheel, "
        f"{len(wheel.files):,} files",
        title_justify="left",
        caption="bytes and download (compressed) bytes from the wheel's zip directory",
        caption_justify="left",
    )
    for column, justify in (
        ("file", "left"),
        ("size", "right"),
        ("download", "right"),
        ("dl share", "right"),
    ):
        table.add_column(column, justify=justify)  # type: ignore[arg-type]
    shown = wheel_file_rows(wheel, top)
    rest = [] if shown.rest is None else [(f"rest ({shown.rest_groups:,} files)", shown.rest)]
    for name, f in [*((rich_text(f.name), f) for f in shown.rows), *rest]:
        table.add_row(
            name,
            human_size(f.bytes),
            human_size(f.download_bytes or 0),
            percent(f.download_bytes or 0, wheel.bytes),
            style="dim" if f is shown.rest else "",
        )
    table.add_row(
        escape("[zip headers]"),
        "",
        human_size(wheel.bytes - wheel.download_bytes),
        percent(wheel.bytes - wheel.download_bytes, wheel.bytes),
        style="dim",
    )
    table.add_section()
    table.add_row(
        "total (the wheel file)",
        human_size(sum(f.bytes for f in wheel.files)),
        human_size(wheel.bytes),
        "100.0%",
        style="bold",
    )
    return table


def name_list(rows: Sequence[FunctionRow], limit: int) -> str:
    return ", ".join(f"{visible(r.name)} ({human_size(r.bytes)})" for r in rows[:limit])


def compare_table(
    comparison: Comparison,
    gates: Sequence[Check] = (),
    top: int | None = 20,
    *,
    color: bool = False,
    width: int | None = 100,
) -> str:
    """The human view of a comparison: the metallib table (skipped when neither side has a
    metallib), the JIT units' table (builds with JIT units), notes and gate verdicts."""
    from rich.markup import escape

    out = io.StringIO()
    console = text_console(out, color=color, width=width)
    if not comparison.jit_only:
        print_table(console, _metallib_delta_table(comparison, top), fit=width is None)
        line = compare_download_line(comparison)
        if line is not None:
            console.print(escape(line), highlight=False)
    if comparison.jit is not None:
        print_table(console, _jit_delta_table(comparison, top), fit=width is None)
    if not comparison.jit_only:
        for label, rows, sign in (
            ("added", comparison.added, 1),
            ("removed", comparison.removed, -1),
        ):
            total = sum(r.bytes for r in rows)
            console.print(
                escape(
                    f"functions {label}: {len(rows):,} ({human_delta(sign * total)})"
                    + (f"; largest: {name_list(rows, 5)}" if rows else "")
                ),
                highlight=False,
            )
    for note in comparison.notes:
        console.print("note: " + rich_text(note), highlight=False)
    for gate in gates:
        console.print(
            ("PASS " if gate.passed else "FAIL ") + rich_text(gate_message(gate)), highlight=False
        )
    return out.getvalue()


def _download_cells(base: int | None, head: int | None) -> tuple[str, ...]:
    if base is None or head is None:
        return ()
    return human_size(base), human_size(head), human_delta(head - base)


def _delta_table(
    title: str,
    caption: str,
    key: str,
    rows: Sequence[tuple[Rollup, str]],
    total: Sequence[str],
    *,
    counts: str | None = "fns",
    overhead_counts: bool = True,
    download: bool = False,
) -> Table:
    """A joined table (``builder.size.rollup.join``, rows from ``delta_rows``): counts (none
    when ``counts`` is None) and bytes of base and head, the delta, then ``total``."""
    from rich.table import Table

    table = Table(title=title, caption=caption, title_justify="left", caption_justify="left")
    table.add_column(key)
    downloads = ("dl base", "dl head", "dl delta") if download else ()
    count_columns = (f"{counts} base", f"{counts} head") if counts else ()
    for col in (*count_columns, "base", "head", "delta", "delta %", *downloads):
        table.add_column(col, justify="right")
    for g, style in rows:
        assert g.base_bytes is not None
        shown = overhead_counts or not g.overhead
        cells = (f"{g.base_function_count:,}", f"{g.function_count:,}") if shown else ("", "")
        table.add_row(
            rich_text(g.name),
            *(cells if counts else ()),
            human_size(g.base_bytes),
            human_size(g.bytes),
            human_delta(g.delta),
            signed_percent(g.percent),
            *(_download_cells(g.base_download_bytes, g.download_bytes) if download else ()),
            style=style,
        )
    table.add_section()
    table.add_row(*(total if counts else (total[0], *total[3:])), style="bold")
    return table


def _metallib_delta_table(comparison: Comparison, top: int | None) -> Table:
    """The rich table of a comparison's metallib groups."""
    base, head = comparison.base, comparison.head
    names = pair_sides(comparison)
    title = (
        f"{rich_text(names[0])} → {rich_text(names[1])}: "
        f"{human_delta(comparison.delta)} ({signed_percent(comparison.percent)})"
    )
    sides = (("base", base, names[0]), ("head", head, names[1]))
    lines = [f"{s}: {rich_text(origin(r) if comparison.holds(r) else n)}" for s, r, n in sides]
    held = [(s, r) for s, r, _ in sides if comparison.holds(r)]
    lines += [f"{s} {rich_text(provenance_line(r.provenance))}" for s, r in held]
    caption = "\n".join(lines)
    total = [
        "total",
        f"{base.function_count:,}",
        f"{head.function_count:,}",
        human_size(comparison.base_size),
        human_size(comparison.head_size),
        human_delta(comparison.delta),
        signed_percent(comparison.percent),
        *_download_cells(
            base.download.total if base.download else None,
            head.download.total if head.download else None,
        ),
    ]
    rows = delta_rows(comparison.groups, top, "groups")
    download = comparison.download_delta is not None
    return _delta_table(title, caption, head.by, rows, total, download=download)


def _jit_delta_table(comparison: Comparison, top: int | None) -> Table:
    """The JIT comparison: per unit, the host-library bytes on both sides."""
    from rich.markup import escape

    jit = comparison.jit
    assert jit is not None
    base, head = comparison.base, comparison.head
    what = "JIT host library" if jit.host_measured else "embedded JIT source"
    caption = [
        f"base measured: {rich_text(jit.base_origin or 'no JIT unit')}",
        f"head measured: {rich_text(jit.head_origin or 'no JIT unit')}",
    ]
    sources = by_strings(base) and by_strings(head)  # two shipped host libraries
    if comparison.jit_only:
        caption += [
            "no metallib on either side: "
            + (
                "the run-time sources the host libraries embed"
                if sources
                else "every unit is compiled at run time"
            ),
            f"base {rich_text(provenance_line(base.provenance))}",
            f"head {rich_text(provenance_line(head.provenance))}",
        ]
    names = pair_sides(comparison)
    title = f"{rich_text(names[0])} → {rich_text(names[1])}: " + escape(
        f"{what} {human_size(jit.base_total)} → {human_size(jit.head_total)}, "
        f"{human_delta(jit.delta)} ({signed_percent(jit.percent)})"
    )
    units = [g for g in jit.groups if not g.overhead]
    total = [
        "total",
        f"{sum(g.base_function_count or 0 for g in units):,}",
        f"{sum(g.function_count for g in units):,}",
        human_size(jit.base_total),
        human_size(jit.head_total),
        human_delta(jit.delta),
        signed_percent(jit.percent),
    ]
    rows = delta_rows(jit.groups, top, "units")
    return _delta_table(
        title,
        "\n".join(caption),
        "run-time source" if sources else "JIT unit",
        rows,
        total,
        counts=None if sources else "kernels",  # a shipped host library counts no kernels
        overhead_counts=False,
    )
