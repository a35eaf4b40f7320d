"""Budget checks for people and machines: one table (budget, limit, value, result), as size-limit
prints it; JSON; and markdown that is both the step summary and the sticky PR comment.

Pure: ``BudgetCheck`` rows in, text out. Names (budgets from the file, groups from a metallib)
pass through the medium's escaping (``builder.render.markup``).
"""

from __future__ import annotations

import io
from collections.abc import Sequence
from typing import TYPE_CHECKING, Any

from builder.files.jsontext import dumps
from builder.render.markup import clip, md_code, md_text, rich_text
from builder.render.text import human_delta, human_size, limit_text

if TYPE_CHECKING:
    from builder.size.budget import BudgetCheck

__all__ = ["MARKER", "budget_json", "budget_markdown", "budget_table", "check_label", "failures"]

MARKER = "<!-- metallib-builder:budget-comment -->"
"""First line of the budget comment (the size comparison has its own marker)."""
_LIMIT = 60_000


def check_label(check: BudgetCheck) -> str:
    """``max-size``, ``group quantized``, ``max-growth 1%``."""
    if check.key == "groups":
        return f"group {check.group}"
    if check.key == "max-growth" and check.growth is not None:
        return f"max-growth {limit_text(check.growth)}"
    return check.key


def _amount(check: BudgetCheck, n: int) -> str:
    if check.key == "max-functions":
        return f"{n:,} functions"
    if check.key == "max-growth":
        return human_delta(n)
    return human_size(n)


def _value(check: BudgetCheck) -> str:
    text = _amount(check, check.value)
    if check.key == "max-growth" and check.base_value:
        text += f" ({100.0 * check.value / check.base_value:+.2f}%)"
    return text


def _limit(check: BudgetCheck) -> str:
    if check.key == "max-growth" and check.base_value is not None:
        return f"{human_size(check.limit)} (of {human_size(check.base_value)})"
    return _amount(check, check.limit).lstrip("+")


def failures(checks: Sequence[BudgetCheck]) -> list[str]:
    """One phrase per failed check: ``mlx: group quantized is 67.38 MB, limit 30.00 MB``."""
    return [
        f"{c.budget}: {check_label(c)} is {_value(c)}, limit {_limit(c)}"
        for c in checks
        if not c.passed
    ]


def budget_table(
    checks: Sequence[BudgetCheck], source: str, *, color: bool = False, width: int = 100
) -> str:
    """The size-limit view: a row per limit, pass or FAIL, and where each value was measured."""
    from rich.console import Console
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
            rich_text(c.budget),
            rich_text(check_label(c)),
            escape(_limit(c)),
            escape(_value(c)),
            "pass" if c.passed else "FAIL",
            style="" if c.passed else "bold red",
        )
    out = io.StringIO()
    Console(file=out, force_terminal=color, no_color=not color, width=width, emoji=False).print(
        table
    )
    return out.getvalue()


def budget_json(checks: Sequence[BudgetCheck], source: str) -> str:
    """``{"schema": 1, "kind": "budget", "file", "passed", "checks": [...]}``; every figure in
    bytes (functions for ``max-functions``) with the files it was measured in."""
    from builder.size.report import SCHEMA

    def row(c: BudgetCheck) -> dict[str, Any]:
        doc: dict[str, Any] = {
            "budget": c.budget,
            "key": c.key,
            "group": c.group,
            "limit": c.limit,
            "value": c.value,
            "passed": c.passed,
            "unit": "functions" if c.key == "max-functions" else "bytes",
            "measured_in": list(c.measured_in),
        }
        if c.growth is not None:
            doc.update(max_growth=limit_text(c.growth), base_value=c.base_value)
        return doc

    doc = {
        "schema": SCHEMA,
        "kind": "budget",
        "file": source,
        "passed": all(c.passed for c in checks),
        "checks": [row(c) for c in checks],
    }
    return dumps(doc, indent=1) + "\n"


def budget_markdown(
    checks: Sequence[BudgetCheck], source: str, *, marker: str = MARKER, limit: int = _LIMIT
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
            f"| {md_code(c.budget, 120)} | {md_code(check_label(c), 160)} | {_limit(c)} | "
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
