"""What a kernel tree says of a library, as lines of the tables, the markdown and the PR comment:
its warnings (``Report.warnings``: the lines stderr printed, such as a tree that does not match
the library, ``builder.size.tree_match``), the tree's kernels a comparison's head lost, and which
group holds the bytes no entry file produces (a row every table shows, never folded into the
rest).
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from builder.render.table import Said, Words
from builder.size.grouping import OTHER
from builder.size.tree_match import named_few

if TYPE_CHECKING:
    from builder.size.compare import Comparison
    from builder.size.report import Report

__all__ = ["missing_line", "report_lines", "unattributed_name", "warning_lines"]


def unattributed_name(by: str) -> str | None:
    """The group of the bytes no entry file produces (``builder.size.grouping.OTHER``) when
    ``by``'s first key is source: a row every table shows, never folded into the rest."""
    return OTHER if by.split(",")[0] == "source" else None


def warning_lines(report: Report, side: str = "") -> list[Words]:
    """``report``'s warnings, a line each, named by ``side`` (``base: ``) in a comparison."""
    return [("warning: ", side, Said(w)) for w in report.warnings]


def report_lines(report: Report) -> list[Words]:
    """The lines under a report's table: its warnings, and with a kernel tree whose every
    kernel it holds, that it does (a library lacking some has a warning naming them)."""
    held: list[Words] = [("every kernel of the tree is in the library",)]
    return warning_lines(report) + (held if report.tree_kernels_missing == [] else [])


def missing_line(comparison: Comparison) -> str | None:
    """With a kernel tree: how many of its kernels each side lacks (each side's tree is the
    one for its own platform), and how many of head's that base holds, the first few named.
    None without a tree."""
    sides = [
        (side, r.tree_kernels_missing)
        for side, r in (("base", comparison.base), ("head", comparison.head))
        if comparison.holds(r) and r.tree_kernels_missing is not None
    ]
    if not sides:
        return None
    line = "kernels of the tree not in the library: " + ", ".join(
        f"{side} {len(missing):,}" for side, missing in sides
    )
    head = comparison.head.tree_kernels_missing
    if comparison.change == "paired" and head is not None:
        held = {f.name for f in comparison.base.functions}
        lost = [name for name in head if name in held]  # sorted, as head's list is
        line += f"; {len(lost):,} that base holds are not in head"
        line += f": {named_few(lost)}" if lost else ""
    return line
