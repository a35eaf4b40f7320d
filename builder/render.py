"""Reports and comparisons as text: rich table, JSON, CSV, markdown. Reading only, no I/O.

Renderers only read ``Report``/``Comparison`` (bloaty's rule: parsers never know about output
formats). Every rendering names the measured file(s), so a figure never appears without its
origin. ``rich`` is imported only by the table renderers, keeping ``--format json`` fast. A
build's JIT families are measured in its host library and drawn by ``builder.render_jit``.

Names and other untrusted text (a saved report's target or grouping) are shown through
``builder.sizes.visible`` in tables, through ``md_code``/``md_text`` in markdown, and CSV text
cells are guarded against spreadsheet formulas; JSON needs nothing more than its own escaping.
"""

from __future__ import annotations

import io
import json
import re
from collections.abc import Sequence
from typing import TYPE_CHECKING, Any

from builder.jit_sizes import jit_breakdown

# The PR-comment markdown has its own module (a length bound and sticky marker); re-exported here.
from builder.pr_comment import compare_markdown, md_code, md_text
from builder.report_provenance import provenance_line
from builder.sizes import human_delta, human_size, visible

if TYPE_CHECKING:
    from builder.compare import Comparison, GateResult
    from builder.report import Report

__all__ = [
    "FORMATS",
    "compare_csv",
    "compare_json",
    "compare_markdown",
    "compare_table",
    "report_csv",
    "report_json",
    "report_markdown",
    "report_table",
    "top_rows",
]

FORMATS = ("table", "json", "csv", "markdown")
OVERHEAD_LABEL = "[container overhead]"


def _origin(report: Report) -> str:
    src = report.source
    where = src.path or "(no metallib: all families JIT)"
    extra = []
    if src.kind == "spec" or src.kind == "wheel":
        extra.append(f"from {src.target}")
    if src.manifest:
        extra.append(f"manifest {src.manifest}")
    if src.kind == "report":
        extra.append(f"saved report {src.target}")
    return where + (f" ({'; '.join(extra)})" if extra else "")


def _rich(text: str) -> str:
    """Untrusted text for a rich table or line: control characters shown escaped (``visible``)
    and ``[`` escaped so a name is never read as rich markup (the consoles also have emoji codes
    such as ``:x:`` turned off)."""
    from rich.markup import escape

    return escape(visible(text))


_FORMULA_START = ("=", "+", "-", "@", "\t", "\r")
_CSV_QUOTED = re.compile(r'[,"\r\n]')


def _csv_text(text: str) -> str:
    """A text cell a spreadsheet will not run: OWASP's rule, a leading ``'`` before a cell that
    starts with ``=``, ``+``, ``-``, ``@``, tab or CR. Only for text columns: numbers (negative
    deltas included) are written as they are."""
    return "'" + text if text.startswith(_FORMULA_START) else text


def _csv_line(cells: Sequence[str | int]) -> str:
    """One CSV record (RFC 4180), ``\\n``-terminated: a cell holding a comma, quote, CR or LF is
    quoted with its quotes doubled. Written here rather than with the csv module, whose writer
    leaves a CR unquoted when rows end in ``\\n`` (a spreadsheet then starts a new row there)."""
    out = []
    for cell in cells:
        text = str(cell)
        if _CSV_QUOTED.search(text):
            text = '"' + text.replace('"', '""') + '"'
        out.append(text)
    return ",".join(out) + "\n"


def _pct(part: int, whole: int) -> str:
    return f"{100.0 * part / whole:.1f}%" if whole else "-"


def top_rows(report: Report, top: int | None) -> tuple[list[tuple[str, int, int]], int, int]:
    """The group rows to show (name, count, bytes), plus the rest (count, bytes) past ``top``."""
    rows = [(g.name, g.function_count, g.bytes) for g in report.groups]
    if top is None or top >= len(rows):
        return rows, 0, 0
    rest = rows[top:]
    return rows[:top], sum(r[1] for r in rest), sum(r[2] for r in rest)


# -- report -------------------------------------------------------------------------------------
def report_json(reports: Sequence[Report]) -> str:
    """One report as a schema-1 object; several as ``{"schema": 1, "libraries": [...]}``."""
    from builder.report import SCHEMA, report_json_text

    if len(reports) == 1:
        return report_json_text(reports[0]) + "\n"
    body = ",".join(report_json_text(r) for r in reports)
    return f'{{"schema":{SCHEMA},"libraries":[{body}]}}\n'


def report_csv(reports: Sequence[Report], top: int | None = None) -> str:
    """One row per group (and the overhead), with the file each figure was measured in."""
    lines = [_csv_line(["file", "by", "group", "function_count", "bytes", "share"])]
    for report in reports:
        jit = jit_breakdown(report)
        if jit is not None:
            from builder.render_jit import report_jit_csv

            jit_rows = [[_csv_text(r[0]), r[1], _csv_text(r[2]), *r[3:]]
                        for r in report_jit_csv(report, jit)]  # fmt: skip
            if report.source.path is None:  # no metallib: its rows would all be zero
                lines += map(_csv_line, jit_rows)
                continue
        shown, rest_count, rest_bytes = top_rows(report, top)
        path = _csv_text(report.source.path or "")
        by = _csv_text(report.by)
        whole = report.file_size
        for name, count, size in shown:
            lines.append(_csv_line([path, by, _csv_text(name), count, size, _share(size, whole)]))
        if rest_count:
            lines.append(
                _csv_line([path, by, "[rest]", rest_count, rest_bytes, _share(rest_bytes, whole)])
            )
        overhead = report.overhead_bytes
        lines.append(_csv_line([path, by, OVERHEAD_LABEL, "", overhead, _share(overhead, whole)]))
        if jit is not None:
            lines += map(_csv_line, jit_rows)
    return "".join(lines)


def _share(part: int, whole: int) -> str:
    return f"{part / whole:.6f}" if whole else ""


def report_markdown(reports: Sequence[Report], top: int | None = 20) -> str:
    """A markdown table per library: group, functions, bytes, share, cumulative share."""
    parts = []
    for report in reports:
        parts.append(f"### Size of {md_code(report.source.label)}\n")
        jit = jit_breakdown(report)
        if jit is not None:
            from builder.render_jit import report_jit_markdown

            if report.source.path is None:  # no metallib: the JIT families are the report
                parts += [*report_jit_markdown(report, jit, top), ""]
                continue
        parts.append(
            f"{human_size(report.file_size)} ({report.file_size:,} bytes), "
            f"{report.function_count:,} functions, format {md_text(report.format_version)}; "
            f"grouped by {report.by} ({md_text(report.grouping)}). "
            f"Measured in {md_code(_origin(report))}.\n"
        )
        parts.append(f"<sub>{md_text(provenance_line(report.provenance))}</sub>\n")
        parts.append("| group | functions | size | share | cumulative |")
        parts.append("|---|---:|---:|---:|---:|")
        cumulative = 0
        shown, rest_count, rest_bytes = top_rows(report, top)
        for name, count, size in shown:
            cumulative += size
            parts.append(
                f"| {md_code(name)} | {count:,} | {human_size(size)} | {_pct(size, report.file_size)} "
                f"| {_pct(cumulative, report.file_size)} |"
            )
        if rest_count:
            cumulative += rest_bytes
            parts.append(
                f"| rest ({len(report.groups) - len(shown)} groups) | {rest_count:,} | "
                f"{human_size(rest_bytes)} | {_pct(rest_bytes, report.file_size)} | "
                f"{_pct(cumulative, report.file_size)} |"
            )
        parts.append(
            f"| {OVERHEAD_LABEL} | | {human_size(report.overhead_bytes)} | "
            f"{_pct(report.overhead_bytes, report.file_size)} | 100.0% |"
        )
        if jit is not None:
            parts += ["", *report_jit_markdown(report, jit, top)]
        parts.append("")
    return "\n".join(parts)


def report_table(
    reports: Sequence[Report], top: int | None = 20, *, color: bool = False, width: int = 100
) -> str:
    """The human view: a rich table per library, sorted by bytes, with a rest row."""
    from rich.console import Console
    from rich.markup import escape
    from rich.table import Table

    out = io.StringIO()
    console = Console(file=out, force_terminal=color, no_color=not color, width=width, emoji=False)
    for report in reports:
        jit = jit_breakdown(report)
        if jit is not None:
            from builder.render_jit import report_jit_table

            if report.source.path is None:  # no metallib: the JIT families are the report
                report_jit_table(report, jit, console, top)
                continue
        table = Table(
            title=_rich(report.source.label) + escape(
                f": {human_size(report.file_size)}, "
                f"{report.function_count:,} functions, by {report.by}"
            ),
            caption=(f"measured in {_rich(_origin(report))}; grouping: {_rich(report.grouping)}\n"
                     f"{_rich(provenance_line(report.provenance))}"),
            title_justify="left",
            caption_justify="left",
        )
        table.add_column(report.by)
        table.add_column("functions", justify="right")
        table.add_column("size", justify="right")
        table.add_column("bytes", justify="right")
        table.add_column("share", justify="right")
        table.add_column("cumulative", justify="right")
        cumulative = 0
        shown, rest_count, rest_bytes = top_rows(report, top)
        for name, count, size in shown:
            cumulative += size
            table.add_row(_rich(name), f"{count:,}", human_size(size), f"{size:,}",
                          _pct(size, report.file_size), _pct(cumulative, report.file_size))  # fmt: skip
        if rest_count:
            cumulative += rest_bytes
            table.add_row(f"rest ({len(report.groups) - len(shown)} groups)", f"{rest_count:,}",
                          human_size(rest_bytes), f"{rest_bytes:,}",
                          _pct(rest_bytes, report.file_size), _pct(cumulative, report.file_size),
                          style="dim")  # fmt: skip
        table.add_row(escape(OVERHEAD_LABEL), "", human_size(report.overhead_bytes),
                      f"{report.overhead_bytes:,}", _pct(report.overhead_bytes, report.file_size),
                      "100.0%" if report.file_size else "-", style="dim")  # fmt: skip
        table.add_section()
        table.add_row("total", f"{report.function_count:,}", human_size(report.file_size),
                      f"{report.file_size:,}", "100.0%" if report.file_size else "-", "",
                      style="bold")  # fmt: skip
        console.print(table)
        if jit is not None:
            report_jit_table(report, jit, console, top)
    return out.getvalue()


# -- compare ------------------------------------------------------------------------------------
def _pct_signed(value: float | None) -> str:
    return "new" if value is None else f"{value:+.1f}%"


def compare_json(comparison: Comparison, gates: Sequence[GateResult] = (), top: int = 20) -> str:
    """The comparison for machines: both sides' sources, per-group deltas, added/removed, and
    (builds with JIT families only) the JIT families' deltas in the host libraries."""
    from builder.report import SCHEMA

    def side(report: Report) -> dict[str, Any]:
        src = report.source
        return {"path": src.path, "target": src.target, "kind": src.kind, "wheel": src.wheel,
                "manifest": src.manifest, "member": src.member, "file_size": report.file_size,
                "function_count": report.function_count, "format_version": report.format_version,
                "by": report.by, "grouping": report.grouping,
                "provenance": report.provenance}  # fmt: skip

    def fns(rows: Sequence[Any]) -> dict[str, Any]:
        return {"count": len(rows), "bytes": sum(r.bytes for r in rows),
                "largest": [{"name": r.name, "group": r.group, "bytes": r.bytes}
                            for r in rows[:top]]}  # fmt: skip

    doc = {
        "schema": SCHEMA,
        "kind": "comparison",
        "base": side(comparison.base),
        "head": side(comparison.head),
        "delta_bytes": comparison.delta,
        "delta_percent": comparison.percent,
        "groups": [
            {
                "name": g.name,
                "overhead": g.overhead,
                "base_bytes": g.base_bytes,
                "head_bytes": g.head_bytes,
                "delta_bytes": g.delta,
                "delta_percent": g.percent,
                "base_function_count": g.base_count,
                "head_function_count": g.head_count,
            }
            for g in comparison.groups
        ],
        "added": fns(comparison.added),
        "removed": fns(comparison.removed),
        "changed": {
            "count": len(comparison.changed),
            "largest": [
                {
                    "name": c.name,
                    "group": c.group,
                    "base_bytes": c.base_bytes,
                    "head_bytes": c.head_bytes,
                    "delta_bytes": c.delta,
                }
                for c in comparison.changed[:top]
            ],
        },
        "gates": [{"name": g.name, "passed": g.passed, "message": g.message} for g in gates],
        "notes": comparison.notes,
    }
    if comparison.jit is not None:
        from builder.render_jit import compare_jit_json

        doc["jit"] = compare_jit_json(comparison.jit)
    return json.dumps(doc, indent=1) + "\n"


def compare_csv(comparison: Comparison) -> str:
    """One row per group: base, head, delta (bytes) and delta %."""
    lines = [_csv_line(["group", "base_function_count", "head_function_count", "base_bytes",
                        "head_bytes", "delta_bytes", "delta_percent"])]  # fmt: skip
    if not comparison.jit_only:  # with no metallib on either side its rows would all be zero
        for g in comparison.groups:
            pct = "" if g.percent is None else f"{g.percent:.4f}"
            lines.append(_csv_line([_csv_text(g.name), g.base_count, g.head_count, g.base_bytes,
                                    g.head_bytes, g.delta, pct]))  # fmt: skip
        lines.append(_csv_line(["[total]", comparison.base.function_count,
                                comparison.head.function_count, comparison.base_size,
                                comparison.head_size, comparison.delta,
                                "" if comparison.percent is None else f"{comparison.percent:.4f}"]))  # fmt: skip
    if comparison.jit is not None:
        from builder.render_jit import compare_jit_csv

        lines += [_csv_line([_csv_text(r[0]), *r[1:]]) for r in compare_jit_csv(comparison.jit)]
    return "".join(lines)


def _compare_rows(comparison: Comparison, top: int | None) -> tuple[list[Any], Any, Any]:
    """Groups to show (top N by |delta|), a folded rest (or None), and the overhead row."""
    from builder.compare import GroupDelta

    groups = [g for g in comparison.groups if not g.overhead]
    overhead = next(g for g in comparison.groups if g.overhead)
    if top is None or top >= len(groups):
        return groups, None, overhead
    rest = groups[top:]
    folded = GroupDelta(f"rest ({len(rest)} groups)", sum(g.base_bytes for g in rest),
                        sum(g.head_bytes for g in rest), sum(g.base_count for g in rest),
                        sum(g.head_count for g in rest))  # fmt: skip
    return groups[:top], folded, overhead


def _names(rows: Sequence[Any], limit: int) -> str:
    return ", ".join(f"{visible(r.name)} ({human_size(r.bytes)})" for r in rows[:limit])


def compare_table(
    comparison: Comparison,
    gates: Sequence[GateResult] = (),
    top: int | None = 20,
    *,
    color: bool = False,
    width: int = 100,
) -> str:
    """The human view of a comparison: the metallib table (skipped when neither side has a
    metallib), the JIT families' table (builds with JIT families), notes and gate verdicts."""
    from rich.console import Console
    from rich.markup import escape

    out = io.StringIO()
    console = Console(file=out, force_terminal=color, no_color=not color, width=width, emoji=False)
    if not comparison.jit_only:
        console.print(_metallib_delta_table(comparison, top))
    if comparison.jit is not None:
        from builder.render_jit import compare_jit_table

        compare_jit_table(comparison, console, top)
    if not comparison.jit_only:
        for label, rows, sign in (("added", comparison.added, 1),
                                  ("removed", comparison.removed, -1)):  # fmt: skip
            total = sum(r.bytes for r in rows)
            console.print(escape(f"functions {label}: {len(rows):,} ({human_delta(sign * total)})"
                                 + (f"; largest: {_names(rows, 5)}" if rows else "")),
                          highlight=False)  # fmt: skip
    for note in comparison.notes:
        console.print("note: " + _rich(note), highlight=False)
    for gate in gates:
        console.print(("PASS " if gate.passed else "FAIL ") + _rich(gate.message), highlight=False)
    return out.getvalue()


def _metallib_delta_table(comparison: Comparison, top: int | None) -> Any:
    """The rich table of a comparison's metallib groups."""
    from rich.table import Table

    base, head = comparison.base, comparison.head
    table = Table(
        title=(f"{_rich(base.source.label)} → {_rich(head.source.label)}: "
               f"{human_delta(comparison.delta)} ({_pct_signed(comparison.percent)})"),
        caption=(f"base: {_rich(_origin(base))}\nhead: {_rich(_origin(head))}\n"
                 f"base {_rich(provenance_line(base.provenance))}\n"
                 f"head {_rich(provenance_line(head.provenance))}"),
        title_justify="left",
        caption_justify="left",
    )  # fmt: skip
    table.add_column(head.by)
    for col in ("fns base", "fns head", "base", "head", "delta", "delta %"):
        table.add_column(col, justify="right")
    shown, rest, overhead = _compare_rows(comparison, top)
    for g in [*shown, *([rest] if rest else []), overhead]:
        style = (
            "dim"
            if g.overhead or g is rest
            else ("red" if g.delta > 0 else "green" if g.delta < 0 else "")
        )
        table.add_row(_rich(g.name), f"{g.base_count:,}", f"{g.head_count:,}",
                      human_size(g.base_bytes), human_size(g.head_bytes), human_delta(g.delta),
                      _pct_signed(g.percent), style=style)  # fmt: skip
    table.add_section()
    table.add_row("total", f"{base.function_count:,}", f"{head.function_count:,}",
                  human_size(comparison.base_size), human_size(comparison.head_size),
                  human_delta(comparison.delta), _pct_signed(comparison.percent), style="bold")  # fmt: skip
    return table
