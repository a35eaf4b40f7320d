"""The budget's views: its table (``budget_table``: a row per limit, for the terminal, CSV and
the comment) and its sticky pull-request comment (``budget_markdown``: the verdict first, then
the table, failures first, cut to a hard length bound as ``compare``'s comment is,
``builder.render.pr_comment``). Pure: data in, string out.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import TYPE_CHECKING

from builder.render.first_line import headline
from builder.render.pr_comment import DEFAULT_LIMIT, LINE_CAP, NAME_CAP, Room
from builder.render.table import (
    CSV_ONLY,
    PEOPLE,
    Column,
    Name,
    Row,
    Said,
    Table,
    markdown_header,
    markdown_row,
)
from builder.render.text import clip, failure, gate_limit, gate_value, limit_label, md_text
from builder.render.verdict_words import counts

if TYPE_CHECKING:
    from builder.size.verdicts import Verdict

__all__ = ["BUDGET_MARKER", "budget_markdown", "budget_table"]

BUDGET_MARKER = "<!-- metallib-builder:budget-comment -->"
"""First line of the budget comment (the size comparison has its own marker)."""


def budget_markdown(
    verdicts: Sequence[Verdict],
    source: str,
    *,
    marker: str = BUDGET_MARKER,
    limit: int = DEFAULT_LIMIT,
    warnings: Sequence[str] = (),
) -> str:
    """The verdict first, then the budget's table (failures first); under ``limit`` UTF-8 bytes
    whatever the input (rows are capped, and the ones that do not fit are counted)."""
    failed = sum(not c.passed for c in verdicts)
    pairs = [(c, md_text(c.subject)) for c in verdicts]
    verdict = headline(pairs, "limits pass", lambda c, _: md_text(failure(c))) or ""
    if failed:  # what failed first, then how many of the limits
        verdict += f" (**{failed} of {len(verdicts)} limits exceeded**)"
    measured = sorted({m for c in verdicts for m in c.measured_in})
    footer = clip(
        f"<sub>Budgets from {md_text(source)}; measured in {md_text('; '.join(measured))}.</sub>",
        2000,
    )
    table = budget_table(verdicts, source)
    out = Room(limit - len(footer.encode()) - 1 - 200)
    out.add(marker, "### Metallib size budget", "", verdict, "")
    said = [clip(f"- ⚠️ warning: {md_text(w)}", LINE_CAP) for w in warnings]
    if out.fill(said, 2000):  # what stderr said of the libraries, room kept for the table
        out.add("")
    out.add(*markdown_header(table.columns))
    rows = sorted(table.rows, key=lambda r: bool(table.value(r, "passed")))  # failures first
    lines = (clip(markdown_row(table.columns, row, cap=NAME_CAP), LINE_CAP) for row in rows)
    shown = out.fill(lines, 0)
    if shown < len(rows):
        more = len(rows) - shown
        out.add(f"| … {more:,} more not shown (see `budget --format json`) | | | | |")
    return "\n".join([*out.lines, "", footer]) + "\n"


def budget_table(verdicts: Sequence[Verdict], source: str) -> Table:
    """The size-limit view: a row per limit (its check, limit, value and verdict), with where
    each value was measured; CSV gets the key, group and numbers as measured."""
    measured = sorted({m for c in verdicts for m in c.measured_in})
    columns = (
        Column("budget", "budget", "text"),
        Column("check", "check", "text", PEOPLE),
        Column("key", "key", "text", CSV_ONLY),
        Column("group", "group", "text", CSV_ONLY),
        Column("limit", "limit", "text", PEOPLE),
        Column("limit", "limit", "count", CSV_ONLY),
        Column("value", "value", "text", PEOPLE),
        Column("value", "value", "count", CSV_ONLY),
        Column("counts", "counts", "text", CSV_ONLY),
        Column("passed", "result", "verdict"),
    )
    rows = tuple(
        Row(
            (
                Name(c.subject),
                Name(limit_label(c)),
                c.name,
                c.group,
                gate_limit(c),
                c.limit_text or c.limit,
                gate_value(c),
                c.value_text or c.value,
                counts(c),
                c.passed,
            )
        )
        for c in verdicts
    )
    return Table(
        columns,
        rows,
        title=("Size budgets (", Said(source), ")"),
        caption=(("measured in ", Said("; ".join(measured))),),
    )
