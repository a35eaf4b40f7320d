"""Self-contained HTML size reports: a zoomable treemap, a search box and a sortable table.

``report_html`` and ``compare_html`` are pure (reports in, one HTML string out): the page's
template, stylesheet and script are package data files in this folder, inlined together with the
measured data as JSON, so the file opens offline, makes no network request and is the same bytes
for the same input. The layout of the page is described in ``docs/html-report.md``.
"""

from __future__ import annotations

import html
import json
from collections.abc import Sequence
from functools import cache
from pathlib import Path
from typing import TYPE_CHECKING, Any

from builder.html.data import comparison_data, report_data

if TYPE_CHECKING:
    from builder.compare import Comparison, GateResult
    from builder.report import Report

__all__ = ["compare_html", "page", "report_html"]

_ASSETS = Path(__file__).resolve().parent


@cache
def _asset(name: str) -> str:
    return (_ASSETS / name).read_text(encoding="utf-8")


def _script_json(data: Any) -> str:
    """JSON safe inside ``<script type="application/json">``: no ``<`` can end or open a tag."""
    text = json.dumps(data, separators=(",", ":"), ensure_ascii=False)
    return text.replace("<", "\\u003c").replace("\u2028", "\\u2028").replace("\u2029", "\\u2029")


def page(title: str, data: dict[str, Any]) -> str:
    """The template with its stylesheet, script and data inlined."""
    parts = {
        "{{TITLE}}": html.escape(title),
        "/*{{STYLE}}*/": _asset("style.css"),
        "/*{{SCRIPT}}*/": _asset("treemap.js") + "\n" + _asset("app.js"),
        "{{DATA}}": _script_json(data),
    }
    text = _asset("page.html")
    for key, value in parts.items():  # data last, so nothing inside it is substituted
        text = text.replace(key, value)
    return text


def report_html(reports: Sequence[Report]) -> str:
    """``report --format html``: one page for every library of the target."""
    labels = ", ".join(r.source.label for r in reports)
    return page(f"Metallib size: {labels}", report_data(reports))


def compare_html(pairs: Sequence[tuple[Comparison, Sequence[GateResult]]]) -> str:
    """``compare --format html``: the head treemap coloured by growth, added/removed listed."""
    labels = ", ".join(f"{c.base.source.label} → {c.head.source.label}" for c, _ in pairs)
    return page(f"Metallib size change: {labels}", comparison_data(pairs))
