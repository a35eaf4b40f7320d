"""The data an HTML report embeds: measured figures as compact columns, with their origins.

The page builds its tree (library -> group -> subgroup -> function; a subgroup is the dtype
named in the function names, or with two ``--by`` keys the second key's group) from these columns
in the browser, so every function is present once (for the table and the search) and the treemap
can aggregate small leaves at whatever zoom level is shown. Columns instead of objects keep the
file small: a 17,000-function library is about 1.2 MB of JSON. Only measured numbers go in: a
function's bytes are from the metallib, a JIT unit's from the host library's symbols (or the
build manifest when they cannot be read), and ``-1`` marks "absent on this side" in a comparison
(never a guessed size).
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from typing import TYPE_CHECKING

from builder.render.compare_tables import pair_sides
from builder.render.text import gate_message, provenance_line
from builder.size.compare import jit_breakdown
from builder.size.grouping import group_names

if TYPE_CHECKING:
    from builder.size.compare import Comparison
    from builder.size.report import Report
    from builder.size.verdicts import Verdict

__all__ = ["comparison_data", "report_data"]

DATA_SCHEMA = 1


class _Index:
    """Strings to small integers, in first-seen order (deterministic)."""

    def __init__(self) -> None:
        self.values: list[str] = []
        self._ids: dict[str, int] = {}

    def __call__(self, value: str) -> int:
        found = self._ids.get(value)
        if found is None:
            found = self._ids[value] = len(self.values)
            self.values.append(value)
        return found


def _origin(report: Report) -> dict[str, object]:
    src = report.source
    host = (report.provenance.get("build") or {}).get("host_library")
    return {
        "target": src.target,
        "kind": src.kind,
        "metallib": src.path,
        "wheel": src.wheel,
        "manifest": src.manifest,
        "member": src.member,
        "host_library": host,
    }


def _side(report: Report) -> dict[str, object]:
    """Everything about one measured library except its functions.

    JIT units (``builder.size.jit_sizes``) are measured in the host library: their symbol bytes
    plus the host bytes no unit owns, or the manifest's embedded bytes when the symbols could
    not be read; ``jit_total``/``jit_origin`` say which (present only for builds with JIT)."""
    jit = jit_breakdown(report)
    side = {
        "label": report.source.label,
        "origin": _origin(report),
        "file_size": report.file_size,
        "function_count": report.function_count,
        "format_version": report.format_version,
        "by": report.by,
        "grouping": report.grouping,
        "overhead": [[o.name, o.bytes] for o in report.overhead],
        "jit": [[r.name, r.bytes] for r in jit.units] + [[o.name, o.bytes] for o in jit.overhead]
        if jit
        else [],
        "provenance": report.provenance,
        "provenance_line": provenance_line(report.provenance),
        "download": _download(report),
        "warnings": report.warnings,  # what stderr said of it, shown above the treemap
    }
    if jit is not None:
        side.update(jit_total=jit.total, jit_measured=jit.host_measured, jit_origin=jit.origin)
    if report.subgrouping is not None:  # two --by keys: the page nests the second in the first
        side.update(subgroup_by=report.keys[1], subgrouping=report.subgrouping)
    return side


def _download(report: Report) -> dict[str, object] | None:
    """The modelled download (``--download``): total, overhead rows, the model's line."""
    from builder.render.report_tables import download_line

    download = report.download
    if download is None:
        return None
    return {
        "total": download.total,
        "line": download_line(report),
        "overhead": [[o.name, share] for o, share in zip(report.overhead, download.overhead)],
    }


def _subgroups(report: Report, names: Sequence[str]) -> list[str] | None:
    """The level under the groups: with two ``--by`` keys each function's subgroup (the second
    key), else the dtype named in each function's name (None when the groups already are
    dtypes or functions)."""
    if report.subgrouping is not None:
        return [f.subgroup for f in report.functions]
    if report.by in ("dtype", "function"):
        return None
    return group_names(names, "dtype").labels


def _columns(
    names: list[str],
    groups: Iterable[str],
    subgroups: Iterable[str] | None,
    index: tuple[_Index, _Index],
) -> dict[str, object]:
    group_ix, subgroup_ix = index
    return {
        "name": names,
        "group": list(map(group_ix, groups)),
        "subgroup": list(map(subgroup_ix, subgroups)) if subgroups is not None else None,
    }


def report_data(reports: Sequence[Report]) -> dict[str, object]:
    """The embedded document of ``report --format html``."""
    libraries = []
    for report in reports:
        index = (_Index(), _Index())
        names = [f.name for f in report.functions]
        lib = _side(report)
        fn = _columns(names, (f.group for f in report.functions), _subgroups(report, names), index)
        fn["bytes"] = [f.bytes for f in report.functions]
        if report.download is not None:  # the treemap can be sized by download bytes
            fn["download"] = report.download.functions
        lib["fn"], lib["groups"], lib["subgroups"] = fn, index[0].values, index[1].values
        libraries.append(lib)
    return {"schema": DATA_SCHEMA, "mode": "report", "libraries": libraries}


def _download_columns(
    comparison: Comparison, rows: Sequence[tuple[str, str, int, int]]
) -> tuple[list[int], list[int]]:
    """Head's and base's download bytes of the comparison's rows (``-1``: absent on that side)."""
    base, head = comparison.base, comparison.head
    assert base.download is not None and head.download is not None
    head_dl = dict(zip((f.name for f in head.functions), head.download.functions))
    base_dl = dict(zip((f.name for f in base.functions), base.download.functions))
    return (
        [head_dl.get(r[0], -1) if r[2] >= 0 else -1 for r in rows],
        [base_dl.get(r[0], -1) if r[3] >= 0 else -1 for r in rows],
    )


def comparison_data(pairs: Sequence[tuple[Comparison, Sequence[Verdict]]]) -> dict[str, object]:
    """The embedded document of ``compare --format html``: head's functions, then removed ones.

    ``bytes`` is the head size and ``base`` the base size of the same-named function; ``-1``
    on either side means the function is absent there (added or removed).
    """
    libraries = []
    for comparison, gates in pairs:
        base, head = comparison.base, comparison.head
        base_bytes = {f.name: f.bytes for f in base.functions}
        rows = [(f.name, f.group, f.bytes, base_bytes.get(f.name, -1)) for f in head.functions]
        rows += [(f.name, f.group, -1, f.bytes) for f in comparison.removed]
        names = [r[0] for r in rows]
        index = (_Index(), _Index())
        lib, base_side = _side(head), _side(base)
        lib["change"] = comparison.change
        if comparison.change != "paired":  # a library on one side only: the other is nothing
            base_side["label"], lib["label"] = pair_sides(comparison)
            named = comparison.library.source.label
            lib["title"] = f"{named} ({comparison.change} library)"
            absent = base_side if comparison.change == "added" else lib
            absent["origin"] = {**_origin(comparison.library), "metallib": None}
        lib["base"] = base_side
        fn = _columns(names, (r[1] for r in rows), _subgroups(head, names), index)
        fn["bytes"] = [r[2] for r in rows]
        fn["base"] = [r[3] for r in rows]
        if base.download is not None and head.download is not None:
            fn["download"], fn["base_download"] = _download_columns(comparison, rows)
        lib["fn"], lib["groups"], lib["subgroups"] = fn, index[0].values, index[1].values
        lib["delta"] = comparison.delta
        lib["gates"] = [
            {"name": f"--{g.name}", "passed": g.passed, "message": gate_message(g)} for g in gates
        ]
        lib["notes"] = comparison.notes
        lib["counts"] = {
            "added": len(comparison.added),
            "removed": len(comparison.removed),
            "changed": len(comparison.changed),
        }
        libraries.append(lib)
    return {"schema": DATA_SCHEMA, "mode": "compare", "libraries": libraries}
