"""Every JSON document of a size result, written here and nowhere else (docs/report-schema.md):
``report``, ``compare`` (with its gates and the JIT side), ``budget``, ``history``, ``sources``.

One module so that a key is spelled once and the documents agree. A report's own object is
``dump(report)`` (the codec, ``builder.files.dataclass_json``), its functions written row by row
(``report_json_text``).
"""

from __future__ import annotations

import re
from collections.abc import Sequence
from dataclasses import replace
from operator import itemgetter
from typing import TYPE_CHECKING, cast

from builder.files.dataclass_json import dump, dumps
from builder.size.change_summary import summarize
from builder.size.report import SCHEMA
from builder.size.rollup import SAVED_FIELDS

if TYPE_CHECKING:
    from builder.render.library import Found
    from builder.size.attribution import BinaryAccount
    from builder.size.compare import Comparison, JitComparison
    from builder.size.duplicates import Duplication
    from builder.size.history import HistoryPoint, LibraryHistory
    from builder.size.report import Report
    from builder.size.rollup import FunctionRow, Rollup
    from builder.size.verdicts import Evaluated, Verdict

__all__ = [
    "budget_json",
    "compare_json",
    "history_json",
    "report_dict",
    "report_json",
    "report_json_text",
    "sources_json",
]

SIZE_SCHEMA = 2
"""The layout of ``compare``'s, ``history``'s and ``sources``' documents; a report's is
``SCHEMA`` (3), budget's ``BUDGET_SCHEMA``."""


def report_json_text(report: Report) -> str:
    """The report's JSON, compact. Its functions (17,000 in MLX's library) are formatted directly
    when every name and group is plain printable ASCII without quotes or backslashes (always true
    for Metal host names); otherwise the general encoder writes them. Field order and values are
    identical either way."""
    text = "".join(f.name + f.group for f in report.functions)
    if report.download is not None or report.subgrouping is not None or not _PLAIN.fullmatch(text):
        return dumps(report_dict(report), separators=(",", ":"))
    head = dumps(dump(report), separators=(",", ":"))
    body = ",".join(map(_FUNCTION_JSON.__mod__, map(_JSON_VALUES, report.functions)))
    return head[:-1] + ',"functions":[' + body + "]}"


_PLAIN = re.compile(r"[ !#-\[\]-~]*")
_TEXT_FIELDS = ("name", "group")
_FUNCTION_JSON = (
    "{" + ",".join(f'"{n}":' + ('"%s"' if n in _TEXT_FIELDS else "%d") for n in SAVED_FIELDS) + "}"
)
_JSON_VALUES = itemgetter(slice(0, len(SAVED_FIELDS)))


def _function_dicts(report: Report) -> list[dict[str, object]]:
    rows = [dict(zip(SAVED_FIELDS, f)) for f in report.functions]
    if report.subgrouping is not None:  # two --by keys: each function's second label too
        rows = [
            {"name": row["name"], "group": row["group"], "subgroup": f.subgroup, **row}
            for row, f in zip(rows, report.functions)
        ]
    for row, share in zip(rows, report.download.functions if report.download else ()):
        row["download_bytes"] = share
    return rows


def report_dict(report: Report) -> dict[str, object]:
    """The report's JSON object with its functions (``presets``' documents embed it)."""
    doc = cast(dict[str, object], dump(report))
    doc["functions"] = _function_dicts(report)
    return doc


def report_json(
    reports: Sequence[Report],
    binaries: Sequence[BinaryAccount] = (),
    duplicates: Sequence[Duplication] | None = None,
) -> str:
    """One report as a schema-3 object; several as ``{"schema": 3, "libraries": [...]}``. With
    ``binaries`` (libraries inside a binary), their accounts as a ``binaries`` key of the
    top-level object; with ``duplicates`` (several libraries), a ``duplicates`` key after it:
    one entry per pair of libraries sharing any function name (``builder.size.duplicates``)."""
    tail = ""
    if binaries:
        tail = ',"binaries":' + dumps(binary_json(binaries), separators=(",", ":"))
    if duplicates is not None and len(reports) > 1:
        tail += ',"duplicates":' + dumps(dump(list(duplicates)), separators=(",", ":"))
    if len(reports) == 1:
        return report_json_text(reports[0])[:-1] + tail + "}\n"
    body = ",".join(report_json_text(r) for r in reports)
    return f'{{"schema":{SCHEMA},"libraries":[{body}]{tail}}}\n'


def _gate_message(gate: Verdict) -> str:
    # imported here: the gates' words (and the table model behind them) are not on the path of
    # ``report --format json``
    from builder.render.text import gate_message

    return gate_message(gate)


def verdict_fields(verdict: Verdict) -> dict[str, object]:
    """What a verdict of a content gate adds to its JSON row, the fields it has
    (``builder.size.content_gates``): ``at_least`` (the limit is a floor), ``pattern``,
    ``names`` (every one: removed functions, the platform facts that changed), ``value_text``
    and ``limit_text`` (versions as stated and as written)."""
    v, doc = verdict, dict[str, object]()
    if v.at_least:
        doc["at_least"] = True
    for key, value in (("pattern", v.pattern), ("value_text", v.value_text)):
        if value is not None:
            doc[key] = value
    if v.limit_text is not None:
        doc["limit_text"] = v.limit_text
    if v.names:
        doc["names"] = list(v.names)
    return doc


def _gate_row(gate: Verdict) -> dict[str, object]:
    from builder.render.verdict_words import counts

    doc: dict[str, object] = {
        "name": gate.name if gate.name == "empty-library" else f"--{gate.name}",
        "passed": gate.passed,
        "message": _gate_message(gate),
        "limit": gate.limit,
        "value": gate.value,
        "counts": counts(gate),
    }
    if gate.base_value is not None:
        doc["base_value"] = gate.base_value
    return doc | verdict_fields(gate)


def compare_json(pairs: Evaluated, top: int | None = 20) -> str:
    """One comparison as a schema-2 object; several (targets holding several libraries) as
    ``{"schema": 2, "kind": "comparisons", "libraries": [...]}``, the rule ``report`` follows,
    so the output is always one JSON document."""
    docs = [_comparison_dict(comparison, gates, top) for comparison, gates in pairs]
    if len(docs) == 1:
        return dumps(docs[0], indent=1) + "\n"
    return dumps({"schema": SIZE_SCHEMA, "kind": "comparisons", "libraries": docs}, indent=1) + "\n"


def _comparison_dict(
    comparison: Comparison, gates: Sequence[Verdict], top: int | None
) -> dict[str, object]:
    """The comparison for machines: both sides' sources, per-group deltas, added/removed, and
    (builds with JIT units only) the JIT units' deltas in the host libraries. With
    ``compare --download``, the modelled download of both sides, per group and in total. A
    library on one side only (``change``: ``added``, ``removed``) has null for the other side,
    and its deltas are against nothing."""
    download = comparison.download_delta is not None

    def side(report: Report) -> dict[str, object]:
        doc: dict[str, object] = {
            **dump(replace(report.source, embedded=None)),
            "file_size": report.file_size,
            "function_count": report.function_count,
            "format_version": report.format_version,
            "by": report.by,
            "grouping": report.grouping,
            "provenance": report.provenance,
            "warnings": report.warnings,  # what stderr said of the side
            "tree_kernels_missing": report.tree_kernels_missing,  # null without a kernel tree
        }
        if download:
            doc["download_bytes"] = report.download.total if report.download else None
        return doc

    def fns(rows: Sequence[FunctionRow]) -> dict[str, object]:
        return {
            "count": len(rows),
            "bytes": sum(r.bytes for r in rows),
            "largest": [{"name": r.name, "group": r.group, "bytes": r.bytes} for r in rows[:top]],
        }

    doc: dict[str, object] = {
        "schema": SIZE_SCHEMA,
        "kind": "comparison",
        "change": comparison.change,
        "base": None if comparison.change == "added" else side(comparison.base),
        "head": None if comparison.change == "removed" else side(comparison.head),
        "delta_bytes": comparison.delta,
        "delta_percent": comparison.percent,
        "summary": _summary(comparison, top),
        "groups": [_delta_row(g, "function_count", download) for g in comparison.groups],
        "added": fns(comparison.added),
        "removed": fns(comparison.removed),
        "changed": {
            "count": len(comparison.changed),
            "largest": [{**dump(c), "delta_bytes": c.delta} for c in comparison.changed[:top]],
        },
        "gates": [_gate_row(g) for g in gates],
        "notes": comparison.notes,
    }
    if download:
        doc["delta_download_bytes"] = comparison.download_delta
        doc["delta_download_percent"] = comparison.download_percent
    if comparison.jit is not None:
        doc["jit"] = _jit_dict(comparison.jit)
    return doc


def _summary(comparison: Comparison, top: int | None) -> dict[str, object]:
    """What changed in numbers (``builder.size.change_summary``): the groups (a JIT-only pair's
    units) new, grown, shrunk, removed (each ``groups`` and signed ``delta_bytes``) and
    unchanged; the renamed functions (``top`` largest); what a table's ``top`` rows explain."""
    from builder.render.compare_tables import explained_groups  # the table model's rule

    jit = comparison.jit if comparison.jit_only else None
    c = comparison
    s = summarize(jit.groups) if jit else summarize(c.groups, c.added, c.removed)
    shown = explained_groups(comparison, top)
    doc = cast(dict[str, object], dump(replace(s, renames=s.renames[:top])))
    doc["renames"] = {"count": len(s.renames), "largest": doc["renames"]}
    shares = {"explained": shown.share, "groups_explained": shown.group_share}
    doc["rows_shown"] = {"top": top, **shares, "label_tokens": shown.tokens}
    return {"of": "units" if jit else "groups", **doc}


def _delta_row(row: Rollup, count: str, download: bool = False) -> dict[str, object]:
    """A joined row (``builder.size.rollup.join``): base, head and delta; ``count`` names what
    its function count counts."""
    doc: dict[str, object] = {
        "name": row.name,
        "overhead": row.overhead,
        "base_bytes": row.base_bytes,
        "head_bytes": row.bytes,
        "delta_bytes": row.delta,
        "delta_percent": row.percent,
        f"base_{count}": row.base_function_count,
        f"head_{count}": row.function_count,
    }
    if download:
        doc["base_download_bytes"] = row.base_download_bytes
        doc["head_download_bytes"] = row.download_bytes
        doc["delta_download_bytes"] = row.download_delta
    return doc


def _jit_dict(jit: JitComparison) -> dict[str, object]:
    """The ``jit`` object of a comparison."""
    return {
        "measured": "host library symbols" if jit.host_measured else "embedded source (manifest)",
        "base_origin": jit.base_origin,
        "head_origin": jit.head_origin,
        "base_bytes": jit.base_total,
        "head_bytes": jit.head_total,
        "delta_bytes": jit.delta,
        "delta_percent": jit.percent,
        "new_units": jit.new_units,
        "units": [_delta_row(g, "kernel_count") for g in jit.groups],
    }


BUDGET_SCHEMA = 3
"""The budget document's own layout: 3 since its ``checks`` are ``verdicts`` (a check is the
``check`` command's)."""


def budget_json(verdicts: Sequence[Verdict], source: str, warnings: Sequence[str] = ()) -> str:
    """``{"schema": BUDGET_SCHEMA, "kind": "budget", "file", "passed", "verdicts": [...]}``; every
    figure in bytes (functions for ``max-functions``) with the files it was measured in."""
    from builder.render.verdict_words import counts

    def row(c: Verdict) -> dict[str, object]:
        doc: dict[str, object] = {
            "budget": c.subject,
            "key": c.name,
            "group": c.group,
            "limit": c.limit,
            "value": c.value,
            "passed": c.passed,
            "counts": counts(c),
            "measured_in": list(c.measured_in),
        }
        if c.base_value is not None and c.growth is None:
            doc["base_value"] = c.base_value
        doc.update(verdict_fields(c))
        if c.growth is not None:
            from builder.render.text import limit_text

            doc.update(max_growth=limit_text(c.growth), base_value=c.base_value)
        return doc

    doc = {
        "schema": BUDGET_SCHEMA,
        "kind": "budget",
        "file": source,
        "passed": all(c.passed for c in verdicts),
        "verdicts": [row(c) for c in verdicts],
        "warnings": list(warnings),  # what stderr said of the libraries: BUDGET: LIBRARY: ...
    }
    return dumps(doc, indent=1) + "\n"


def history_json(histories: Sequence[LibraryHistory], by: str) -> str:
    """``{"schema": SIZE_SCHEMA, "kind": "history", "by", "points": [{"target", "bytes", "groups",
    ...}]}`` with every group of every point; targets holding several libraries: a history per
    library, ``"libraries": [{"library": NAME, "points": [...]}]`` instead of ``points`` (the
    rule ``report`` and ``compare`` follow), never a sum over alternatives."""

    def point(p: HistoryPoint) -> dict[str, object]:
        doc: dict[str, object] = {
            "target": p.target,
            "bytes": p.bytes,
            "function_count": p.function_count,
            "groups": [{"name": g.name, "bytes": g.bytes} for g in p.groups],
            "measured_in": list(p.measured_in),
        }
        if p.download_bytes is not None:
            doc["download_bytes"] = p.download_bytes
        if p.host_library_bytes is not None:
            doc["host_library_bytes"] = p.host_library_bytes
        if p.warnings:
            doc["warnings"] = list(p.warnings)
        if p.tree_kernels_missing is not None:
            doc["tree_kernels_missing"] = list(p.tree_kernels_missing)
        return doc

    doc: dict[str, object] = {"schema": SIZE_SCHEMA, "kind": "history", "by": by}
    if len(histories) == 1:  # steps: the groups that moved most from each point to the next
        doc.update(points=[point(p) for p in histories[0].points], steps=dump(histories[0].steps))
    else:
        doc["libraries"] = [
            {"library": h.library, "points": [point(p) for p in h.points], "steps": dump(h.steps)}
            for h in histories
        ]
    if any(p.download_bytes is not None for h in histories for p in h.points):
        from builder.render.compare_tables import DOWNLOAD_METHOD

        doc["download_method"] = DOWNLOAD_METHOD
    return dumps(doc, indent=1) + "\n"


def sources_json(path: str, found: Found, namespace: str | None) -> str:
    """``{"schema": SIZE_SCHEMA, "kind": "sources", "path", "namespace", "bytes",
    "host_sources": [...]}``: each function returning a string literal, the wheel member
    holding it (``member``, null for a binary given itself), where its string sits and its bytes
    (NUL included; ``function`` null where a stripped binary names it not)."""
    doc: dict[str, object] = {
        "schema": SIZE_SCHEMA,
        "kind": "sources",
        "path": path,
        "namespace": namespace,
        "bytes": sum(s.size for _, sources in found for s in sources),
        "host_sources": [
            {
                "member": member,
                "function": s.function,
                "arch": s.arch,
                "address": s.address,
                "offset": s.offset,
                "bytes": s.size,
                "kernels": s.kernels,
                "place": s.place,
            }
            for member, sources in found
            for s in sources
        ],
    }
    return dumps(doc, indent=1) + "\n"


def binary_json(accounts: Sequence[BinaryAccount]) -> list[dict[str, object]]:
    """``binaries`` of the report JSON (docs/report-schema.md)."""
    return [
        {
            "path": account.path,
            "binary": account.shown,
            "kind": account.kind,
            "file_size": account.file_size,
            "parts": [
                {
                    "name": row.name,
                    "library": not row.overhead,
                    "function_count": row.function_count,
                    "bytes": row.bytes,
                }
                for row in account.rows
            ],
        }
        for account in accounts
    ]
