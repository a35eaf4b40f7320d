"""The build presets ``variants`` (without ``--from``) built, side by side, as text.

One column per built preset, one row per kernel group; each column adds up to what the preset
ships, its metallib plus its host library. The figures are each preset's size report, measured
as ``report <its folder>`` measures a build (``builder.size.load``): an AOT unit's function
bytes in the metallib, a JIT unit's symbol bytes in the host library, and the rows no unit
owns under the names ``report`` gives them. ``build`` itself prints that report
(``builder.cli.build``).
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import TYPE_CHECKING, NamedTuple

from builder.render.text import OVERHEAD_LABEL, human_size, visible
from builder.size.report import jit_breakdown

if TYPE_CHECKING:
    from builder.cmake_build.presets import PresetResult
    from builder.size.report import Report

__all__ = ["presets_json", "presets_text"]

_LEGEND = (
    "AOT: the unit's function bytes in the metallib. JIT: the bytes of its symbols in the host",
    "library, where its source is embedded and compiled at run time. Each column adds up to the",
    "total shipped: metallib file + host library file.",
)

HOST_WHOLE = "[host library, not split]"
"""The row of a host library whose symbols could not be read: its bytes, no unit's share."""


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
        column.sizes[OVERHEAD_LABEL] = report.overhead_bytes
        column.unowned.append(OVERHEAD_LABEL)
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


def _origins(result: PresetResult, report: Report) -> list[str]:
    lines = [f"{result.name} ({result.description}):"]
    if report.source.path is not None:
        lines.append(
            f"  metallib {visible(report.source.path)}: function bytes, as report measures them"
        )
    jit = jit_breakdown(report)
    if jit is not None and jit.host_measured:
        lines.append(f"  {visible(jit.origin)}")
    elif report.source.manifest:
        lines.append(f"  manifest {visible(report.source.manifest)}: units and their modes")
    return lines


def _size(value: int | None, none: str = "") -> str:
    return none if value is None else human_size(value)


def _cell(column: _Column, unit: str) -> str:
    """``AOT 1.54 kB``, ``JIT 543 B``, ``JIT`` (symbols not read) or ``-`` (not in the build)."""
    mode = column.modes.get(unit)
    if mode is None:
        return "-"
    size = column.sizes.get(unit)
    return mode if size is None else f"{mode} {human_size(size)}"


def _table(head: list[list[str]], rows: list[list[str]], rules: set[int]) -> list[str]:
    """Left-aligned first column, right-aligned others; a dashed rule after the header and
    before each row index in ``rules``."""
    widths = [max(len(r[i]) for r in [*head, *rows]) for i in range(len(head[0]))]
    fmt = "  ".join(f"{{:<{w}}}" if i == 0 else f"{{:>{w}}}" for i, w in enumerate(widths))
    rule = fmt.format(*("-" * w for w in widths))
    lines = [fmt.format(*h) for h in head] + [rule]
    for at, row in enumerate(rows):
        if at in rules:
            lines.append(rule)
        lines.append(fmt.format(*row))
    return lines


def presets_text(results: Sequence[PresetResult]) -> str:
    """Units as rows, built presets as columns, then a total shipped row; under the table
    where each figure was measured, then the presets not built and why (each reason once)."""
    built = [(r, r.report) for r in results if r.report is not None and r.outcome is not None]
    lines: list[str] = []
    if built:
        columns = [_column(report) for _, report in built]
        largest: dict[str, int] = {}
        for column in columns:
            for name in column.modes:
                largest[name] = max(largest.get(name, 0), column.sizes.get(name, 0))
        unowned = list(dict.fromkeys(name for column in columns for name in column.unowned))
        head = [
            ["", *(r.name for r, _ in built)],
            ["kernel group", *(r.description for r, _ in built)],
        ]
        rows = [
            [visible(name), *(_cell(column, name) for column in columns)]
            for name in sorted(largest, key=lambda n: (-largest[n], n))
        ]
        rows += [[name, *(_size(column.sizes.get(name)) for column in columns)] for name in unowned]
        total_at = len(rows)
        reports = [report for _, report in built]
        rows += [
            ["total shipped", *(_size(r.shipped_bytes, "-") for r, _ in built)],
            [
                "  metallib file",
                *(_size(r.file_size if r.source.path is not None else None, "-") for r in reports),
            ],
            [
                "  host library file",
                *(
                    _size(r.host_library.file_size if r.host_library else None, "-")
                    for r in reports
                ),
            ],
            ["build time", *(f"{r.outcome.seconds:.1f} s" for r, _ in built if r.outcome)],
        ]
        lines += _table(head, rows, {total_at})
        lines += ["", *_LEGEND]
        for (result, report), column in zip(built, columns):
            lines += _origins(result, report) + [f"  {visible(n)}" for n in column.notes]
    reasons: dict[str, list[str]] = {}
    for r in results:
        if r.report is None:
            reasons.setdefault(r.reason or "not measured", []).append(r.name)
    for reason, names in reasons.items():
        lines.append(f"not built: {', '.join(names)}: {reason}")
    return "\n".join(lines)


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
