"""Reports and comparisons for scripts: JSON (schema 1, docs/report-schema.md) and CSV.

CSV text cells show control characters escaped and are guarded against spreadsheet formulas
(``builder.render.markup.csv_text``); numbers are written as they are.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import TYPE_CHECKING, Any

from builder.files.jsontext import dumps
from builder.render.checks import gate_message
from builder.render.download import DownloadColumn, wheels_of
from builder.render.markup import csv_line, csv_text
from builder.render.rows import top_rows
from builder.render.text import (
    OVERHEAD_LABEL,
    share,
)
from builder.size.jit_rows import jit_breakdown

if TYPE_CHECKING:
    from builder.size.checks import Check
    from builder.size.compare import Comparison
    from builder.size.report import Report
    from builder.size.rollup import Rollup

__all__ = ["compare_csv", "compare_json", "report_csv", "report_json"]


def report_json(reports: Sequence[Report]) -> str:
    """One report as a schema-1 object; several as ``{"schema": 1, "libraries": [...]}``."""
    from builder.size.report import SCHEMA, report_json_text

    if len(reports) == 1:
        return report_json_text(reports[0]) + "\n"
    body = ",".join(report_json_text(r) for r in reports)
    return f'{{"schema":{SCHEMA},"libraries":[{body}]}}\n'


def report_csv(reports: Sequence[Report], top: int | None = None) -> str:
    """One row per group (and the overhead), with the file each figure was measured in. With
    download figures (``--download``) two more columns, and a row per file of a wheel
    (``by`` = ``wheel file``, ``file`` = the wheel)."""
    downloads = any(r.download is not None for r in reports)
    nested = any(r.subgrouping is not None for r in reports)
    lines = [
        csv_line(
            [
                "file",
                "by",
                "group",
                *(["subgroup"] if nested else []),
                "function_count",
                "bytes",
                "share",
                *(["download_bytes", "download_share"] if downloads else []),
            ]
        )
    ]
    for report in reports:
        jit = jit_breakdown(report)
        if jit is not None:
            from builder.render.jit import report_jit_csv

            jit_rows = [
                [csv_text(r[0]), r[1], csv_text(r[2]), *([""] if nested else []), *r[3:]]
                for r in report_jit_csv(report, jit)
            ]
            if report.source.path is None:  # no metallib: its rows would all be zero
                lines += map(csv_line, jit_rows)
                continue
        path = csv_text(report.source.path or "")
        by = csv_text(report.by)
        whole = report.file_size
        dl = DownloadColumn.of(report)
        lines += _group_rows(report, top, [path, by], nested, downloads)
        overhead = report.overhead_bytes
        lines.append(
            csv_line(
                [
                    path,
                    by,
                    OVERHEAD_LABEL,
                    *([""] if nested else []),
                    "",
                    overhead,
                    share(overhead, whole),
                    *_cells(dl, downloads, dl.overhead if dl else 0),
                ]
            )
        )
        if jit is not None:
            lines += map(csv_line, jit_rows)
    for wheel in wheels_of(reports):
        lines += [
            csv_line(
                [
                    csv_text(wheel.path),
                    "wheel file",
                    csv_text(f.name),
                    *([""] if nested else []),
                    "",
                    f.bytes,
                    "",
                    f.download_bytes,
                    share(f.download_bytes, wheel.bytes),
                ]
            )
            for f in wheel.files
        ]
    return "".join(lines)


def _group_rows(
    report: Report, top: int | None, lead: list[str], nested: bool, downloads: bool
) -> list[str]:
    """A row per group; with two ``--by`` keys a row per (group, subgroup) instead, so the bytes
    column still adds up to the file (a group's own figures are the sum of its rows)."""
    dl = DownloadColumn.of(report)

    def row(group: str, subgroup: str | None, g: Rollup) -> str:
        return csv_line(
            [
                *lead,
                group,
                *([] if subgroup is None else [subgroup]),
                g.function_count,
                g.bytes,
                share(g.bytes, report.file_size),
                *_cells(dl, downloads, g.download_bytes),
            ]
        )

    blank = "" if nested else None
    lines = []
    shown = top_rows(report.groups, top)
    for group in shown.rows:
        if not group.children:
            lines.append(row(csv_text(group.name), blank, group))
            continue
        children = top_rows(group.children, top)
        lines += [row(csv_text(group.name), csv_text(c.name), c) for c in children.rows]
        if children.rest is not None:
            lines.append(row(csv_text(group.name), "[rest]", children.rest))
    if shown.rest is not None:
        lines.append(row("[rest]", blank, shown.rest))
    return lines


def _cells(column: DownloadColumn | None, wanted: bool, value: int | None) -> list[str | int]:
    """The download cells of a row: empty for a report without them beside one with them."""
    if column is None:
        return ["", ""] if wanted else []
    value = value or 0
    return [value, share(value, column.total)]


Evaluated = Sequence[tuple["Comparison", Sequence["Check"]]]
"""The library pairs of a ``compare`` run, each with its gate verdicts."""


def compare_json(pairs: Evaluated, top: int = 20) -> str:
    """One comparison as a schema-1 object; several (targets holding several libraries) as
    ``{"schema": 1, "kind": "comparisons", "libraries": [...]}``, the rule ``report`` follows,
    so the output is always one JSON document."""
    from builder.size.report import SCHEMA

    docs = [_comparison_dict(comparison, gates, top) for comparison, gates in pairs]
    if len(docs) == 1:
        return dumps(docs[0], indent=1) + "\n"
    return dumps({"schema": SCHEMA, "kind": "comparisons", "libraries": docs}, indent=1) + "\n"


def _comparison_dict(comparison: Comparison, gates: Sequence[Check], top: int) -> dict[str, Any]:
    """The comparison for machines: both sides' sources, per-group deltas, added/removed, and
    (builds with JIT families only) the JIT families' deltas in the host libraries."""
    from builder.size.report import SCHEMA

    def side(report: Report) -> dict[str, Any]:
        src = report.source
        return {
            "path": src.path,
            "target": src.target,
            "kind": src.kind,
            "wheel": src.wheel,
            "manifest": src.manifest,
            "member": src.member,
            "file_size": report.file_size,
            "function_count": report.function_count,
            "format_version": report.format_version,
            "by": report.by,
            "grouping": report.grouping,
            "provenance": report.provenance,
        }

    def fns(rows: Sequence[Any]) -> dict[str, Any]:
        return {
            "count": len(rows),
            "bytes": sum(r.bytes for r in rows),
            "largest": [{"name": r.name, "group": r.group, "bytes": r.bytes} for r in rows[:top]],
        }

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
                "head_bytes": g.bytes,
                "delta_bytes": g.delta,
                "delta_percent": g.percent,
                "base_function_count": g.base_function_count,
                "head_function_count": g.function_count,
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
        "gates": [
            {"name": f"--{g.name}", "passed": g.passed, "message": gate_message(g)} for g in gates
        ],
        "notes": comparison.notes,
    }
    _add_download(doc, comparison)
    if comparison.jit is not None:
        from builder.render.jit import compare_jit_json

        doc["jit"] = compare_jit_json(comparison.jit)
    return doc


def _add_download(doc: dict[str, Any], comparison: Comparison) -> None:
    """``compare --download``: the modelled download of both sides, per group and in total."""
    delta = comparison.download_delta
    if delta is None:
        return
    for row, g in zip(doc["groups"], comparison.groups):
        row.update(
            base_download_bytes=g.base_download_bytes,
            head_download_bytes=g.download_bytes,
            delta_download_bytes=g.download_delta,
        )
    for side, report in (("base", comparison.base), ("head", comparison.head)):
        doc[side]["download_bytes"] = report.download.total if report.download else None
    doc.update(delta_download_bytes=delta, delta_download_percent=comparison.download_percent)


def _number(value: int | None) -> str | int:
    return "" if value is None else value


def compare_csv(pairs: Evaluated) -> str:
    """One row per group: base, head, delta (bytes) and delta %. With several library pairs, one
    table whose first column, ``library``, names each pair's head library."""
    header = [
        "group",
        "base_function_count",
        "head_function_count",
        "base_bytes",
        "head_bytes",
        "delta_bytes",
        "delta_percent",
    ]
    if any(c.download_delta is not None for c, _ in pairs):
        header += ["base_download_bytes", "head_download_bytes", "delta_download_bytes"]
    if len(pairs) == 1:
        return csv_line(header) + "".join(_comparison_rows(pairs[0][0]))
    lines = [csv_line(["library", *header])]
    for comparison, _ in pairs:
        library = csv_text(comparison.head.source.member or comparison.head.source.label)
        lines += [f"{csv_line([library])[:-1]},{row}" for row in _comparison_rows(comparison)]
    return "".join(lines)


def _comparison_rows(comparison: Comparison) -> list[str]:
    lines: list[str] = []
    base_dl, head_dl = comparison.base.download, comparison.head.download
    with_download = comparison.download_delta is not None
    if not comparison.jit_only:  # with no metallib on either side its rows would all be zero
        for g in comparison.groups:
            pct = "" if g.percent is None else f"{g.percent:.4f}"
            extra = (
                [
                    _number(g.base_download_bytes),
                    _number(g.download_bytes),
                    _number(g.download_delta),
                ]
                if with_download
                else []
            )
            lines.append(
                csv_line(
                    [
                        csv_text(g.name),
                        _number(g.base_function_count),
                        g.function_count,
                        _number(g.base_bytes),
                        g.bytes,
                        g.delta,
                        pct,
                        *extra,
                    ]
                )
            )
        extra = (
            [base_dl.total, head_dl.total, _number(comparison.download_delta)]
            if with_download and base_dl and head_dl
            else []
        )
        lines.append(
            csv_line(
                [
                    "[total]",
                    comparison.base.function_count,
                    comparison.head.function_count,
                    comparison.base_size,
                    comparison.head_size,
                    comparison.delta,
                    "" if comparison.percent is None else f"{comparison.percent:.4f}",
                    *extra,
                ]
            )
        )
    if comparison.jit is not None:
        from builder.render.jit import compare_jit_csv

        lines += [csv_line([csv_text(r[0]), *r[1:]]) for r in compare_jit_csv(comparison.jit)]
    return lines
