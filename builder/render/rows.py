"""Which rows a table shows: the largest groups, and the rest folded into one row."""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from builder.size.compare import Comparison
    from builder.size.report import Report

__all__ = ["compare_rows", "top_rows"]


def top_rows(report: Report, top: int | None) -> tuple[list[tuple[str, int, int]], int, int]:
    """The group rows to show (name, count, bytes), plus the rest (count, bytes) past ``top``."""
    rows = [(g.name, g.function_count, g.bytes) for g in report.groups]
    if top is None or top >= len(rows):
        return rows, 0, 0
    rest = rows[top:]
    return rows[:top], sum(r[1] for r in rest), sum(r[2] for r in rest)


def compare_rows(comparison: Comparison, top: int | None) -> tuple[list[Any], Any, Any]:
    """Groups to show (top N by |delta|), a folded rest (or None), and the overhead row."""
    from builder.size.compare import GroupDelta

    groups = [g for g in comparison.groups if not g.overhead]
    overhead = next(g for g in comparison.groups if g.overhead)
    if top is None or top >= len(groups):
        return groups, None, overhead
    rest = groups[top:]
    folded = GroupDelta(f"rest ({len(rest)} groups)", sum(g.base_bytes for g in rest),
                        sum(g.head_bytes for g in rest), sum(g.base_count for g in rest),
                        sum(g.head_count for g in rest), False, *download_sums(rest))  # fmt: skip
    return groups[:top], folded, overhead


def download_sums(groups: list[Any]) -> tuple[int | None, int | None]:
    """The download bytes of folded groups on both sides (None without download figures)."""
    if not groups or groups[0].base_download is None:
        return None, None
    return sum(g.base_download for g in groups), sum(g.head_download for g in groups)
