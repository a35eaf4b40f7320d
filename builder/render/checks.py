"""Checks (``builder.size.checks.Check``) for people and machines: a gate's line for ``compare``,
and for ``budget`` one table (budget, limit, value, result) as size-limit prints it, JSON, and
markdown that is both the step summary and the sticky PR comment.

Pure: checks in, text out. Names (budgets from the file, groups from a metallib) pass through
the medium's escaping (``builder.render.markup``).
"""

from __future__ import annotations

import io
from collections.abc import Sequence
from typing import TYPE_CHECKING

from builder.render.markup import clip, md_code, md_text, print_table, rich_text, text_console
from builder.render.text import human_delta, human_size, limit_text
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


def budget_table(
    checks: Sequence[Check], source: str, *, color: bool = False, width: int | None = 100
) -> str:
    """The size-limit view: a row per limit, pass or FAIL, and where each value was measured
    (``width`` None: not a terminal, nothing wrapped or cut)."""
    from rich.markup import escape
    from rich.table import Table

    measured = sorted({m for c in checks for m in c.measured_in})
    table = Table(
        title=escape(f"Size budgets ({source})"),
        title_justify="left",
        caption="measured in " + rich_text("; ".join(measured)),
        caption_justify="left",
    )
    for column, justify in (
        ("budget", "left"),
        ("check", "left"),
        ("limit", "right"),
        ("value", "right"),
        ("result", "left"),
    ):
        table.add_column(column, justify=justify)  # type: ignore[arg-type]
    for c in checks:
        table.add_row(
            rich_text(c.subject),
            rich_text(check_label(c)),
            escape(_limit(c)),
            escape(_value(c)),
            "pass" if c.passed else "FAIL",
            style="" if c.passed else "bold red",
        )
    out = io.StringIO()
    print_table(text_console(out, color=color, width=width), table, fit=width is None)
    return out.getvalue()


def budget_markdown(
    checks: Sequence[Check], source: str, *, marker: str = MARKER, limit: int = _LIMIT
) -> str:
    """The verdict first, then the table; under ``limit`` UTF-8 bytes whatever the input (rows
    are capped, and the ones that do not fit are counted)."""
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
    lines = [
        marker,
        "### Metallib size budget",
        "",
        verdict,
        "",
        "| budget | check | limit | value | result |",
        "|---|---|---:|---:|---|",
    ]
    left = limit - sum(len(x.encode()) + 1 for x in [*lines, footer]) - 200
    rows = sorted(checks, key=lambda c: c.passed)  # failures first
    for shown, c in enumerate(rows):
        row = clip(
            f"| {md_code(c.subject, 120)} | {md_code(check_label(c), 160)} | {_limit(c)} | "
            f"{_value(c)} | {'✅ pass' if c.passed else '❌ **FAIL**'} |",
            600,
        )
        if len(row.encode()) + 1 > left:
            lines.append(
                f"| … {len(rows) - shown:,} more not shown (see `budget --format json`) | | | | |"
            )
            break
        lines.append(row)
        left -= len(row.encode()) + 1
    return "\n".join([*lines, "", footer]) + "\n"
