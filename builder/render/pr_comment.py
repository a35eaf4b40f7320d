"""The sticky pull-request comment of ``compare``: the markdown view of its tables
(``builder.render.compare_tables``) cut to a hard length bound (``budget``'s comment,
``builder.render.budget_tables``, is cut by the same ``Room``).

CI bots post one comment per pull request and edit it on every push. The first line is a hidden
HTML marker (``MARKER``) a CI step searches for to find its own comment; the totals and gate
verdicts come first; then each pair's summary (new, grown, shrunk and removed groups, renamed
functions, the share of the change the rows shown explain); then the top N groups by |delta|,
rolled up to label prefixes when the rest would hold more than half of the change; then
collapsed ``<details>`` sections (added, removed and resized functions, the remaining groups,
what produced each side). GitHub rejects comments over 65,536 characters, so the whole text is
kept under ``limit`` UTF-8 bytes (60 KB by default) whatever the input: every row is
length-capped and each section takes rows only while they fit, then says how many it left out.
Rows, totals and rest rows are the model's; only the cutting is the comment's own. Pure: data
in, string out.
"""

from __future__ import annotations

from collections.abc import Iterable, Iterator, Sequence
from functools import partial
from typing import TYPE_CHECKING

from builder.render.compare_tables import (
    compare_download_line,
    comparison_summary,
    explained_groups,
    jit_delta_table,
    metallib_delta_table,
    pair_sides,
    pairs_summary,
)
from builder.render.first_line import headline
from builder.render.table import (
    CHANGE,
    SIZE,
    Column,
    Name,
    Row,
    Table,
    markdown_header,
    markdown_line,
    markdown_row,
)
from builder.render.text import (
    clip,
    gate_message,
    human_delta,
    human_size,
    md_code,
    md_text,
    no_metallib,
    provenance_line,
)
from builder.render.tree_lines import missing_line, unattributed_name
from builder.size.compare import by_strings, jit_what

if TYPE_CHECKING:
    from builder.size.change_summary import Explained
    from builder.size.compare import Comparison, JitComparison
    from builder.size.verdicts import Verdict

__all__ = [
    "DEFAULT_LIMIT",
    "LINE_CAP",
    "MARKER",
    "NAME_CAP",
    "Room",
    "comment_markdown",
]

MARKER = "<!-- metallib-builder:size-comment -->"
DEFAULT_LIMIT = 60_000
"""Bytes; GitHub's limit is 65,536 characters, and a UTF-8 byte count is never smaller."""
NAME_CAP = 160
LINE_CAP = 600
_MORE = "| … {n:,} more not shown (see `compare --format json`) |"


def _size(text: str) -> int:
    return len(text.encode("utf-8")) + 1  # + newline


class Room:
    """A comment's lines and the bytes left for more: ``add`` commits, ``fill`` takes rows while
    they fit."""

    def __init__(self, limit: int) -> None:
        self.left = limit
        self.lines: list[str] = []

    def add(self, *lines: str) -> None:
        for line in lines:
            self.left -= _size(line)
            self.lines.append(line)

    def fill(self, rows: Iterable[str], reserve: int) -> int:
        """Add rows while they fit, keeping ``reserve`` bytes free; returns how many were added.
        ``rows`` may be lazy: a comment shows the few hundred rows that fit of up to tens of
        thousands (every function of two MLX libraries), so only those are written."""
        count = 0
        for row in rows:
            if _size(row) + reserve > self.left:
                break
            self.add(row)
            count += 1
        return count


def _change_line(
    comparison: Comparison,
    delta: int,
    percent: float | None,
    sizes: tuple[int, int],
    counts: tuple[int, int],
    what: str = "",
    counted: str = "functions",
) -> str:
    """``**+1.2 MB (+0.80%)**: 150 MB → 151 MB (base → head), 100 → 101 functions.``: the
    first line of a comparison, of the metallib or (``what``, ``counted``) of its JIT side."""
    base, head = pair_sides(comparison)
    pct = "" if percent is None else f" ({percent:+.2f}%)"
    shown = f" {what}" if what else ""
    return clip(
        f"**{human_delta(delta)}{pct}**: {human_size(sizes[0])} → {human_size(sizes[1])}{shown} "
        f"({md_code(base)} → {md_code(head)}), {counts[0]:,} → {counts[1]:,} {counted}.",
        LINE_CAP * 2,
    )


_KEYS = (
    "group",
    "base_bytes",
    "head_bytes",
    "delta_bytes",
    "delta_percent",
    "delta_download_bytes",
)
"""The columns of the comparison's tables (``builder.render.compare_tables``) a comment shows."""


_SHORTEST = 30
"""Bytes of the shortest row in those columns: ``| `` | 0 B | 0 B | 0 B | new |`` and its
newline are 31."""


def _lines(table: Table, rows: Iterable[Row]) -> Iterator[str]:
    """``rows`` of ``table`` in the comment's columns, written one at a time as read."""
    return (markdown_row(table.columns, row, _KEYS, NAME_CAP) for row in rows)


_Section = tuple[str, Sequence[str], int, Iterable[str]]
"""A collapsed section: its summary, header lines, how many rows and the rows (lazy)."""


def _groups(
    comparison: Comparison, top: int | None, explained: Explained, out: Room, cap: int
) -> _Section | None:
    """The comparison's first table (its metallib's groups, or a JIT-only pair's units), the
    top N rows in at most ``cap`` bytes; returns the section listing the groups it folded.

    Rows past ``top``, or past what fits, are folded into one "rest" row by the model (so the
    table always adds up to the total) and listed again in a collapsed section. The model makes
    only the rows that could fit, here or in that section, of up to tens of thousands."""
    delta_table = jit_delta_table if comparison.jit_only else metallib_delta_table
    # the bytes no entry file produces: a row of their own after the rest, never folded
    pinned = None if comparison.jit_only else unattributed_name(comparison.head.by)
    count = sum(not g.overhead and g.name != pinned for g in explained.groups)
    # the rows as ``explained`` rolls them; the summary is above the table, said once
    table_of = partial(delta_table, comparison, explained=explained, summary=False)
    table = table_of(out.left // _SHORTEST + 1, exact=True, rest=False)

    def ranked(row: Row) -> bool:  # a row the comment takes while it fits, largest change first
        return row.role == "row" and row.values[0] != pinned

    rows = [row for row in table.rows if ranked(row)]
    overhead = [row for row in table.rows if row.role == "overhead" or row.values[0] == pinned]
    wanted = count if top is None else min(top, count)
    header = markdown_header(table.columns, _KEYS)
    out.add(*header)
    reserve = (1 + len(overhead)) * 100 + _size(next(_lines(table, table.rows[-1:])))
    shown = out.fill(_lines(table, rows[:wanted]), max(reserve, out.left - cap + reserve))
    if shown < len(rows):  # the rest row folds what is left
        table = table_of(shown, exact=True)
    out.add(*_lines(table, (row for row in table.rows if not ranked(row))), "")
    if shown == count:
        return None
    unit = "units" if comparison.jit_only else "groups"
    unit = unit if explained.tokens is None else "label prefixes"
    what = f"Other {table.columns[0].heading} {unit}: {count - shown:,}"
    return (what, header, count - shown, _lines(table, rows[shown:]))


def _details(out: Room, section: _Section, cap: int) -> None:
    """A collapsed section with as many rows as fit in ``cap`` bytes, then how many were left out.

    When not even its frame fits, the summary alone is kept as a bold line (the count and total
    are the part a reader needs most)."""
    summary, header, count, rows = section
    summary = clip(summary, LINE_CAP)
    opening = ["<details>", f"<summary>{summary}</summary>", "", *header]
    closing = ["", "</details>", ""]
    more = _size(_MORE.format(n=count))
    frame = sum(map(_size, [*opening, *closing])) + more
    if not count or frame > cap:
        out.fill([f"**{summary}**", ""], 0)
        return
    out.add(*opening)
    keep = out.left - cap + frame  # bytes this section must leave to the ones after it
    shown = out.fill(rows, max(keep, sum(map(_size, closing)) + more))
    if shown < count:
        out.add(_MORE.format(n=count - shown))
    out.add(*closing)


def _section(
    comparison: Comparison, gates: Sequence[Verdict], top: int | None, limit: int
) -> list[str]:
    """One library pair, in at most ``limit`` bytes.

    Room: headline, verdicts and notes first (each line capped); the group table gets at
    most half of what is left; the collapsed sections share the rest equally, a section that
    needs less leaving its share to the ones after it. A pair with no metallib on either side
    (every unit JIT) shows its JIT units, measured in the host libraries, instead."""
    base, head = comparison.base, comparison.head
    jit = comparison.jit
    if comparison.jit_only and jit is not None:
        shipped = by_strings(base) and by_strings(head)  # two shipped host libraries
        footer = clip(
            f"<sub>No metallib on either side: {no_metallib(shipped)}. Measured: "
            f"base {md_text(jit.base_origin or 'no JIT unit')}; "
            f"head {md_text(jit.head_origin or 'no JIT unit')}.</sub>",
            LINE_CAP * 2,
        )
        sizes = (jit.base_total, jit.head_total)
        units = (len(base.jit_units), len(head.jit_units))
        # rows are the run-time sources the binaries return, not build units
        what, counted = jit_what(jit.host_measured), "run-time sources" if shipped else "JIT units"
        headline = _change_line(comparison, jit.delta, jit.percent, sizes, units, what, counted)
    else:
        # what the user named (a spec, a file, a build folder), not where a runner cached it
        sides = [
            md_code(r.source.label) if comparison.holds(r) else name
            for r, name in zip((base, head), pair_sides(comparison), strict=True)
        ]
        footer = clip(
            f"<sub>Grouped by {head.by} ({md_text(head.grouping)}). Measured in base "
            f"{sides[0]} and head {sides[1]}.</sub>",
            LINE_CAP * 2,
        )
        sizes = (base.file_size, head.file_size)
        counts = (base.function_count, head.function_count)
        headline = _change_line(comparison, comparison.delta, comparison.percent, sizes, counts)
    out = Room(limit - _size(footer))
    out.add(headline, "")
    download = None if comparison.jit_only else compare_download_line(comparison)
    if download is not None:
        out.add(clip(f"**{download[0].upper()}{download[1:]}**", LINE_CAP), "")
    explained = explained_groups(comparison, top)
    # what changed in numbers, a line each (a list item), before the verdicts and the table
    summary = comparison_summary(comparison, explained, top)
    out.fill([clip(f"- {markdown_line(line)}", LINE_CAP * 2) for line in summary], 0)
    out.add("")
    for gate in gates:
        verdict = "✅ pass" if gate.passed else "❌ **FAIL**"
        out.fill([clip(f"- {verdict}: {md_text(gate_message(gate))}", LINE_CAP)], 0)
    for note in comparison.notes:
        out.fill([clip(f"- note: {md_text(note)}", LINE_CAP)], 0)
    said = _tree_lines(comparison)
    out.fill(said, 0)
    if gates or comparison.notes or said:
        out.add("")
    folded = _groups(comparison, top, explained, out, cap=out.left // 2)
    sections: list[_Section] = [] if comparison.jit_only else _function_sections(comparison)
    if jit is not None and not comparison.jit_only:
        sections.append(_jit_section(comparison, jit))
    if folded is not None:
        sections.append(folded)
    produced = [
        clip(f"- {side}: {md_text(provenance_line(r.provenance))}", LINE_CAP)
        for side, r in (("base", base), ("head", head))
        if comparison.holds(r)
    ]
    sections.append(("How these were measured and built", [], len(produced), produced))
    for index, section in enumerate(sections):
        _details(out, section, out.left // (len(sections) - index))
    out.add(footer)
    return out.lines


def _tree_lines(comparison: Comparison) -> list[str]:
    """Each side's warnings (what stderr said of it: a tree that does not match the library
    among them) and, with a kernel tree, the kernels each side lacks: a list item each."""
    lines = [
        clip(f"- ⚠️ warning: {side}: {md_text(warning)}", LINE_CAP)
        for side, report in (("base", comparison.base), ("head", comparison.head))
        if comparison.holds(report)
        for warning in report.warnings
    ]
    missing = missing_line(comparison)
    return lines + ([] if missing is None else [clip(f"- {md_text(missing)}", LINE_CAP)])


_FUNCTIONS = (
    Column("function", "function", "text"),
    Column("group", "group", "text"),
    SIZE,
)
_CHANGED = (
    Column("function", "function", "text"),
    *CHANGE[:3],  # no percent
)


def _function_sections(comparison: Comparison) -> list[_Section]:
    """Added, removed and resized functions (matched by name), each row written as read."""
    sections: list[_Section] = []
    for label, fns, sign in (("added", comparison.added, 1), ("removed", comparison.removed, -1)):
        summary = (
            f"Functions {label}: {len(fns):,} ({human_delta(sign * sum(r.bytes for r in fns))})"
        )
        rows = (Row((Name(r.name), Name(r.group), r.bytes)) for r in fns)
        lines = (markdown_row(_FUNCTIONS, row, cap=NAME_CAP) for row in rows)
        sections.append((summary, markdown_header(_FUNCTIONS), len(fns), lines))
    if comparison.changed:
        changed = comparison.changed
        rows = (Row((Name(c.name), c.base_bytes, c.head_bytes, c.delta)) for c in changed)
        lines = (markdown_row(_CHANGED, row, cap=NAME_CAP) for row in rows)
        summary = f"Functions changed in size: {len(changed):,}"
        sections.append((summary, markdown_header(_CHANGED), len(changed), lines))
    return sections


def _jit_section(comparison: Comparison, jit: JitComparison) -> _Section:
    """A build's JIT units beside its metallib: one collapsed table, with its origin."""
    table = jit_delta_table(comparison, None)
    rows = [*_lines(table, table.rows)]
    rows.append(
        clip(
            f"| measured: base {md_text(jit.base_origin or 'no JIT unit')}; head "
            f"{md_text(jit.head_origin or 'no JIT unit')} | | | | |",
            LINE_CAP * 2,
        )
    )
    summary = (
        f"JIT units ({jit_what(jit.host_measured)}): {human_size(jit.base_total)} → "
        f"{human_size(jit.head_total)}, {human_delta(jit.delta)}"
    )
    return (summary, markdown_header(table.columns, _KEYS), len(rows), rows)


def comment_markdown(
    pairs: Sequence[tuple[Comparison, Sequence[Verdict]]],
    top: int | None = 15,
    *,
    limit: int = DEFAULT_LIMIT,
    marker: str = MARKER,
) -> str:
    """The whole comment for one or more library pairs, under ``limit`` UTF-8 bytes.

    ``top`` = None shows every group that fits. Each pair gets an equal share of the room.
    """
    head_lines = [marker, "### Metallib size", ""]
    several = len(pairs) > 1
    first = headline(
        [
            (v, md_code(c.library.source.label, NAME_CAP) if several else "head")
            for c, gates in pairs
            for v in gates
        ],
        "gates pass",
    )
    if first is not None:  # what failed, in a reviewer's words, before any table
        head_lines += [first, ""]
    summary = pairs_summary([comparison for comparison, _ in pairs], lambda n: md_code(n, 200))
    if summary is not None:  # which libraries are on one side only, before any detail
        head_lines += [clip(summary[0].upper() + summary[1:] + ".", LINE_CAP * 4), ""]
    room = limit - sum(map(_size, head_lines)) - 1
    share = room // max(1, len(pairs))
    lines = list(head_lines)
    for comparison, gates in pairs:
        if len(pairs) > 1 or comparison.change != "paired":
            what = "" if comparison.change == "paired" else f" ({comparison.change} library)"
            title = f"#### {md_code(comparison.library.source.label, NAME_CAP)}{what}"
            lines += [title, ""]
            section = _section(comparison, gates, top, share - _size(title) - 1)
        else:
            section = _section(comparison, gates, top, share)
        lines += [*section, ""]
    return "\n".join(lines).rstrip("\n") + "\n"
