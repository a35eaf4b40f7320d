"""A report as markdown: one table per library (``report --format markdown``).

The comparison's markdown is the PR comment (``builder.render.pr_comment``).
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import TYPE_CHECKING

from builder.render.download import DownloadColumn, download_line, wheel_file_rows, wheels_of
from builder.render.markup import md_code, md_text
from builder.render.provenance import provenance_line
from builder.render.rows import report_lines
from builder.render.text import (
    OVERHEAD_LABEL,
    grouping_text,
    human_size,
    origin,
    percent,
)
from builder.size.jit_rows import jit_breakdown

if TYPE_CHECKING:
    from builder.size.report import Report
    from builder.size.rollup import Rollup

__all__ = ["report_markdown"]


def report_markdown(reports: Sequence[Report], top: int | None = 20) -> str:
    """A markdown table per library: group, functions, bytes, share, cumulative share."""
    parts = []
    for report in reports:
        parts.append(f"### Size of {md_code(report.source.label)}\n")
        jit = jit_breakdown(report)
        if jit is not None:
            from builder.render.jit import report_jit_markdown

            if report.source.path is None:  # no metallib: the JIT units are the report
                parts += [*report_jit_markdown(report, jit, top), ""]
                continue
        parts.append(
            f"{human_size(report.file_size)} ({report.file_size:,} bytes), "
            f"{report.function_count:,} functions, format {md_text(report.format_version)}; "
            f"grouped by {report.by} ({md_text(grouping_text(report))}). "
            f"Measured in {md_code(origin(report))}.\n"
        )
        parts.append(f"<sub>{md_text(provenance_line(report.provenance))}</sub>\n")
        dl = DownloadColumn.of(report)
        parts.append(
            "| group | functions | size | share | cumulative |"
            + (" download | dl share |" if dl else "")
        )
        parts.append("|---|---:|---:|---:|---:|" + ("---:|---:|" if dl else ""))

        parts += _group_rows(report, top, dl)
        parts.append(
            f"| {OVERHEAD_LABEL} | | {human_size(report.overhead_bytes)} | "
            f"{percent(report.overhead_bytes, report.file_size)} | 100.0% |"
            + _cells(dl, dl.overhead if dl else 0)
        )
        line = download_line(report)
        if line is not None:
            parts += ["", md_text(line)]
        if jit is not None:
            parts += ["", *report_jit_markdown(report, jit, top)]
        parts.append("")
    for wheel in wheels_of(reports):
        summary = (
            f"{human_size(wheel.bytes)} wheel ({wheel.bytes:,} bytes), {len(wheel.files):,} files"
        )
        parts += [
            f"### Files in {md_code(wheel.path)}\n",
            f"{summary}; sizes from its zip directory.\n",
            "| file | size | download | dl share |",
            "|---|---:|---:|---:|",
        ]
        shown = wheel_file_rows(wheel, top)
        rest = [] if shown.rest is None else [(f"rest ({shown.rest_groups:,} files)", shown.rest)]
        parts += [
            f"| {name} | {human_size(f.bytes)} | {human_size(f.download_bytes or 0)} | "
            f"{percent(f.download_bytes or 0, wheel.bytes)} |"
            for name, f in [*((md_code(f.name), f) for f in shown.rows), *rest]
        ]
        headers = wheel.bytes - wheel.download_bytes
        total = sum(f.bytes for f in wheel.files)
        parts += [
            f"| [zip headers] | | {human_size(headers)} | {percent(headers, wheel.bytes)} |",
            f"| **total** | {human_size(total)} | **{human_size(wheel.bytes)}** | 100.0% |",
            "",
        ]
    return "\n".join(parts)


def _group_rows(report: Report, top: int | None, dl: DownloadColumn | None) -> list[str]:
    """The largest groups and the rest; with two ``--by`` keys each group's children follow it
    (marked ``↳``; the cumulative share counts groups only)."""
    whole = report.file_size

    def row(name: str, g: Rollup, cumulative: str) -> str:
        return (
            f"| {name} | {g.function_count:,} | {human_size(g.bytes)} | "
            f"{percent(g.bytes, whole)} | {cumulative} |" + _cells(dl, g.download_bytes)
        )

    lines = []
    for line in report_lines(report.groups, top):
        name = f"rest ({line.rest} groups)" if line.rest else md_code(line.row.name)
        cumulative = "" if line.cumulative is None else percent(line.cumulative, whole)
        lines.append(row(f"↳ {name}" if line.parent else name, line.row, cumulative))
    return lines


def _cells(column: DownloadColumn | None, value: int | None) -> str:
    """The download cells of a row (nothing without download figures)."""
    return "".join(f" {cell} |" for cell in column.cells(value)) if column else ""
