"""Changes as tables (``builder.render.table``): a comparison's metallib groups joined base to
head, a build's JIT units joined the same way (``builder.size.rollup.join``), each under its
summary (``builder.size.change_summary``: new, grown, shrunk and removed groups, renames, how
much of the change the rows shown explain). Every delta, percent and rest row of ``compare``'s
formats is made here, once; the PR comment (``builder.render.pr_comment``) writes these rows
within its bytes (its ``limit``); a history's tables: ``builder.render.history_tables``.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import TYPE_CHECKING

from builder.render.report_tables import shown_count
from builder.render.table import (
    CHANGE,
    Column,
    Name,
    Row,
    Said,
    Table,
    Words,
)
from builder.render.text import (
    clip,
    gate_message,
    human_delta,
    human_size,
    no_metallib,
    origin,
    provenance_line,
    signed_percent,
    visible,
)
from builder.render.tree_lines import missing_line, unattributed_name, warning_lines
from builder.size.change_summary import Explained, explain, summarize
from builder.size.compare import by_strings, jit_what
from builder.size.download import MODEL
from builder.size.rollup import Rollup, fold

if TYPE_CHECKING:
    from builder.size.change_summary import ChangeSummary
    from builder.size.compare import Comparison
    from builder.size.rollup import FunctionRow
    from builder.size.verdicts import Evaluated, Verdict

__all__ = [
    "DOWNLOAD_METHOD",
    "compare_download_line",
    "compare_tables",
    "comparison_summary",
    "delta_columns",
    "delta_row",
    "explained_groups",
    "jit_delta_table",
    "metallib_delta_table",
    "pair_sides",
    "pairs_summary",
    "summary_lines",
]


def delta_columns(key: str, counts: str | None, download: bool) -> tuple[Column, ...]:
    """A joined table's columns: the name, the counts of base and head (``counts`` names what
    they count; None: no counts), bytes of base and head, the delta, the delta in percent, and
    with download figures the same three for the modelled download."""
    columns = [Column("group", key, "text")]
    if counts is not None:
        columns += [
            Column("base_function_count", f"{counts} base", "count"),
            Column("head_function_count", f"{counts} head", "count"),
        ]
    columns += CHANGE
    if download:
        columns += [
            Column("base_download_bytes", "dl base", "size"),
            Column("head_download_bytes", "dl head", "size"),
            Column("delta_download_bytes", "download delta", "delta"),
        ]
    return tuple(columns)


def delta_row(
    g: Rollup, name: str, role: str, *, counts: bool, download: bool, shown_counts: bool = True
) -> Row:
    """A joined row: base and head counts (empty for an overhead row when not
    ``shown_counts``), bytes, the delta and its percent (None: the group is new)."""
    assert g.base_bytes is not None
    values: list[object] = [name]
    if counts:
        values += [g.base_function_count, g.function_count] if shown_counts else [None, None]
    values += [g.base_bytes, g.bytes, g.delta, g.percent]
    if download:
        values += [g.base_download_bytes, g.download_bytes, g.download_delta]
    return Row(tuple(values), role)  # type: ignore[arg-type]


def _rows(
    groups: Sequence[Rollup],
    top: int | None,
    unit: str,
    *,
    counts: bool,
    download: bool = False,
    overhead_counts: bool = True,
    exact: bool = False,
    rest: bool = True,
    pinned: str | None = None,
) -> list[Row]:
    """The ``top`` largest changes, the others folded into one rest row, the ``pinned`` group
    (the bytes no entry file produces: never folded, after the rest), then the overhead rows.
    ``exact``: exactly ``top`` rows, a rest row even for one (the PR comment folds what it
    has no room for); ``rest`` False: no rest row (the comment's rows that could fit,
    before it knows how many do)."""
    changed = [g for g in groups if not g.overhead and g.name != pinned]
    shown = changed[: top if exact and top is not None else shown_count(len(changed), top)]
    rows = [delta_row(g, Name(g.name), "row", counts=counts, download=download) for g in shown]
    others = changed[len(shown) :]
    if others and rest:
        folded = fold(f"rest ({len(others):,} {unit})", others)
        rows.append(delta_row(folded, folded.name, "rest", counts=counts, download=download))
    rows += [
        delta_row(g, Name(g.name), "row", counts=counts, download=download)
        for g in groups
        if g.name == pinned and not g.overhead
    ]
    rows += [  # the tool's own rows: the container's overhead, a host library's
        delta_row(
            g, g.name, "overhead", counts=counts, download=download, shown_counts=overhead_counts
        )
        for g in groups
        if g.overhead
    ]
    return rows


def compare_download_line(comparison: Comparison) -> str | None:
    """The modelled download of both sides and its change, in one line."""
    base, head = comparison.base.download, comparison.head.download
    delta = comparison.download_delta
    if base is None or head is None or delta is None:
        return None
    return (
        f"download (modelled, zlib 6 as a wheel stores it): {human_size(base.total)} → "
        f"{human_size(head.total)}, {human_delta(delta)} "
        f"({signed_percent(comparison.download_percent)})"
    )


def explained_groups(comparison: Comparison, top: int | None) -> Explained:
    """The rows of a comparison's first table with ``top`` of them shown: its groups, rolled up
    when the rest row would hold more than half of the change (``change_summary.explain``)."""
    if comparison.jit_only and comparison.jit is not None:
        return explain(comparison.jit.groups, top)
    return explain(comparison.groups, top, unattributed_name(comparison.head.by))


def metallib_delta_table(
    comparison: Comparison,
    top: int | None,
    *,
    exact: bool = False,
    rest: bool = True,
    explained: Explained | None = None,
    summary: bool = True,
) -> Table:
    """A comparison's metallib groups (rolled up as ``explained`` says, by default for
    ``top``), its overhead row and the total, under the comparison's summary (``summary``
    False: none, for a writer that says it elsewhere)."""
    base, head = comparison.base, comparison.head
    names = pair_sides(comparison)
    download = comparison.download_delta is not None
    cut = {"exact": exact, "rest": rest}
    measures = {"counts": True, "download": download}
    pinned = unattributed_name(head.by)
    ex = explained or explain(comparison.groups, top, pinned)
    unit = "groups" if ex.tokens is None else "label prefixes"
    rows = _rows(ex.groups, top, unit, **measures, **cut, pinned=pinned)
    # the rows (the overhead one included) add up to both files, and to both downloads
    rows.append(delta_row(fold("total", comparison.groups), "total", "total", **measures))
    sides = (("base", base, names[0]), ("head", head, names[1]))
    caption: list[Words] = [
        (f"{s}: ", Name(origin(r) if comparison.holds(r) else n)) for s, r, n in sides
    ]
    caption += [
        (f"{s} ", Said(provenance_line(r.provenance))) for s, r, _ in sides if comparison.holds(r)
    ]
    line = compare_download_line(comparison)
    return Table(
        delta_columns(head.by, "fns", download),
        tuple(rows),
        title=_pair_title(
            comparison, f": {human_delta(comparison.delta)} ({signed_percent(comparison.percent)})"
        ),
        preface=tuple(comparison_summary(comparison, ex, top)) if summary else (),
        caption=tuple(caption),
        notes=() if line is None else ((line,),),
        csv_total="[total]",
    )


def jit_delta_table(
    comparison: Comparison,
    top: int | None,
    *,
    exact: bool = False,
    rest: bool = True,
    explained: Explained | None = None,
    summary: bool = True,
) -> Table:
    """The JIT comparison: per unit (or run-time source), the host-library bytes on both sides,
    under its summary (units rolled up as ``explained`` says, by default for ``top``)."""
    jit = comparison.jit
    assert jit is not None
    ex = explained or explain(jit.groups, top)
    base, head = comparison.base, comparison.head
    what = jit_what(jit.host_measured)
    sources = by_strings(base) and by_strings(head)  # two shipped host libraries
    caption: list[Words] = [
        ("base measured: ", Said(jit.base_origin or "no JIT unit")),
        ("head measured: ", Said(jit.head_origin or "no JIT unit")),
    ]
    if comparison.jit_only:
        caption += [
            (f"no metallib on either side: {no_metallib(sources)}",),
            ("base ", Said(provenance_line(base.provenance))),
            ("head ", Said(provenance_line(head.provenance))),
        ]
    counts = None if sources else "kernels"  # a shipped host library counts no kernels
    rows = _rows(
        ex.groups,
        top,
        "units" if ex.tokens is None else "label prefixes",
        counts=counts is not None,
        overhead_counts=False,
        exact=exact,
        rest=rest,
    )
    units = [g for g in jit.groups if not g.overhead]
    total: list[object] = ["total"]
    if counts:
        total += [
            sum(g.base_function_count or 0 for g in units),
            sum(g.function_count for g in units),
        ]
    total += [jit.base_total, jit.head_total, jit.delta, jit.percent]
    rows.append(Row(tuple(total), "total"))
    return Table(
        delta_columns("run-time source" if sources else "JIT unit", counts, False),
        tuple(rows),
        title=_pair_title(
            comparison,
            f": {what} {human_size(jit.base_total)} → {human_size(jit.head_total)}, "
            f"{human_delta(jit.delta)} ({signed_percent(jit.percent)})",
        ),
        preface=tuple(summary_lines(summarize(jit.groups), ex, top, "units")) if summary else (),
        caption=tuple(caption),
        csv_total="[jit total]",
        csv_prefix="jit:",
    )


def _pair_title(comparison: Comparison, change: str) -> Words:
    """``base → head`` and what changed: a joined table's title."""
    base, head = pair_sides(comparison)
    return (Name(base), " → ", Name(head), change)


def _name_list(rows: Sequence[FunctionRow], limit: int) -> str:
    return ", ".join(f"{visible(r.name)} ({human_size(r.bytes)})" for r in rows[:limit])


def _pair_lines(comparison: Comparison, gates: Sequence[Verdict]) -> list[Words]:
    """After a pair's tables: functions added and removed, notes, gate verdicts."""
    lines: list[Words] = []
    if not comparison.jit_only:
        for label, rows, sign in (
            ("added", comparison.added, 1),
            ("removed", comparison.removed, -1),
        ):
            total = human_delta(sign * sum(r.bytes for r in rows))
            largest = f"; largest: {_name_list(rows, 5)}" if rows else ""
            lines.append((f"functions {label}: {len(rows):,} ({total})", Said(largest)))
    lines += [("note: ", Said(note)) for note in comparison.notes]
    for side, report in (("base", comparison.base), ("head", comparison.head)):
        if comparison.holds(report):
            lines += warning_lines(report, f"{side}: ")
    missing = missing_line(comparison)
    lines += [] if missing is None else [(Said(missing),)]
    lines += [("PASS " if g.passed else "FAIL ", Said(gate_message(g))) for g in gates]
    return lines


def compare_tables(pairs: Evaluated, top: int | None, *, context: bool = False) -> list[Table]:
    """Every table of ``compare``: per library pair the metallib's groups (skipped when neither
    side has a metallib) and the JIT units, the pair's lines after its last table. With
    ``context`` (the CSV of several pairs, or of a library on one side only) each table names
    its pair's library and ``change``."""
    from dataclasses import replace

    tables = []
    for comparison, gates in pairs:
        own = []
        if not comparison.jit_only:
            own.append(metallib_delta_table(comparison, top))
        if comparison.jit is not None:
            own.append(jit_delta_table(comparison, top))
        own[-1] = replace(own[-1], notes=(*own[-1].notes, *_pair_lines(comparison, gates)))
        if context:
            source = comparison.library.source
            named = (("library", source.member or source.label), ("change", comparison.change))
            own = [replace(t, context=named) for t in own]
        tables += own
    return tables


def pair_sides(comparison: Comparison) -> tuple[str, str]:
    """How a comparison's base and head are named: each side's library, or for a library on
    one side only, what the other side lacks (``not in base`` for an added one)."""
    base, head = comparison.base.source.label, comparison.head.source.label
    if comparison.change == "added":
        return "(not in base)", head
    if comparison.change == "removed":
        return base, "(not in head)"
    return base, head


def pairs_summary(
    comparisons: Sequence[Comparison], name: Callable[[str], str] | None = None
) -> str | None:
    """``libraries: 11 paired, 2 added (a, b), 1 removed (c)`` when the two targets' libraries
    did not all pair (None when they did): which library is on one side only, each name shown
    by ``name`` (default ``visible``)."""
    show = name or visible
    added = [c.library.source.label for c in comparisons if c.change == "added"]
    removed = [c.library.source.label for c in comparisons if c.change == "removed"]
    if not added and not removed:
        return None
    paired = len(comparisons) - len(added) - len(removed)
    parts = [f"libraries: {paired:,} paired"]
    for word, names in (("added", added), ("removed", removed)):
        if names:
            parts.append(f"{len(names):,} {word} ({', '.join(show(n) for n in names)})")
    return ", ".join(parts)


DOWNLOAD_METHOD = f"modelled as report --download does: {MODEL}"
"""What ``download_bytes`` is, stated wherever it is shown (``builder.size.budget``)."""


def comparison_summary(
    comparison: Comparison, explained: Explained, top: int | None
) -> list[Words]:
    """The summary above a comparison's first table: its metallib's groups, or a JIT-only
    pair's units."""
    if comparison.jit_only and comparison.jit is not None:
        return summary_lines(summarize(comparison.jit.groups), explained, top, "units")
    summary = summarize(comparison.groups, comparison.added, comparison.removed)
    return summary_lines(summary, explained, top, "groups")


def summary_lines(
    summary: ChangeSummary, explained: Explained, top: int | None, unit: str
) -> list[Words]:
    """The lines above a comparison's table: its ``unit`` (groups, JIT units) new, grown, shrunk
    and removed with the bytes each moved, the renamed functions, and how much of the change
    the rows shown explain (with the level they were rolled up to)."""
    moved = [
        f"{m.groups:,} {word} ({human_delta(m.delta_bytes)})"
        for word, m in (
            ("new", summary.new),
            ("grown", summary.grown),
            ("shrunk", summary.shrunk),
            ("removed", summary.removed),
        )
    ]
    moved.append(f"{summary.unchanged:,} unchanged")
    if summary.overhead_delta_bytes:
        moved.append(f"overhead {human_delta(summary.overhead_delta_bytes)}")
    lines: list[Words] = [(f"{unit}: {', '.join(moved)}",)]
    renamed = summary.renames
    if renamed:
        delta = human_delta(summary.renamed_delta_bytes)
        line: Words = (f"renamed functions: {len(renamed):,} ({delta}), largest: ",)
        for at, r in enumerate(renamed[:3]):
            line += (", " if at else "", Name(clip(r.base, 80)), " → ", Name(clip(r.head, 80)))
        lines.append(line)
    if explained.share < 1.0 or explained.tokens is not None:
        shown = "rows shown" if top is None else f"{top} rows shown"
        said = f"the {shown} explain {explained.share:.1%} of the change (sum of |delta|)"
        if explained.tokens is not None:
            said += (
                f"; {unit} rolled up to their labels' first {explained.tokens} "
                f"token{'s' if explained.tokens > 1 else ''} (PREFIX*: the {unit} whose "
                f"labels start with it), as the {unit} themselves explained "
                f"{explained.group_share:.1%}"
            )
        lines.append((said,))
    return lines
