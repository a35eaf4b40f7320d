"""Which renderer draws a size result in each output format: the one dispatch ``report``,
``compare``, ``budget`` and ``history`` share, so a command is parse, call, render.

Heavy renderers (rich, the HTML page) are imported only for the format asked for, so
``report --format json`` pays for none of them.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from builder.render.library import Found
    from builder.size.attribution import BinaryAccount
    from builder.size.checks import Check, Evaluated
    from builder.size.history import LibraryHistory
    from builder.size.report import Report

__all__ = [
    "budget_output",
    "comparison_output",
    "history_output",
    "report_output",
    "shown_top",
    "sources_output",
]


def shown_top(top: int | None, kind: str) -> int | None:
    """``--top`` for ``kind``: by default 20 rows for people, all for machines; 0 is all."""
    if top is None:
        return None if kind in ("csv", "json") else 20
    return None if top <= 0 else top


def report_output(
    reports: Sequence[Report],
    kind: str,
    top: int | None,
    color: bool,
    width: int | None,
    binaries: Sequence[BinaryAccount] = (),
) -> str:
    """``report --format kind``; ``binaries``: the account of each binary the libraries sit in
    (tables after the libraries', ``binaries`` in JSON; not in HTML)."""
    if kind == "html":
        from builder.render.html import report_html

        return report_html(reports)
    if kind == "json":
        from builder.render.json_docs import report_json

        return report_json(reports, binaries)
    from builder.render.report_tables import report_tables
    from builder.render.table import written

    tables = report_tables(reports, shown_top(top, kind), binaries)
    return written(tables, kind, color=color, width=width)


def comparison_output(
    evaluated: Evaluated, kind: str, top: int | None, color: bool, width: int | None
) -> str:
    """``compare --format kind``: every library pair with its gate verdicts."""
    if kind == "json":
        from builder.render.json_docs import compare_json

        return compare_json(evaluated)
    if kind == "markdown":
        from builder.render.pr_comment import comment_markdown

        return comment_markdown(evaluated, shown_top(top, kind))
    if kind == "html":
        from builder.render.html import compare_html

        return compare_html(evaluated)
    from builder.render.compare_tables import compare_preface, compare_tables
    from builder.render.table import written

    if kind == "csv":
        several = len(evaluated) != 1 or evaluated[0][0].change != "paired"
        return written(compare_tables(evaluated, None, context=several), kind)
    tables = compare_tables(evaluated, shown_top(top, kind))
    preface = compare_preface(evaluated)
    return written(tables, kind, color=color, width=width, preface=preface)


def budget_output(
    checks: Sequence[Check], source: str, kind: str, color: bool, width: int | None
) -> str:
    """``budget --format kind``."""
    if kind == "json":
        from builder.render.json_docs import budget_json

        return budget_json(checks, source)
    if kind == "markdown":
        from builder.render.pr_comment import budget_markdown

        return budget_markdown(checks, source)
    from builder.render.pr_comment import budget_table
    from builder.render.table import written

    return written([budget_table(checks, source)], kind, color=color, width=width)


def history_output(
    histories: Sequence[LibraryHistory], by: str, kind: str, color: bool, width: int | None
) -> str:
    """``history --format kind``: each library's history (one, unless a target holds
    several), with the groups it shows (``LibraryHistory.top``)."""
    if kind == "json":
        from builder.render.json_docs import history_json

        return history_json(histories, by)
    if kind == "html":
        from builder.render.html import history_html

        return history_html(histories, by)
    from builder.render.compare_tables import history_tables
    from builder.render.table import written

    fit = width if kind == "table" else None  # as many group columns as a terminal shows
    return written(history_tables(histories, by, fit), kind, color=color, width=width)


def sources_output(
    path: str,
    found: Found,
    namespace: str | None,
    kind: str,
    color: bool,
    width: int | None,
) -> str:
    """``sources --format kind``: a host library's run-time sources, as a table or JSON."""
    if kind == "json":
        from builder.render.json_docs import sources_json

        return sources_json(path, found, namespace)
    from builder.render.library import sources_tables
    from builder.render.table import written

    return written(sources_tables(path, found, namespace), kind, color=color, width=width)
