"""The build presets ``presets`` built, side by side: one column per built preset, one row per
unit, on the table model (``builder.render.table``), and JSON.

Each column adds up to what the preset ships, its metallib plus its host library. The figures
are each preset's size report, measured as ``report <its folder>`` measures a build
(``builder.size.load``): an AOT unit's function bytes in the metallib, a JIT unit's symbol bytes
in the host library, and the rows no unit owns under the names ``report`` gives them. ``build``
itself prints that report (``builder.cli.build``).
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import TYPE_CHECKING, Any, NamedTuple

from builder.render.table import CSV_ONLY, PEOPLE, Column, Name, Row, Said, Table, Words
from builder.render.text import human_size
from builder.size.compare import OVERHEAD, jit_breakdown

if TYPE_CHECKING:
    from builder.cmake_build.driver import PresetResult
    from builder.size.report import Report

__all__ = ["HOST_WHOLE", "presets_json", "presets_table"]

HOST_WHOLE = "[host library, not split]"
"""The row of a host library whose symbols could not be read: its bytes, no unit's share."""
_LEGEND = (
    "AOT: the unit's function bytes in the metallib. JIT: the bytes of its symbols in the host "
    "library, where its source is embedded and compiled at run time. Each column adds up to the "
    "total shipped: metallib file + host library file."
)


class _Column(NamedTuple):
    """One built preset's figures: a mode and bytes per unit, the rows no unit owns."""

    modes: dict[str, str]
    """``AOT`` or ``JIT`` per unit."""
    sizes: dict[str, int]
    """Bytes per row (a JIT unit has none when the host library's symbols were not read)."""
    unowned: list[str]
    """Rows that are no unit's, in the order ``report`` shows them."""
    notes: list[str]


def _column(report: Report) -> _Column:
    column = _Column({}, {}, [], [])
    if report.source.path is not None:
        for group in report.groups:
            column.modes[group.name], column.sizes[group.name] = "AOT", group.bytes
        column.sizes[OVERHEAD] = report.overhead_bytes
        column.unowned.append(OVERHEAD)
    jit = jit_breakdown(report)
    if jit is None:
        return column
    for row in jit.units:
        column.modes[row.name] = "JIT"
        if jit.host_measured:
            column.sizes[row.name] = row.bytes
    for extra in jit.overhead:
        column.sizes[extra.name] = extra.bytes
        column.unowned.append(extra.name)
    host = report.host_library
    if jit.host_measured:
        pass
    elif host is not None:
        column.sizes[HOST_WHOLE] = host.file_size
        column.unowned.append(HOST_WHOLE)
        column.notes.append(f"JIT units not split: {jit.origin}")
    else:
        column.notes.append(f"no host library: {jit.origin}")
    return column


def _origins(result: PresetResult, report: Report, column: _Column) -> list[Words]:
    """Where a preset's figures were measured, and what could not be split."""
    lines: list[Words] = [(Name(result.name), " (", Said(result.description), "):")]
    if report.source.path is not None:
        lines.append(
            ("  metallib ", Said(report.source.path), ": function bytes, as report measures them")
        )
    jit = jit_breakdown(report)
    if jit is not None and jit.host_measured:
        lines.append(("  ", Said(jit.origin)))
    elif report.source.manifest:
        lines.append(("  manifest ", Said(report.source.manifest), ": units and their modes"))
    return lines + [("  ", Said(note)) for note in column.notes]


def _cell(mode: str | None, size: int | None) -> str:
    """``AOT 1.54 kB``, ``JIT 543 B``, ``JIT`` (symbols not read), ``1.20 kB`` (a row no unit
    owns) or ``-`` (not in the build)."""
    if size is None:
        return mode or "-"
    return human_size(size) if mode is None else f"{mode} {human_size(size)}"


def presets_table(results: Sequence[PresetResult]) -> Table:
    """Units as rows, built presets as columns (``AOT 1.54 kB`` for people; the mode and the
    bytes apart in CSV), then what each ships; under it where each figure was measured, then the
    presets not built and why (each reason once)."""
    built = [(r, r.report) for r in results if r.report is not None and r.outcome is not None]
    columns = [_column(report) for _, report in built]
    largest: dict[str, int] = {}
    for column in columns:
        for name in column.modes:
            largest[name] = max(largest.get(name, 0), column.sizes.get(name, 0))
    heads = [Column("group", "kernel group", "text")]
    for result, _ in built:
        heads += [
            Column(result.name, result.name, "text", PEOPLE),
            Column(f"{result.name}_mode", f"{result.name} mode", "text", CSV_ONLY),
            Column(f"{result.name}_bytes", f"{result.name} bytes", "bytes", CSV_ONLY),
        ]

    def row(name: str, modes: list[str | None], sizes: list[int | None], **how: Any) -> Row:
        cells = [(_cell(m, s), m, s) for m, s in zip(modes, sizes, strict=True)]
        return Row((name, *(value for cell in cells for value in cell)), **how)

    def each(name: str) -> Row:
        return row(
            Name(name), [c.modes.get(name) for c in columns], [c.sizes.get(name) for c in columns]
        )

    none: list[str | None] = [None] * len(built)
    unowned = dict.fromkeys(name for column in columns for name in column.unowned)
    reports = [report for _, report in built]
    rows = [each(name) for name in sorted(largest, key=lambda n: (-largest[n], n))]
    rows += [each(name) for name in unowned]
    rows += [
        row("total shipped", none, [r.shipped_bytes for r, _ in built], role="total"),
        row("metallib file", none, [r.file_size if r.source.path else None for r in reports]),
        row(
            "host library file",
            none,
            [r.host_library.file_size if r.host_library else None for r in reports],
        ),
        Row(
            ("build time", *(v for r, _ in built for v in (_seconds(r), None, None))),
            media=PEOPLE,
        ),
    ]
    caption: list[Words] = [(_LEGEND,)] if built else []
    for (result, report), column in zip(built, columns, strict=True):
        caption += _origins(result, report, column)
    reasons: dict[str, list[str]] = {}
    for r in results:
        if r.report is None:
            reasons.setdefault(r.reason or "not measured", []).append(r.name)
    return Table(
        tuple(heads),
        tuple(rows),
        title=("Presets side by side",),
        caption=tuple(caption),
        notes=tuple(
            (f"not built: {', '.join(names)}: ", Said(why)) for why, names in reasons.items()
        ),
        csv_total="total shipped",
    )


def _seconds(result: PresetResult) -> str:
    return f"{result.outcome.seconds:.1f} s" if result.outcome else "-"


def presets_json(results: Sequence[PresetResult]) -> str:
    """``presets --format json`` (schema 1): per preset whether it was built (and why not), its
    build time, what it ships and its size report (the document ``report <its folder> --format
    json`` prints)."""
    from builder.files.dataclass_json import dumps
    from builder.render.json_docs import report_dict

    doc = {
        "schema": 1,
        "presets": [
            {
                "name": r.name,
                "description": r.description,
                "built": r.outcome is not None,
                "reason": r.reason,
                "seconds": round(r.outcome.seconds, 3) if r.outcome else None,
                "shipped_bytes": r.shipped_bytes,
                "report": report_dict(r.report) if r.report is not None else None,
            }
            for r in results
        ],
    }
    return dumps(doc, indent=1)
