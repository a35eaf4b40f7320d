"""Size history for people and machines: a table, JSON (``points``) and a self-contained HTML page
with line charts (total and download size; the top groups) drawn as inline SVG. Targets holding
several libraries have a history per library (``builder.size.history.LibraryHistory``): a table
each, and on the page a line each in the total chart, then each one's groups and figures.

The page has no script and makes no request (its Content-Security-Policy allows neither), so it
opens anywhere, offline, and is the same bytes for the same figures. Names (targets, groups)
are untrusted: HTML-escaped with control characters shown (``visible``).
"""

from __future__ import annotations

import html
import math
from collections.abc import Sequence
from itertools import pairwise
from typing import TYPE_CHECKING

from builder.render.table import Column, Name, Row, Said, Table, Words
from builder.render.text import human_size, visible
from builder.size.download import MODEL

if TYPE_CHECKING:
    from builder.size.history import HistoryPoint, LibraryHistory

__all__ = ["DOWNLOAD_METHOD", "history_html", "history_tables", "library_name"]

DOWNLOAD_METHOD = f"modelled as report --download does: {MODEL}"
"""What ``download_bytes`` is, stated wherever it is shown (``builder.size.budget``)."""
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


def _group_sizes(point: HistoryPoint) -> dict[str, int]:
    return {g.name: g.bytes for g in point.groups}


def library_name(library: str | None) -> str:
    """How a library of a history is named where several are shown: its name in its targets."""
    return library if library is not None else "(the target's one library)"


def history_tables(
    histories: Sequence[LibraryHistory], by: str, width: int | None = None
) -> list[Table]:
    """A table per library: a row per target (size, change from the previous row, download,
    functions), then a column per group of its ``top``; with a terminal's ``width``, as many
    of them as fit (the caption says how many did not)."""
    return [_history_table(h.points, h.top, by, h.library, width) for h in histories]


def _history_table(
    points: Sequence[HistoryPoint],
    top: list[str],
    by: str,
    library: str | None,
    width: int | None,
) -> Table:
    download = any(p.download_bytes is not None for p in points)
    package = _one_package([p.target for p in points])
    labels = [p.target.split("==", 1)[1] if package else p.target for p in points]
    columns = [
        Column("target", "version" if package else "target", "text"),
        Column("bytes", "size", "size"),
        Column("change", "change", "delta"),
        *([Column("download_bytes", "download", "size")] if download else []),
        Column("function_count", "functions", "count"),
    ]
    changes = [None, *(b.bytes - a.bytes for a, b in pairwise(points))]
    values = [
        [Name(label), p.bytes, change, *([p.download_bytes] if download else []), p.function_count]
        for label, p, change in zip(labels, points, changes, strict=True)
    ]
    sizes = [_group_sizes(p) for p in points]
    fixed = sum(max(len(c.heading), 10) + 3 for c in columns) + max(map(len, labels), default=0)
    room = float("inf") if width is None else width - 1 - fixed
    left_out = 0
    for name in top:
        cells = [s.get(name) for s in sizes]
        need = max(len(visible(name)), 9) + 3
        if need > room:
            left_out += 1
            continue
        room -= need
        columns.append(Column(name, name, "size"))
        for row, cell in zip(values, cells, strict=True):
            row.append(cell)
    caption: list[Words] = [
        ("measured in ", Said("; ".join(m for p in points for m in p.measured_in)))
    ]
    if left_out:
        caption.append(
            (f"{left_out} more of the top {len(top)} groups do not fit (--format json)",)
        )
    if download:
        caption.append((f"download: {DOWNLOAD_METHOD}",))
    what = f"{package}==VERSION" if package else "target"
    of = (Said(library), " in ") if library is not None else ()
    return Table(
        tuple(columns),
        tuple(Row(tuple(v)) for v in values),
        title=("Size history of ", *of, Said(f"{len(points)} targets ({what}, groups by {by})")),
        caption=tuple(caption),
        context=(("library", library or ""),) if library is not None else (),
        compact=True,
    )


def _one_package(targets: Sequence[str]) -> str | None:
    """The package when every target is ``PACKAGE==VERSION`` of the same one (the table then
    shows versions only)."""
    names = {t.split("==", 1)[0] if "==" in t else None for t in targets}
    return next(iter(names)) if len(names) == 1 else None


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
    package = _one_package(targets)
    labels = [t.split("==", 1)[1] if package else t for t in targets]
    several = len(histories) > 1
    download = any(p.download_bytes is not None for p in points)
    totals: list[Series] = []
    for h in histories:
        at = {p.target: p for p in h.points}
        name = library_name(h.library)
        sizes, downloads = (
            [_bytes(at.get(t)) for t in targets],
            [_download(at.get(t)) for t in targets],
        )
        totals.append((name if several else "metallib size", sizes))
        if download:
            totals.append((f"{name} download" if several else "download size", downloads))
    sections = [_library_section(h, by, targets, labels, download, several) for h in histories]
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
    download: bool,
    several: bool,
) -> str:
    """One library's top groups chart (over every target: none where it is missing) and its
    figures, a row per target holding it; headed by its name when there are several."""
    top = history.top
    at = {p.target: _group_sizes(p) for p in history.points}
    groups: list[Series] = [(name, [at.get(t, {}).get(name) for t in targets]) for name in top]
    head = ["target", "size", *(["download"] if download else []), "functions", *top]
    rows = []
    for point in history.points:
        size = at[point.target]
        cells = [_text(point.target), human_size(point.bytes)]
        if download:
            cells.append(
                human_size(point.download_bytes) if point.download_bytes is not None else ""
            )
        cells.append(f"{point.function_count:,}")
        cells += [human_size(size[name]) if name in size else "-" for name in top]
        rows.append("<tr>" + "".join(f"<td>{c}</td>" for c in cells) + "</tr>")
    heading = f"<h2>{_text(library_name(history.library))}</h2>\n" if several else ""
    chart = _chart(f"Top {len(top)} groups (by {by})", labels, groups) + "\n" if top else ""
    return f"""{heading}{chart}<table>
<thead><tr>{"".join(f"<th>{_text(h)}</th>" for h in head)}</tr></thead>
<tbody>
{chr(10).join(rows)}
</tbody>
</table>
"""
