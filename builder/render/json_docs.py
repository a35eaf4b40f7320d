"""Every JSON document of a size result, built here from the model (docs/report-schema.md):
``report``, ``compare`` (with its gates and the JIT side), ``budget`` and ``history``.

One module so that a key is spelled once and the documents agree: a report's own object (schema
1, also the saved-report format that ``builder.size.report`` reads back) is
``builder.size.report.report_to_dict``, which this module wraps for output.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import TYPE_CHECKING, Any

from builder.files.jsontext import dumps
from builder.render.checks import gate_message
from builder.render.history import DOWNLOAD_METHOD
from builder.render.text import limit_text
from builder.size.report import SCHEMA, report_json_text

if TYPE_CHECKING:
    from builder.size.checks import Check, Evaluated
    from builder.size.compare import Comparison, JitComparison
    from builder.size.history import HistoryPoint
    from builder.size.report import Report

__all__ = ["budget_json", "compare_json", "history_json", "report_json"]


def report_json(reports: Sequence[Report]) -> str:
    """One report as a schema-1 object; several as ``{"schema": 1, "libraries": [...]}``."""
    if len(reports) == 1:
        return report_json_text(reports[0]) + "\n"
    body = ",".join(report_json_text(r) for r in reports)
    return f'{{"schema":{SCHEMA},"libraries":[{body}]}}\n'


def compare_json(pairs: Evaluated, top: int = 20) -> str:
    """One comparison as a schema-1 object; several (targets holding several libraries) as
    ``{"schema": 1, "kind": "comparisons", "libraries": [...]}``, the rule ``report`` follows,
    so the output is always one JSON document."""
    docs = [_comparison_dict(comparison, gates, top) for comparison, gates in pairs]
    if len(docs) == 1:
        return dumps(docs[0], indent=1) + "\n"
    return dumps({"schema": SCHEMA, "kind": "comparisons", "libraries": docs}, indent=1) + "\n"


def _comparison_dict(comparison: Comparison, gates: Sequence[Check], top: int) -> dict[str, Any]:
    """The comparison for machines: both sides' sources, per-group deltas, added/removed, and
    (builds with JIT families only) the JIT families' deltas in the host libraries."""

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
        doc["jit"] = _jit_dict(comparison.jit)
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


def _jit_dict(jit: JitComparison) -> dict[str, Any]:
    """The ``jit`` object of a comparison."""
    return {
        "measured": "host library symbols" if jit.host_measured else "embedded source (manifest)",
        "base_origin": jit.base_origin,
        "head_origin": jit.head_origin,
        "base_bytes": jit.base_total,
        "head_bytes": jit.head_total,
        "delta_bytes": jit.delta,
        "delta_percent": jit.percent,
        "new_families": jit.new_families,
        "families": [
            {
                "name": g.name,
                "overhead": g.overhead,
                "base_bytes": g.base_bytes,
                "head_bytes": g.bytes,
                "delta_bytes": g.delta,
                "delta_percent": g.percent,
                "base_kernel_count": g.base_function_count,
                "head_kernel_count": g.function_count,
            }
            for g in jit.groups
        ],
    }


def budget_json(checks: Sequence[Check], source: str) -> str:
    """``{"schema": 1, "kind": "budget", "file", "passed", "checks": [...]}``; every figure in
    bytes (functions for ``max-functions``) with the files it was measured in."""

    def row(c: Check) -> dict[str, Any]:
        doc: dict[str, Any] = {
            "budget": c.subject,
            "key": c.name,
            "group": c.group,
            "limit": c.limit,
            "value": c.value,
            "passed": c.passed,
            "unit": "functions" if c.name == "max-functions" else "bytes",
            "measured_in": list(c.measured_in),
        }
        if c.growth is not None:
            doc.update(max_growth=limit_text(c.growth), base_value=c.base_value)
        return doc

    doc = {
        "schema": SCHEMA,
        "kind": "budget",
        "file": source,
        "passed": all(c.passed for c in checks),
        "checks": [row(c) for c in checks],
    }
    return dumps(doc, indent=1) + "\n"


def history_json(points: Sequence[HistoryPoint], by: str) -> str:
    """``{"schema": 1, "kind": "history", "by", "points": [{"target", "bytes", "groups", ...}]}``
    with every group of every point."""

    def point(p: HistoryPoint) -> dict[str, Any]:
        doc: dict[str, Any] = {
            "target": p.target,
            "bytes": p.bytes,
            "function_count": p.function_count,
            "groups": [{"name": n, "bytes": b} for n, b in p.groups],
            "measured_in": list(p.measured_in),
        }
        if p.download_bytes is not None:
            doc["download_bytes"] = p.download_bytes
        if p.host_library_bytes is not None:
            doc["host_library_bytes"] = p.host_library_bytes
        return doc

    doc: dict[str, Any] = {
        "schema": SCHEMA,
        "kind": "history",
        "by": by,
        "points": [point(p) for p in points],
    }
    if any(p.download_bytes is not None for p in points):
        doc["download_method"] = DOWNLOAD_METHOD
    return dumps(doc, indent=1) + "\n"
