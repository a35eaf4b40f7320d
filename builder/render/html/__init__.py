"""Self-contained HTML size reports: a zoomable treemap, a search box and a sortable table; and
the size history's page of line charts.

``report_html`` and ``compare_html`` are pure (reports in, one HTML string out): the page's
template, stylesheet and script are package data files in this folder, inlined together with the
measured data as JSON, so the file opens offline, makes no network request and is the same bytes
for the same input. The layout of the page is described in ``docs/html-report.md``.
"""

from __future__ import annotations

import html
import math
import re
from collections.abc import Sequence
from functools import cache
from pathlib import Path
from typing import TYPE_CHECKING

from builder.files.dataclass_json import dumps
from builder.files.reading import read_text
from builder.render.compare_tables import DOWNLOAD_METHOD, history_tables, one_package
from builder.render.html.data import comparison_data, report_data
from builder.render.table import Table, cell_text
from builder.render.text import human_size, visible

if TYPE_CHECKING:
    from builder.size.checks import Check
    from builder.size.compare import Comparison
    from builder.size.history import HistoryPoint, LibraryHistory
    from builder.size.report import Report

__all__ = ["compare_html", "history_html", "page", "report_html"]

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


# The history page has no script and makes no request (its Content-Security-Policy allows
# neither), so it opens anywhere, offline, and is the same bytes for the same figures. Targets
# holding several libraries have a line each in the total chart, then each one's groups and
# figures. Names (targets, groups) are HTML-escaped with control characters shown (``visible``).
_COLOURS = (
    "#1f77b4",
    "#d62728",
    "#2ca02c",
    "#ff7f0e",
    "#9467bd",
    "#8c564b",
    "#e377c2",
    "#7f7f7f",
    "#bcbd22",
    "#17becf",
)


def _library_name(library: str | None) -> str:
    """How a library of a history is named where several are shown: its name in its targets."""
    return library if library is not None else "(the target's one library)"


def _group_sizes(point: HistoryPoint) -> dict[str, int]:
    return {g.name: g.bytes for g in point.groups}


def _text(value: str) -> str:
    return html.escape(visible(value))


def _nice_top(value: int) -> tuple[float, float]:
    """An axis maximum at or above ``value`` and its tick step (1, 2, 2.5 or 5 x 10^k, 4-6
    ticks)."""
    if value <= 0:
        return 1.0, 0.25
    power = 10.0 ** math.floor(math.log10(value / 5))
    step = next(power * m for m in (1, 2, 2.5, 5, 10) if value / (power * m) <= 5)
    return step * math.ceil(value / step), step


def _tick(value: float) -> str:
    """An axis label: ``human_size`` without trailing zeros (``50 MB``, ``2.5 MB``)."""
    number, _, unit = human_size(value).partition(" ")
    return (number.rstrip("0").rstrip(".") if "." in number else number) + " " + unit


Series = tuple[str, list[int | None]]


def _chart(
    title: str, labels: Sequence[str], series: Sequence[Series], *, keep_end: bool = False
) -> str:
    """One SVG line chart: x = the targets in order, y = bytes from 0; a marker with a tooltip
    (``<title>``) on every measured point; the legend on the right (a long name cut at its end,
    or with ``keep_end`` at its start: libraries' names differ at the end)."""
    longest = min(32, max(map(len, labels), default=0))
    width, left, right, top, bottom = 960, 80, 200, 36, 30 + 6 * longest // 2  # labels at -30°
    height = 270 + top + bottom
    plot_w, plot_h = width - left - right, height - top - bottom
    values = [v for _, vs in series for v in vs if v is not None]
    ymax, step = _nice_top(max(values, default=0))
    n = len(labels)

    inset = 24  # the first and last points stay off the axes

    def x(i: int) -> float:
        return left + (plot_w / 2 if n == 1 else inset + (plot_w - 2 * inset) * i / (n - 1))

    def y(v: float) -> float:
        return top + plot_h * (1 - v / ymax)

    parts = [
        (
            f'<svg xmlns="http://www.w3.org/2000/svg" width="{width}" height="{height}" '
            f'viewBox="0 0 {width} {height}" role="img" aria-label="{_text(title)}">'
        ),
        f'<text x="{left}" y="20" class="title">{_text(title)}</text>',
    ]
    ticks = round(ymax / step)
    for k in range(ticks + 1):
        value = step * k
        parts.append(
            f'<line x1="{left}" x2="{left + plot_w}" y1="{y(value):.1f}" '
            f'y2="{y(value):.1f}" class="grid"/><text x="{left - 6}" '
            f'y="{y(value) + 4:.1f}" class="ytick">{_tick(value)}</text>'
        )
    for i, label in enumerate(labels):
        short = label if len(label) <= 32 else label[:31] + "…"
        parts.append(
            f'<text transform="translate({x(i):.1f},{top + plot_h + 14}) rotate(-30)" '
            f'class="xtick">{_text(short)}</text>'
        )
    for index, (name, vs) in enumerate(series):
        colour = _COLOURS[index % len(_COLOURS)]
        points = [(x(i), y(v), v, labels[i]) for i, v in enumerate(vs) if v is not None]
        path = " ".join(f"{px:.1f},{py:.1f}" for px, py, _, _ in points)
        parts.append(f'<polyline points="{path}" fill="none" stroke="{colour}" stroke-width="2"/>')
        for px, py, v, label in points:
            parts.append(
                f'<circle cx="{px:.1f}" cy="{py:.1f}" r="3.5" fill="{colour}"><title>'
                f"{_text(name)}, {_text(label)}: {human_size(v)} ({v:,} bytes)"
                "</title></circle>"
            )
        ly = top + 16 * index
        parts.append(
            f'<line x1="{width - right + 16}" x2="{width - right + 36}" y1="{ly + 6}" '
            f'y2="{ly + 6}" stroke="{colour}" stroke-width="3"/><text '
            f'x="{width - right + 42}" y="{ly + 10}" class="legend">'
            f"{_text(_cut(name, keep_end))}</text>"
        )
    parts.append("</svg>")
    return "\n".join(parts)


def _cut(name: str, keep_end: bool) -> str:
    """``name`` in at most 24 characters for a legend."""
    if len(name) <= 24:
        return name
    return "…" + name[-23:] if keep_end else name[:23] + "…"


_STYLE = """body{font:14px system-ui,sans-serif;margin:24px;color:#1b1f24}
h1{font-size:20px;margin:0 0 4px}p{margin:4px 0 12px;color:#57606a}
svg{display:block;margin:8px 0 20px;max-width:100%;height:auto}
.title{font-size:15px;font-weight:600;fill:#1b1f24}.grid{stroke:#e1e4e8}
.ytick{font-size:11px;text-anchor:end;fill:#57606a}.xtick{font-size:11px;text-anchor:end;fill:#57606a}
.legend{font-size:12px;fill:#1b1f24}table{border-collapse:collapse;font-size:13px}
td,th{border:1px solid #d0d7de;padding:3px 8px;text-align:right}\
td:first-child,th:first-child{text-align:left}
h2{font-size:16px;margin:20px 0 4px}
th{background:#f6f8fa}footer{margin-top:16px;font-size:12px;color:#57606a;word-break:break-all}"""


def history_html(histories: Sequence[LibraryHistory], by: str) -> str:
    """The page: the total (and download) chart, a line per library; then, per library, its top
    groups' chart and its figures as a table; and where each was measured."""
    points = [p for h in histories for p in h.points]
    targets = list(dict.fromkeys(p.target for h in histories for p in h.points))
    package = one_package(targets)
    labels = [t.split("==", 1)[1] if package else t for t in targets]
    several = len(histories) > 1
    download = any(p.download_bytes is not None for p in points)
    totals: list[Series] = []
    for h in histories:
        at = {p.target: p for p in h.points}
        name = _library_name(h.library)
        sizes, downloads = (
            [_bytes(at.get(t)) for t in targets],
            [_download(at.get(t)) for t in targets],
        )
        totals.append((name if several else "metallib size", sizes))
        if download:
            totals.append((f"{name} download" if several else "download size", downloads))
    sections = [_library_section(h, by, targets, labels, several) for h in histories]
    measured = "<br>".join(_text(m) for p in points for m in p.measured_in)
    note = f"<br>Download size: {_text(DOWNLOAD_METHOD)}." if download else ""
    libraries = f"; {len(histories)} libraries, each its own history" if several else ""
    return f"""<!DOCTYPE html>
<html lang="en">
<head>
<meta charset="utf-8">
<meta http-equiv="Content-Security-Policy" content="default-src 'none'; style-src 'unsafe-inline'">
<meta name="generator" content="metallib-builder">
<title>Metallib size history</title>
<style>
{_STYLE}
</style>
</head>
<body>
<h1>Metallib size history</h1>
<p>{len(targets)} targets in the order given\
{f" (versions of {_text(package)})" if package else ""}{_text(libraries)}; groups by {_text(by)};\
 hover a point for its bytes.</p>
{_chart("Total size" + (" of each library" if several else ""), labels, totals, keep_end=several)}
{"".join(sections)}
<footer>Measured in:<br>{measured}{note}</footer>
</body>
</html>
"""


def _bytes(point: HistoryPoint | None) -> int | None:
    return point.bytes if point is not None else None


def _download(point: HistoryPoint | None) -> int | None:
    return point.download_bytes if point is not None else None


def _library_section(
    history: LibraryHistory,
    by: str,
    targets: Sequence[str],
    labels: Sequence[str],
    several: bool,
) -> str:
    """One library's top groups chart (over every target: none where it is missing) and its
    figures, the history's table (``history_tables``: a row per target holding it); headed by
    its name when there are several."""
    top = history.top
    at = {p.target: _group_sizes(p) for p in history.points}
    groups: list[Series] = [(name, [at.get(t, {}).get(name) for t in targets]) for name in top]
    heading = f"<h2>{_text(_library_name(history.library))}</h2>\n" if several else ""
    chart = _chart(f"Top {len(top)} groups (by {by})", labels, groups) + "\n" if top else ""
    return heading + chart + _table_html(history_tables([history], by)[0])


def _table_html(table: Table) -> str:
    """A table of the model as a plain HTML table (a page without script): each cell as the
    terminal writes it, escaped."""
    shown = [(at, c) for at, c in enumerate(table.columns) if "text" in c.media]
    head = "".join(f"<th>{_text(c.heading)}</th>" for _, c in shown)
    rows = [
        "<tr>"
        + "".join(f"<td>{_text(cell_text(c.kind, row.values[at], 'text'))}</td>" for at, c in shown)
        + "</tr>"
        for row in table.rows
        if "text" in row.media
    ]
    body = "\n".join(rows)
    return f"<table>\n<thead><tr>{head}</tr></thead>\n<tbody>\n{body}\n</tbody>\n</table>\n"
