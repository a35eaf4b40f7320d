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
from typing import TYPE_CHECKING, cast

from builder.files.dataclass_json import dumps
from builder.files.reading import read_text
from builder.render.compare_tables import DOWNLOAD_METHOD
from builder.render.history_tables import history_tables, moves_table, one_package
from builder.render.html.data import comparison_data, report_data
from builder.render.table import Table, cell_text
from builder.render.text import human_size, visible

if TYPE_CHECKING:
    from builder.size.compare import Comparison
    from builder.size.history import LibraryHistory
    from builder.size.report import Report
    from builder.size.verdicts import Verdict

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


_PLACEHOLDER = re.compile(
    r"\{\{(?:TITLE|CSP|BODY|DATA)\}\}|/\*\{\{STYLE\}\}\*/|/\*\{\{SCRIPT\}\}\*/"
)
_SCRIPTED = (
    "default-src 'none'; style-src 'unsafe-inline'; script-src 'unsafe-inline'; img-src data:"
)
"""What a page drawn by its script may load: its own inline script and style, images as data."""


def page(
    title: str,
    data: dict[str, object],
    *,
    body: str = "page.html",
    styles: tuple[str, ...] = ("style.css",),
    scripts: tuple[str, ...] = ("treemap.js", "app.js"),
) -> str:
    """The page shell (``shell.html``, every page's head) around ``body``, with ``styles``,
    ``scripts`` and data inlined."""
    template = _asset("shell.html").replace("{{BODY}}", _asset(body))  # our own files
    inlined = {"/*{{SCRIPT}}*/": "\n".join(map(_asset, scripts)), "{{DATA}}": _script_json(data)}
    return _filled(template, title, _SCRIPTED, styles, inlined)


def _filled(
    template: str, title: str, csp: str, styles: tuple[str, ...], parts: dict[str, str]
) -> str:
    """``template`` with its placeholders filled.

    One pass over the template: each placeholder is replaced where it stands in the template and
    inserted text is never searched again, so a title (a target's name) or a function name that
    spells ``{{DATA}}`` stays literal text. The title is HTML-escaped with control characters
    shown (``visible``); the data is JSON that cannot close its script element.
    """
    parts = {
        "{{TITLE}}": html.escape(visible(title)),
        "{{CSP}}": csp,
        "/*{{STYLE}}*/": "\n".join(map(_asset, styles)),
        **parts,
    }
    return _PLACEHOLDER.sub(lambda match: parts[match.group()], template)


def report_html(reports: Sequence[Report]) -> str:
    """``report --format html``: one page for every library of the target."""
    labels = ", ".join(r.source.label for r in reports)
    return page(f"Metallib size: {labels}", report_data(reports))


def compare_html(pairs: Sequence[tuple[Comparison, Sequence[Verdict]]]) -> str:
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


_HISTORY_CSP = "default-src 'none'; style-src 'unsafe-inline'"
"""The history page has no script: only its inline style."""


def history_html(histories: Sequence[LibraryHistory], by: str) -> str:
    """The page: the total (and download) chart, a line per library; then, per library, its top
    groups' chart, its figures as a table and the groups each step moved most; and where each
    was measured. The charts are drawn
    from the history's tables (``history_tables``, every group column), so a line and its
    table's row cannot disagree."""
    points = [p for h in histories for p in h.points]
    targets = list(dict.fromkeys(p.target for p in points))
    package = one_package(targets)
    labels = [t.split("==", 1)[1] if package else t for t in targets]
    several = len(histories) > 1
    download = any(p.download_bytes is not None for p in points)
    totals: list[Series] = []
    sections = []
    for h, table in zip(histories, history_tables(histories, by), strict=True):
        name = h.library if h.library is not None else "(the target's one library)"
        figures = _figures(table, [p.target for p in h.points], targets)
        keys = [key for key, _ in figures]
        totals.append((name if several else "metallib size", figures[keys.index("bytes")][1]))
        if download:  # a library without download figures has no line points
            line = figures[keys.index("download_bytes")][1] if "download_bytes" in keys else []
            totals.append((f"{name} download" if several else "download size", line))
        groups = figures[keys.index("function_count") + 1 :]  # the columns after the fixed ones
        heading = f"<h2>{_text(name)}</h2>\n" if several else ""
        chart = _chart(f"Top {len(groups)} groups (by {by})", labels, groups) + "\n"
        sections.append(heading + (chart if groups else "") + _table_html(table) + _moves(h, by))
    measured = "<br>".join(_text(m) for p in points for m in p.measured_in)
    note = f"<br>Download size: {_text(DOWNLOAD_METHOD)}." if download else ""
    libraries = f"; {len(histories)} libraries, each its own history" if several else ""
    body = f"""<h1>Metallib size history</h1>
<p>{len(targets)} targets in the order given\
{f" (versions of {_text(package)})" if package else ""}{_text(libraries)}; groups by {_text(by)};\
 hover a point for its bytes.</p>
{_chart("Total size" + (" of each library" if several else ""), labels, totals, keep_end=several)}
{"".join(sections)}
<footer>Measured in:<br>{measured}{note}</footer>
"""
    title = "Metallib size history"
    return _filled(_asset("shell.html"), title, _HISTORY_CSP, ("history.css",), {"{{BODY}}": body})


def _moves(history: LibraryHistory, by: str) -> str:
    """The groups that moved most in each step (``moves_table``), with what they explain."""
    table = moves_table(history, by)
    if table is None:
        return ""
    said = "".join(f"<br>{_text(''.join(line))}" for line in table.caption)
    return f"<h3>Groups that moved most, each step</h3>\n{_table_html(table)}<p>{said[4:]}</p>\n"


def _figures(table: Table, rows_at: Sequence[str], targets: Sequence[str]) -> list[Series]:
    """Each column of a history's ``table`` as a chart's series: its key and its value per
    target of the page, None where the library has no row (``rows_at``: each row's target)."""
    at = dict(zip(rows_at, table.rows, strict=True))
    return [
        (c.key, [cast(int, at[t].values[i]) if t in at else None for t in targets])
        for i, c in enumerate(table.columns)
    ]


def _table_html(table: Table) -> str:
    """A table of the model as a plain HTML table (a page without script): each cell as the
    terminal writes it, escaped."""
    shown = table.shown("text")
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
