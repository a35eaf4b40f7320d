"""Checks (``builder.size.checks.Check``) for people and machines: a gate's line for ``compare``,
and for ``budget`` one table (budget, limit, value, result) as size-limit prints it, JSON, and
markdown that is both the step summary and the sticky PR comment.

Pure: checks in, text out. Names (budgets from the file, groups from a metallib) pass through
the medium's escaping (``builder.render.text``).
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import TYPE_CHECKING

from builder.render.table import (
    PEOPLE,
    Column,
    Name,
    Row,
    Said,
    Table,
    markdown_header,
    markdown_row,
)
from builder.render.text import clip, human_delta, human_size, limit_text, md_text
from builder.size.checks import GROWTH

if TYPE_CHECKING:
    from builder.size.checks import Check

__all__ = [
    "MARKER",
    "budget_markdown",
    "budget_table",
    "check_label",
    "failures",
    "gate_message",
]

CSV_ONLY = frozenset({"csv"})
MARKER = "<!-- metallib-builder:budget-comment -->"
"""First line of the budget comment (the size comparison has its own marker)."""
_LIMIT = 60_000


def check_label(check: Check) -> str:
    """``max-size``, ``group quantized``, ``max-growth 1%``."""
    if check.name == "groups":
        return f"group {check.group}"
    if check.growth is not None:
        return f"{check.name} {limit_text(check.growth)}"
    return check.name


def _amount(check: Check, n: int) -> str:
    if check.name == "max-functions":
        return f"{n:,} functions"
    if check.name in GROWTH:
        return human_delta(n)
    return human_size(n)


def _percent(check: Check) -> str:
    return "" if check.percent is None else f" ({check.percent:+.2f}%)"


def _value(check: Check) -> str:
    return _amount(check, check.value) + (_percent(check) if check.name in GROWTH else "")


def _limit(check: Check) -> str:
    if check.name in GROWTH and check.base_value is not None:
        return f"{human_size(check.limit)} (of {human_size(check.base_value)})"
    return _amount(check, check.limit).lstrip("+")


def gate_message(gate: Check) -> str:
    """A ``compare`` gate's verdict in one line, named by its option (the CLI, tables, markdown,
    HTML and JSON)."""
    option = f"--{gate.name}"
    if gate.name in GROWTH and gate.growth is not None:
        return (
            f"{option} {limit_text(gate.growth)}: {gate.subject} grew by "
            f"{human_delta(gate.value)}{_percent(gate)}; allowed {human_size(gate.limit)}"
        )
    if gate.name == "fail-on-new-group":
        new = gate.new_groups
        return f"{option}: " + (f"new groups in head: {', '.join(new)}" if new else "no new groups")
    size = human_size(gate.value)
    return f"{option} {human_size(gate.limit)}: {gate.subject} is {size} ({gate.value:,} bytes)"


def failures(checks: Sequence[Check]) -> list[str]:
    """One phrase per failed budget limit: ``mlx: group quantized is 67.38 MB, limit 30.00 MB``."""
    return [
        f"{c.subject}: {check_label(c)} is {_value(c)}, limit {_limit(c)}"
        for c in checks
        if not c.passed
    ]


def budget_table(checks: Sequence[Check], source: str) -> Table:
    """The size-limit view: a row per limit (its check, limit, value and verdict), with where
    each value was measured; CSV gets the key, group and numbers as measured."""
    measured = sorted({m for c in checks for m in c.measured_in})
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
                Name(check_label(c)),
                c.name,
                c.group,
                _limit(c),
                c.limit,
                _value(c),
                c.value,
                "functions" if c.name == "max-functions" else "bytes",
                c.passed,
            )
        )
        for c in checks
    )
    return Table(
        columns,
        rows,
        title=("Size budgets (", Said(source), ")"),
        caption=(("measured in ", Said("; ".join(measured))),),
    )


def budget_markdown(
    checks: Sequence[Check], source: str, *, marker: str = MARKER, limit: int = _LIMIT
) -> str:
    """The verdict first, then the table (failures first); under ``limit`` UTF-8 bytes whatever
    the input (rows are capped, and the ones that do not fit are counted)."""
    failed = sum(not c.passed for c in checks)
    verdict = (
        f"❌ **{failed} of {len(checks)} limits exceeded**"
        if failed
        else f"✅ all {len(checks)} limits pass"
    )
    measured = sorted({m for c in checks for m in c.measured_in})
    footer = clip(
        f"<sub>Budgets from {md_text(source)}; measured in {md_text('; '.join(measured))}.</sub>",
        2000,
    )
    table = budget_table(checks, source)
    lines = [marker, "### Metallib size budget", "", verdict, "", *markdown_header(table.columns)]
    left = limit - sum(len(x.encode()) + 1 for x in [*lines, footer]) - 200
    rows = sorted(table.rows, key=lambda r: bool(table.value(r, "passed")))  # failures first
    for shown, row in enumerate(rows):
        line = clip(markdown_row(table.columns, row, cap=160), 600)
        if len(line.encode()) + 1 > left:
            more = len(rows) - shown
            lines.append(f"| … {more:,} more not shown (see `budget --format json`) | | | | |")
            break
        lines.append(line)
        left -= len(line.encode()) + 1
    return "\n".join([*lines, "", footer]) + "\n"
