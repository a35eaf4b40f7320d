"""A report as markdown: one table per library (``report --format markdown``).

The comparison's markdown is the PR comment (``builder.render.pr_comment``).
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import TYPE_CHECKING

from builder.render.markup import md_code, md_text
from builder.render.provenance import provenance_line
from builder.render.rows import top_rows
from builder.render.text import (
    OVERHEAD_LABEL,
    human_size,
    origin,
    percent,
)
from builder.size.jit_rows import jit_breakdown

if TYPE_CHECKING:
    from builder.size.report import Report

__all__ = ["report_markdown"]


def report_markdown(reports: Sequence[Report], top: int | None = 20) -> str:
    """A markdown table per library: group, functions, bytes, share, cumulative share."""
    parts = []
    for report in reports:
        parts.append(f"### Size of {md_code(report.source.label)}\n")
        jit = jit_breakdown(report)
        if jit is not None:
            from builder.render.jit import report_jit_markdown

            if report.source.path is None:  # no metallib: the JIT families are the report
                parts += [*report_jit_markdown(report, jit, top), ""]
                continue
        parts.append(
            f"{human_size(report.file_size)} ({report.file_size:,} bytes), "
            f"{report.function_count:,} functions, format {md_text(report.format_version)}; "
            f"grouped by {report.by} ({md_text(report.grouping)}). "
            f"Measured in {md_code(origin(report))}.\n"
        )
        parts.append(f"<sub>{md_text(provenance_line(report.provenance))}</sub>\n")
        parts.append("| group | functions | size | share | cumulative |")
        parts.append("|---|---:|---:|---:|---:|")
        cumulative = 0
        shown, rest_count, rest_bytes = top_rows(report, top)
        for name, count, size in shown:
            cumulative += size
            parts.append(
                f"| {md_code(name)} | {count:,} | {human_size(size)} | {percent(size, report.file_size)} "
                f"| {percent(cumulative, report.file_size)} |"
            )
        if rest_count:
            cumulative += rest_bytes
            parts.append(
                f"| rest ({len(report.groups) - len(shown)} groups) | {rest_count:,} | "
                f"{human_size(rest_bytes)} | {percent(rest_bytes, report.file_size)} | "
                f"{percent(cumulative, report.file_size)} |"
            )
        parts.append(
            f"| {OVERHEAD_LABEL} | | {human_size(report.overhead_bytes)} | "
            f"{percent(report.overhead_bytes, report.file_size)} | 100.0% |"
        )
        if jit is not None:
            parts += ["", *report_jit_markdown(report, jit, top)]
        parts.append("")
    return "\n".join(parts)
