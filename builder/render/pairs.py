"""How a comparison names the libraries of its two sides, when a library is on one side only
(``builder.size.compare.Comparison.change``): for tables, the PR comment and the HTML page."""

from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import TYPE_CHECKING

from builder.render.text import visible

if TYPE_CHECKING:
    from builder.size.compare import Comparison

__all__ = ["pair_sides", "pairs_summary"]


def pair_sides(comparison: Comparison) -> tuple[str, str]:
    """How a comparison's base and head are named: each side's library, or for a library on
    one side only, what the other side lacks (``not in base`` for an added one)."""
    base, head = comparison.base.source.label, comparison.head.source.label
    if comparison.change == "added":
        return "(not in base)", head
    if comparison.change == "removed":
        return base, "(not in head)"
    return base, head


def pairs_summary(
    comparisons: Sequence[Comparison], name: Callable[[str], str] | None = None
) -> str | None:
    """``libraries: 11 paired, 2 added (a, b), 1 removed (c)`` when the two targets' libraries
    did not all pair (None when they did): which library is on one side only, each name shown
    by ``name`` (default ``visible``)."""
    show = name or visible
    added = [c.library.source.label for c in comparisons if c.change == "added"]
    removed = [c.library.source.label for c in comparisons if c.change == "removed"]
    if not added and not removed:
        return None
    paired = len(comparisons) - len(added) - len(removed)
    parts = [f"libraries: {paired:,} paired"]
    for word, names in (("added", added), ("removed", removed)):
        if names:
            parts.append(f"{len(names):,} {word} ({', '.join(show(n) for n in names)})")
    return ", ".join(parts)
