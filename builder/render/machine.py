"""Reports and comparisons for scripts: JSON (schema 1, docs/report-schema.md) and CSV.

CSV text cells show control characters escaped and are guarded against spreadsheet formulas
(``builder.render.markup.csv_text``); numbers are written as they are.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import TYPE_CHECKING

from builder.render.download import DownloadColumn, wheels_of
from builder.render.markup import csv_line, csv_text
from builder.render.rows import report_lines
from builder.render.text import (
    OVERHEAD_LABEL,
    share,
)
from builder.size.jit_rows import jit_breakdown

if TYPE_CHECKING:
    from builder.size.checks import Evaluated
    from builder.size.compare import Comparison
    from builder.size.jit_rows import JitBreakdown
    from builder.size.report import Report
    from builder.size.rollup import Rollup

__all__ = ["compare_csv", "report_csv"]


def report_csv(reports: Sequence[Report], top: int | None = None) -> str:
    """One row per group (and the overhead), with the file each figure was measured in (a
    library inside a binary: ``BINARY#IDENTITY``, as several libraries share the binary). With
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
        if jit is not None and report.source.path is None:  # no metallib: its rows would be 0
            lines += _jit_lines(report, jit, nested)
            continue
        src = report.source
        inside = f"#{src.identity}" if src.identity is not None and src.path else ""
        path = csv_text((src.path or "") + inside)
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
            lines += _jit_lines(report, jit, nested)
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
    for line in report_lines(report.groups, top):
        g = line.row
        name = "[rest]" if line.rest else csv_text(g.name)
        if line.parent is not None:
            lines.append(row(csv_text(line.parent.name), name, g))
        elif not g.children:  # a group with children: its rows are theirs
            lines.append(row(name, blank, g))
    return lines


def _cells(column: DownloadColumn | None, wanted: bool, value: int | None) -> list[str | int]:
    """The download cells of a row: empty for a report without them beside one with them."""
    if column is None:
        return ["", ""] if wanted else []
    value = value or 0
    return [value, share(value, column.total)]


def _number(value: int | None) -> str | int:
    return "" if value is None else value


def compare_csv(pairs: Evaluated) -> str:
    """One row per group: base, head, delta (bytes) and delta %. With several library pairs, or
    a library on one side only, one table whose first columns name each pair's library
    (``library``; base's for a removed one) and say whether it is in both (``change``:
    ``paired``, ``added``, ``removed``)."""
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
    if len(pairs) == 1 and pairs[0][0].change == "paired":
        return csv_line(header) + "".join(_comparison_rows(pairs[0][0]))
    lines = [csv_line(["library", "change", *header])]
    for comparison, _ in pairs:
        source = comparison.library.source
        named = csv_line([csv_text(source.member or source.label), comparison.change])[:-1]
        lines += [f"{named},{row}" for row in _comparison_rows(comparison)]
    return "".join(lines)


def _percent(value: float | None) -> str:
    return "" if value is None else f"{value:.4f}"


def _delta_line(name: str, row: Rollup, counts: bool = True, download: bool = False) -> str:
    """A joined row (``builder.size.rollup.join``): counts and bytes of base and head, the delta."""
    downloads = (
        [row.base_download_bytes, row.download_bytes, row.download_delta] if download else []
    )
    return csv_line(
        [
            csv_text(name),
            *([_number(row.base_function_count), row.function_count] if counts else ["", ""]),
            _number(row.base_bytes),
            row.bytes,
            row.delta,
            _percent(row.percent),
            *map(_number, downloads),
        ]
    )


def _comparison_rows(comparison: Comparison) -> list[str]:
    lines: list[str] = []
    base_dl, head_dl = comparison.base.download, comparison.head.download
    download = comparison.download_delta is not None
    if not comparison.jit_only:  # with no metallib on either side its rows would all be zero
        lines += [_delta_line(g.name, g, download=download) for g in comparison.groups]
        extra = (
            [base_dl.total, head_dl.total, _number(comparison.download_delta)]
            if download and base_dl and head_dl
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
                    _percent(comparison.percent),
                    *extra,
                ]
            )
        )
    jit = comparison.jit
    if jit is not None:
        lines += [_delta_line(f"jit:{g.name}", g, counts=not g.overhead) for g in jit.groups]
        units = [g for g in jit.groups if not g.overhead]
        total: list[str | int] = [
            "[jit total]",
            sum(g.base_function_count or 0 for g in units),
            sum(g.function_count for g in units),
            jit.base_total,
            jit.head_total,
            jit.delta,
            _percent(jit.percent),
        ]
        lines.append(csv_line(total))
    return lines


def _jit_lines(report: Report, jit: JitBreakdown, nested: bool) -> list[str]:
    """The JIT side of a report (``by`` is ``jit``; ``file`` the host library, or the manifest
    when its symbols were not measured; ``function_count`` a unit's kernels)."""
    library = report.host_library
    where = library.path if jit.host_measured and library else report.source.manifest or ""
    return [
        csv_line(
            [
                csv_text(where),
                "jit",
                csv_text(r.name),
                *([""] if nested else []),
                "" if r.overhead else r.function_count,
                r.bytes,
                share(r.bytes, jit.total),
            ]
        )
        for r in [*jit.units, *jit.overhead]
    ]
