"""Self-contained HTML size reports: a zoomable treemap, a search box and a sortable table.

``report_html`` and ``compare_html`` are pure (reports in, one HTML string out): the page's
template, stylesheet and script are package data files in this folder, inlined together with the
measured data as JSON, so the file opens offline, makes no network request and is the same bytes
for the same input. The layout of the page is described in ``docs/html-report.md``.
"""

from __future__ import annotations

import html
import re
from collections.abc import Sequence
from functools import cache
from pathlib import Path
from typing import TYPE_CHECKING

from builder.files.dataclass_json import dumps
from builder.files.reading import read_text
from builder.render.html.data import comparison_data, report_data
from builder.render.text import visible

if TYPE_CHECKING:
    from builder.size.checks import Check
    from builder.size.compare import Comparison
    from builder.size.report import Report

__all__ = ["compare_html", "page", "report_html"]

_ASSETS = Path(__file__).resolve().parent


@cache
def _asset(name: str) -> str:
    return read_text(_ASSETS / name, "the HTML asset")


def _script_json(data: object) -> str:
    """JSON safe inside ``<script type="application/json">``: no ``<`` can end or open a tag,
    and a lone surrogate (a name from a saved report, a file name that is not UTF-8) is written
    as escape text, as the JSON output writes it (``builder.files.dataclass_json``): the page is
    UTF-8, which cannot encode one."""
    text = dumps(data, separators=(",", ":"), ensure_ascii=False)
    return text.replace("<", "\\u003c").replace("\u2028", "\\u2028").replace("\u2029", "\\u2029")


_PLACEHOLDER = re.compile(r"\{\{TITLE\}\}|/\*\{\{STYLE\}\}\*/|/\*\{\{SCRIPT\}\}\*/|\{\{DATA\}\}")


def page(
    title: str,
    data: dict[str, object],
    *,
    template: str = "page.html",
    scripts: tuple[str, ...] = ("treemap.js", "app.js"),
) -> str:
    """``template`` with the stylesheet, ``scripts`` and data inlined.

    One pass over the template: each placeholder is replaced where it stands in the template and
    inserted text is never searched again, so a title (a target's name) or a function name that
    spells ``{{DATA}}`` stays literal text. The title is HTML-escaped with control characters
    shown (``visible``); the data is JSON that cannot close its script element.
    """
    parts = {
        "{{TITLE}}": html.escape(visible(title)),
        "/*{{STYLE}}*/": _asset("style.css"),
        "/*{{SCRIPT}}*/": "\n".join(_asset(name) for name in scripts),
        "{{DATA}}": _script_json(data),
    }
    return _PLACEHOLDER.sub(lambda match: parts[match.group()], _asset(template))


def report_html(reports: Sequence[Report]) -> str:
    """``report --format html``: one page for every library of the target."""
    labels = ", ".join(r.source.label for r in reports)
    return page(f"Metallib size: {labels}", report_data(reports))


def compare_html(pairs: Sequence[tuple[Comparison, Sequence[Check]]]) -> str:
    """``compare --format html``: the head treemap coloured by growth, added/removed listed."""
    labels = ", ".join(f"{c.base.source.label} → {c.head.source.label}" for c, _ in pairs)
    return page(f"Metallib size change: {labels}", comparison_data(pairs))
