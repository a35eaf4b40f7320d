"""A report as tables (``builder.render.table``): its groups, its JIT units, its wheel's files
and the binaries holding its libraries; and the budget's verdicts on reports, a row per limit as
size-limit shows it. Every share, cumulative share and rest row of every
format of ``report`` is computed here, once.

A build's JIT units are measured in its host library (``builder.size.report``), never in the
metallib, so they get a table of their own whose caption says what was measured and where; for a
build with no metallib (every unit JIT) it is the report. Rows are always units, whatever
``--by`` says: the host library has no per-function sizes.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import replace
from typing import TYPE_CHECKING, NamedTuple

from builder.inputs.member_names import shortened
from builder.render.param_tables import parameter_table
from builder.render.table import (
    CUMULATIVE,
    DOWNLOAD,
    DOWNLOAD_SHARE,
    FUNCTIONS,
    PEOPLE,
    SHARE,
    SIZE,
    SIZES,
    Column,
    Name,
    Row,
    Said,
    Table,
    Words,
    cell_text,
)
from builder.render.text import (
    grouping_text,
    human_delta,
    human_size,
    no_metallib,
    origin,
    provenance_line,
)
from builder.render.tree_lines import report_lines, unattributed_name
from builder.size.compare import OVERHEAD, by_strings, jit_breakdown, jit_what
from builder.size.rollup import Rollup, fold

if TYPE_CHECKING:
    from builder.size.attribution import BinaryAccount
    from builder.size.compare import JitBreakdown
    from builder.size.report import Report, WheelFiles

__all__ = [
    "Shown",
    "download_line",
    "report_tables",
    "shown_count",
    "top_rows",
]


class Shown(NamedTuple):
    """The rows of one level to show, and the others summed into ``rest`` (None when every row
    is shown)."""

    rows: Sequence[Rollup]
    rest: Rollup | None
    rest_groups: int


def shown_count(count: int, top: int | None) -> int:
    """How many of ``count`` rows a table limited to ``top`` shows (all when None). A rest row
    stands for two rows or more: folding a single one would hide its name and save no line."""
    return count if top is None or top >= count - 1 else max(top, 0)


def top_rows(groups: Sequence[Rollup], top: int | None) -> Shown:
    """The largest ``top`` groups (all when None), and the others summed into one rollup."""
    top = shown_count(len(groups), top)
    if top >= len(groups):
        return Shown(groups, None, 0)
    return Shown(groups[:top], fold("", groups[top:]), len(groups) - top)


def share_of(part: int, whole: int) -> float:
    """``part`` as a fraction of ``whole``; NaN for an empty whole (``-`` for people, an empty
    CSV cell)."""
    return part / whole if whole else math.nan


def cumulative_shares(parts: Sequence[int], whole: int) -> list[float]:
    """The running share of ``whole`` after each of ``parts``: the cumulative column."""
    out, total = [], 0
    for part in parts:
        total += part
        out.append(share_of(total, whole))
    return out


def _share(part: int, whole: int) -> str:
    """A share in a line of words, as the share columns write it."""
    return cell_text("share", share_of(part, whole), "text")


def _size_columns(first: Column, count: str = "functions") -> list[Column]:
    """A name, a count, the size (human, and exact in the terminal and CSV), share, cumulative."""
    return [first, replace(FUNCTIONS, heading=count), *SIZES, SHARE, CUMULATIVE]


def _sized(part: int, whole: int) -> tuple[int, int, float]:
    """The values of the ``SIZES`` and ``SHARE`` columns: ``part`` bytes of ``whole``."""
    return part, part, share_of(part, whole)


def _group_table(report: Report, top: int | None) -> Table:
    """The largest groups with their share and the cumulative share (groups only), then the
    rest, the overhead and the total; with two ``--by`` keys each group's largest children
    follow it (and their rest)."""
    whole = report.file_size
    download = report.download
    columns = _size_columns(Column("group", report.by, "text"))
    if download is not None:
        columns += [DOWNLOAD, DOWNLOAD_SHARE]

    def row(name: str, g: Rollup, cumulative: float | None, role: str, depth: int = 0) -> Row:
        values = [name, g.function_count, *_sized(g.bytes, whole), cumulative]
        if download is not None:
            values += [g.download_bytes or 0, share_of(g.download_bytes or 0, download.total)]
        return Row(tuple(values), role, depth)  # type: ignore[arg-type]

    pinned = unattributed_name(report.by)
    shown = top_rows([g for g in report.groups if g.name != pinned], top)
    own = [g for g in report.groups if g.name == pinned]  # never folded into the rest
    tops = [*shown.rows, *([shown.rest] if shown.rest else []), *own]
    overhead = Rollup(
        OVERHEAD, 0, report.overhead_bytes, 0, download.overhead_bytes if download else None
    )
    running = iter(cumulative_shares([g.bytes for g in [*tops, overhead]], whole))
    rows = []

    def add(group: Rollup) -> None:  # a group, then its largest children and their rest
        rows.append(row(Name(group.name), group, next(running), "row"))
        children = top_rows(group.children, top)
        rows.extend(row(Name(c.name), c, None, "row", 1) for c in children.rows)
        if children.rest is not None:
            rows.append(
                row(f"rest ({children.rest_groups} groups)", children.rest, None, "rest", 1)
            )

    for group in shown.rows:
        add(group)
    if shown.rest is not None:
        rows.append(row(f"rest ({shown.rest_groups} groups)", shown.rest, next(running), "rest"))
    for group in own:
        add(group)
    last = row(OVERHEAD, overhead, next(running), "overhead")
    rows.append(Row((OVERHEAD, None, *last.values[2:]), "overhead"))  # no function count
    total = ["total", report.function_count, *_sized(whole, whole), None]
    total += [download.total, share_of(download.total, download.total)] if download else []
    rows.append(Row(tuple(total), "total"))
    line = download_line(report)  # what the download column is, under the table
    src = report.source
    inside = f"#{src.identity}" if src.identity is not None and src.path else ""
    return Table(
        tuple(columns),
        tuple(rows),
        title=(
            Name(src.label),
            f": {human_size(whole)}, {report.function_count:,} functions, by {report.by}",
        ),
        heading=("Size of ", Name(src.label)),
        caption=(
            ("measured in ", Name(origin(report)), "; grouping: ", Said(grouping_text(report))),
            (Said(provenance_line(report.provenance)),),
        ),
        notes=() if line is None else ((Said(line),),),
        context=(("file", (src.path or "") + inside), ("by", report.by)),
        nested=report.subgrouping is not None,
    )


def download_line(report: Report) -> str | None:
    """What the download column is and how close it came: one line under a table."""
    download = report.download
    if download is None:
        return None
    level = download.model.get("level", "?")
    line = (
        f"download: {human_size(download.total)} ({download.total:,} bytes, "
        f"{_share(download.total, report.file_size)} of the file), modelled as a wheel "
        f"stores it (zlib level {level}; docs/download-size.md)"
    )
    member = download.member
    if member is not None and download.model_error is not None:
        line += (
            f"; the wheel's {member.name} is {member.download_bytes:,} bytes compressed: "
            f"model {human_delta(download.model_error)} "
            f"({100.0 * download.model_error / max(member.download_bytes, 1):+.4f}%)"
        )
    return line


def _jit_notes(report: Report) -> list[str]:
    if by_strings(report):  # a shipped host library: its run-time sources are the report
        return ["no metallib: the run-time sources the host library embeds"]
    notes = []
    if report.source.path is None:
        notes.append(f"no metallib: {no_metallib(False)}")
    if report.by != "kernel":
        notes.append(
            f"rows are JIT units whatever --by {report.by} says: the host library "
            "has no per-function sizes"
        )
    return notes


def _jit_table(report: Report, jit: JitBreakdown, top: int | None) -> Table:
    """The JIT units (the largest ``top``, the rest folded), the host bytes no unit owns, the
    total. The cumulative share runs over every row."""
    strings = by_strings(report)  # a shipped host library: no manifest bytes
    # its kernels are the ones written in its sources' text (builder.size.metal_text)
    counted = not strings or any(j.kernel_count for j in report.jit_units)
    how = {j.name: j.embedding for j in report.jit_units}
    whole = "whole-file" in how.values()  # an embedding column when some unit is embedded whole
    first = "run-time source" if strings else "JIT unit"
    columns = [Column("group", first, "text")]
    if whole:
        columns.append(Column("embedding", "embedding", "text", PEOPLE))
    sizes = _size_columns(columns[0], "kernels")[1:]
    columns += sizes if counted else sizes[1:]
    if not strings:
        columns.append(Column("embedded_bytes", "embedded", "size", PEOPLE))
    shown = top_rows(jit.units, top)
    what = "run-time sources" if strings else "units"
    named: list[tuple[str, Rollup, str]] = [(Name(r.name), r, "row") for r in shown.rows]
    if shown.rest is not None:
        named.append((f"rest ({shown.rest_groups} {what})", shown.rest, "rest"))
    named += [(o.name, o, "overhead") for o in jit.overhead]
    cumulative = cumulative_shares([r.bytes for _, r, _ in named], jit.total)
    rows = []
    for (name, r, role), running in zip(named, cumulative, strict=True):
        values: list[object] = [name]
        if whole:
            values.append(how.get(r.name) if role == "row" else None)
        if counted:
            values.append(None if r.overhead else r.function_count)
        values += [*_sized(r.bytes, jit.total), running]
        if not strings:
            values.append(None if r.overhead else r.embedded_bytes or 0)
        rows.append(Row(tuple(values), role))  # type: ignore[arg-type]
    kernels = sum(r.function_count for r in jit.units)
    total: list[object] = ["total", *([None] if whole else []), *([kernels] if counted else [])]
    total += [*_sized(jit.total, jit.total), None]
    rows.append(Row(tuple(total + ([] if strings else [None])), "total"))
    written = f" ({kernels:,} kernels written)" if counted else ""
    said = (
        f"{len(jit.units):,} run-time sources{written}"
        if strings
        else f"{len(jit.units):,} units ({kernels:,} kernels) compiled at run time"
    )
    caption: list[Words] = [
        ("measured: ", Said(jit.origin), *(f"; {n}" for n in _jit_notes(report)))
    ]
    if report.source.path is None:  # the metallib table, which names the provenance, is absent
        caption.append((Said(provenance_line(report.provenance)),))
    library = report.host_library
    where = library.path if jit.host_measured and library else report.source.manifest or ""
    return Table(
        tuple(columns),
        tuple(rows),
        title=(
            Name(report.source.label),
            f": {jit_what(jit.host_measured)} {human_size(jit.total)}, {said}",
        ),
        heading=("JIT units of ", Name(report.source.label))
        if report.source.path
        else ("Size of ", Name(report.source.label)),
        caption=tuple(caption),
        context=(("file", where), ("by", "jit")),
    )


def _wheel_table(wheel: WheelFiles, top: int | None) -> Table:
    """Every file of a wheel (the largest ``top`` by download), with the zip's real compressed
    sizes; the zip's own bytes and the total make the download column add up to the file."""
    columns = (
        Column("group", "file", "text"),
        SIZE,
        DOWNLOAD,
        DOWNLOAD_SHARE,
    )
    files = sorted(wheel.files, key=lambda f: (-f.download_bytes, f.name))
    shown = top_rows([Rollup(f.name, 0, f.bytes, 0, f.download_bytes) for f in files], top)
    whole = wheel.bytes
    rows = [
        Row((Name(f.name), f.bytes, f.download_bytes, share_of(f.download_bytes or 0, whole)))
        for f in shown.rows
    ]
    if shown.rest is not None:
        rest = shown.rest.download_bytes or 0
        name = f"rest ({shown.rest_groups:,} files)"
        rows.append(Row((name, shown.rest.bytes, rest, share_of(rest, whole)), "rest"))
    headers = whole - wheel.download_bytes
    zip_headers = ("[zip headers]", None, headers, share_of(headers, whole))
    rows.append(Row(zip_headers, "overhead", media=PEOPLE))  # the CSV's rows are the files
    files_bytes = sum(f.bytes for f in wheel.files)
    rows.append(
        Row(("total (the wheel file)", files_bytes, whole, share_of(whole, whole)), "total")
    )
    return Table(
        columns,
        tuple(rows),
        title=(Name(wheel.path), f": {human_size(whole)} wheel, {len(wheel.files):,} files"),
        heading=("Files in ", Name(wheel.path)),
        caption=(("bytes and download (compressed) bytes from the wheel's zip directory",),),
        context=(("file", wheel.path), ("by", "wheel file")),
    )


_TEXT = frozenset({"text"})
_NOT_TEXT = frozenset({"markdown", "csv"})


def _binary_table(account: BinaryAccount) -> Table:
    """A binary's parts (its libraries, each section's other bytes, the bytes in no section),
    adding up to the file."""
    whole = account.file_size
    part = Column("group", "part of the binary", "text", _NOT_TEXT)
    short = Column("group", "part of the binary", "text", _TEXT)
    columns = _size_columns(part)[:-1]
    columns.insert(1, short)  # after the whole name, which a CSV record takes
    # the terminal shows each library by what tells it from the others (its identity, a
    # version), the title names them whole once; markdown and CSV keep the whole names
    named = shortened([r.name for r in account.rows if not r.overhead])
    shown = iter(named.short)
    rows = [
        Row(
            (
                Name(r.name),
                Name(r.name if r.overhead else next(shown)),
                None if r.overhead else r.function_count,
                *_sized(r.bytes, whole),
            ),
            "overhead" if r.overhead else "row",
        )
        for r in account.rows
    ]
    rows.append(Row(("total", "total", None, *_sized(whole, whole)), "total"))
    libraries = sum(1 for r in account.rows if not r.overhead)
    whole_names = () if named.whole is None else ("; metallibs ", Name(named.whole))
    return Table(
        tuple(columns),
        tuple(rows),
        title=(
            Name(account.shown),
            (
                f": {account.kind}, {human_size(whole)} ({whole:,} bytes); {libraries} "
                f"metallib(s) {_share(account.library_bytes, whole)}, the rest by section"
            ),
            *whole_names,
        ),
        heading=("Binary ", Name(account.shown)),
        context=(("file", account.path), ("by", "binary part")),
    )


def report_tables(
    reports: Sequence[Report], top: int | None, binaries: Sequence[BinaryAccount] = ()
) -> list[Table]:
    """Every table of ``report``: per library its groups (none for a build with no metallib)
    and its JIT units; then each wheel's files (``--download``) and each binary's parts."""
    tables = []
    wheels: dict[str, WheelFiles] = {}
    for report in reports:
        jit = jit_breakdown(report)
        own = []
        if report.source.path is not None or jit is None:
            own.append(_group_table(report, top))
            own += filter(None, [parameter_table(report, top)])  # --by param
        if jit is not None:
            own.append(_jit_table(report, jit, top))
        own[-1] = replace(own[-1], notes=(*own[-1].notes, *report_lines(report)))
        tables += own
        wheel = report.download.wheel if report.download else None
        if wheel is not None:
            wheels.setdefault(wheel.path, wheel)
    tables += [_wheel_table(w, top) for w in wheels.values()]
    return tables + [_binary_table(a) for a in binaries]
