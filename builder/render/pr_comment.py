"""The comparison as one sticky pull-request comment: markdown with a hard length bound.

CI bots post one comment per pull request and edit it on every push. This renderer is built for
that: the first line is a hidden HTML marker (``MARKER``) a CI step searches for to find its own
comment; the totals and gate verdicts come first; then the top N groups by |delta|; then
collapsed ``<details>`` sections (added, removed and resized functions, the remaining groups, what
produced each side). GitHub rejects comments over 65,536 characters, so the whole text is kept
under ``limit`` UTF-8 bytes (60 KB by default) whatever the input: every row is length-capped and
each section takes rows only while they fit, then says how many it left out. Pure: data in,
string out.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Sequence
from typing import TYPE_CHECKING, Generic, NamedTuple, TypeVar, overload

from builder.render.checks import gate_message
from builder.render.compare_tables import (
    compare_download_line,
    delta_columns,
    delta_row,
    pair_sides,
    pairs_summary,
)
from builder.render.table import Name, Role, Row, markdown_header, markdown_row
from builder.render.text import (
    clip,
    human_delta,
    human_size,
    md_code,
    md_text,
    origin,
    provenance_line,
)
from builder.size.report import by_strings

if TYPE_CHECKING:
    from builder.size.checks import Check
    from builder.size.compare import Comparison, JitComparison
    from builder.size.rollup import FunctionRow, Rollup

__all__ = ["DEFAULT_LIMIT", "MARKER", "comment_markdown", "compare_markdown"]

MARKER = "<!-- metallib-builder:size-comment -->"
DEFAULT_LIMIT = 60_000
"""Bytes; GitHub's limit is 65,536 characters, and a UTF-8 byte count is never smaller."""
_NAME_CAP = 160
_LINE_CAP = 600
_MORE = "| … {n:,} more not shown (see `compare --format json`) |"


def _size(text: str) -> int:
    return len(text.encode("utf-8")) + 1  # + newline


def _code(name: str) -> str:
    """A name as inline code, capped so one name cannot take a row's whole budget."""
    return md_code(name, _NAME_CAP)


_T = TypeVar("_T")


class _Rendered(Sequence[str], Generic[_T]):
    """Table rows made when read: a comment shows the few hundred rows that fit of up to tens
    of thousands (every function of two MLX libraries), so only those are rendered."""

    def __init__(self, items: Sequence[_T], render: Callable[[_T], str]) -> None:
        self._items = items
        self._render = render

    def __len__(self) -> int:
        return len(self._items)

    @overload
    def __getitem__(self, index: int) -> str: ...

    @overload
    def __getitem__(self, index: slice) -> _Rendered[_T]: ...

    def __getitem__(self, index: int | slice) -> str | _Rendered[_T]:
        if isinstance(index, slice):
            return _Rendered(self._items[index], self._render)
        return self._render(self._items[index])


class _Budget:
    """Lines collected under a byte budget; ``fits`` checks before ``add`` commits."""

    def __init__(self, limit: int) -> None:
        self.left = limit
        self.lines: list[str] = []

    def fits(self, lines: Iterable[str], reserve: int = 0) -> bool:
        return sum(map(_size, lines)) + reserve <= self.left

    def add(self, *lines: str) -> None:
        for line in lines:
            self.left -= _size(line)
            self.lines.append(line)

    def fill(self, rows: Sequence[str], reserve: int) -> int:
        """Add rows while they fit, keeping ``reserve`` bytes free; returns how many were added."""
        count = 0
        for row in rows:
            if not self.fits([row], reserve):
                break
            self.add(row)
            count += 1
        return count


def _headline(comparison: Comparison) -> str:
    base, head = comparison.base, comparison.head
    sizes = (comparison.base_size, comparison.head_size)
    functions = (base.function_count, head.function_count)
    return _change_line(comparison, comparison.delta, comparison.percent, sizes, functions)


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
        _LINE_CAP * 2,
    )


_KEYS = (
    "group",
    "base_bytes",
    "head_bytes",
    "delta_bytes",
    "delta_percent",
    "delta_download_bytes",
)
"""The columns of the comparison's table (``builder.render.compare_tables``) a comment shows."""


def _group_row(g: Rollup, role: Role = "row", name: str | None = None) -> str:
    """A joined row as the comparison's model makes it, written in the comment's columns."""
    download = g.download_delta is not None  # compare --download only
    row = delta_row(
        g, Name(g.name) if name is None else name, role, counts=False, download=download
    )
    return markdown_row(delta_columns("", None, download), row, _KEYS, _NAME_CAP)


def _header(key: str, download: bool) -> list[str]:
    return markdown_header(delta_columns(key, None, download), _KEYS)


class _DeltaTable(NamedTuple):
    """What ``_groups`` draws: the metallib's groups, or a JIT-only pair's units."""

    key: str
    groups: list[Rollup]
    overhead: list[Rollup]
    base_total: int
    head_total: int
    percent: float | None
    unit: str
    download_delta: int | None = None


def _metallib_table(comparison: Comparison) -> _DeltaTable:
    return _DeltaTable(
        comparison.head.by,
        [g for g in comparison.groups if not g.overhead],
        [g for g in comparison.groups if g.overhead],
        comparison.base_size,
        comparison.head_size,
        comparison.percent,
        "groups",
        comparison.download_delta,
    )


def _jit_table(jit: JitComparison, row: str = "JIT unit") -> _DeltaTable:
    return _DeltaTable(
        row,
        [g for g in jit.groups if not g.overhead],
        [g for g in jit.groups if g.overhead],
        jit.base_total,
        jit.head_total,
        jit.percent,
        "units",
    )


def _groups(table: _DeltaTable, top: int | None, out: _Budget, cap: int) -> Sequence[str]:
    """The top-N group table in at most ``cap`` bytes; returns the rows of the groups it folded.

    Groups past ``top``, or past what fits, are folded into one "rest" row (so the table always
    adds up to the total) and listed again in a collapsed section."""
    from builder.size.rollup import fold

    groups = table.groups
    rows = _Rendered(groups, _group_row)
    wanted = len(rows) if top is None else min(top, len(rows))
    download = table.download_delta is not None
    total = _total_row(table.base_total, table.head_total, table.percent, table.download_delta)
    out.add(*_header(table.key, download))
    tail = (1 + len(table.overhead)) * 100 + _size(total)  # rest row, overhead rows, total row
    shown = out.fill(rows[:wanted], max(tail, out.left - cap + tail))
    rest = groups[shown:]
    if rest:
        folded = fold(f"rest ({len(rest):,} {table.unit})", rest)
        out.add(_group_row(folded, "rest", folded.name))
    out.add(*(_group_row(g, "overhead", g.name) for g in table.overhead), total, "")
    return rows[shown:]


def _total_row(base: int, head: int, percent: float | None, download: int | None) -> str:
    """The total row, its delta (and download delta) in bold."""
    values: tuple[object, ...] = ("total", base, head, head - base, percent)
    if download is not None:
        values += (None, None, download)
    columns = delta_columns("", None, download is not None)
    return markdown_row(columns, Row(values, "total"), _KEYS)


_Section = tuple[str, Sequence[str], Sequence[str]]


def _details(out: _Budget, section: _Section, cap: int) -> None:
    """A collapsed section with as many rows as fit in ``cap`` bytes, then how many were left out.

    When not even its frame fits, the summary alone is kept as a bold line (the count and total
    are the part a reader needs most)."""
    summary, header, rows = section
    summary = clip(summary, _LINE_CAP)
    opening = ["<details>", f"<summary>{summary}</summary>", "", *header]
    closing = ["", "</details>", ""]
    more = _size(_MORE.format(n=len(rows)))
    frame = sum(map(_size, [*opening, *closing])) + more
    if not rows or frame > cap:
        out.fill([f"**{summary}**", ""], 0)
        return
    out.add(*opening)
    keep = out.left - cap + frame  # bytes this section must leave to the ones after it
    shown = out.fill(rows, max(keep, sum(map(_size, closing)) + more))
    if shown < len(rows):
        out.add(_MORE.format(n=len(rows) - shown))
    out.add(*closing)


def _function_rows(rows: Sequence[FunctionRow]) -> Sequence[str]:
    return _Rendered(
        rows, lambda r: f"| {_code(r.name)} | {_code(r.group)} | {human_size(r.bytes)} |"
    )


def _section(
    comparison: Comparison, gates: Sequence[Check], top: int | None, limit: int
) -> list[str]:
    """One library pair, in at most ``limit`` bytes.

    Budget: headline, verdicts and notes first (each line capped); the group table gets at
    most half of what is left; the collapsed sections share the rest equally, a section that
    needs less leaving its share to the ones after it. A pair with no metallib on either side
    (every unit JIT) shows its JIT units, measured in the host libraries, instead."""
    base, head = comparison.base, comparison.head
    jit = comparison.jit
    if comparison.jit_only and jit is not None:
        shipped = by_strings(base) and by_strings(head)  # two shipped host libraries
        what = (
            "the run-time sources the host libraries embed"
            if shipped
            else "every unit is compiled at run time"
        )
        footer = clip(
            f"<sub>No metallib on either side: {what}. Measured: "
            f"base {md_text(jit.base_origin or 'no JIT unit')}; "
            f"head {md_text(jit.head_origin or 'no JIT unit')}.</sub>",
            _LINE_CAP * 2,
        )
        if shipped:  # rows are the run-time sources the binaries return, not build units
            table = _jit_table(jit, "run-time source")
            headline = _jit_headline(comparison, jit, "run-time sources")
        else:
            table, headline = _jit_table(jit), _jit_headline(comparison, jit)
    else:
        sides = [
            md_code(origin(r)) if comparison.holds(r) else name
            for r, name in zip((base, head), pair_sides(comparison), strict=True)
        ]
        footer = clip(
            f"<sub>Grouped by {head.by} ({md_text(head.grouping)}). Measured in base "
            f"{sides[0]} and head {sides[1]}.</sub>",
            _LINE_CAP * 2,
        )
        table, headline = _metallib_table(comparison), _headline(comparison)
    out = _Budget(limit - _size(footer))
    out.add(headline, "")
    download = None if comparison.jit_only else compare_download_line(comparison)
    if download is not None:
        out.add(clip(f"**{download[0].upper()}{download[1:]}**", _LINE_CAP), "")
    for gate in gates:
        verdict = "✅ pass" if gate.passed else "❌ **FAIL**"
        out.fill([clip(f"- {verdict}: {md_text(gate_message(gate))}", _LINE_CAP)], 0)
    for note in comparison.notes:
        out.fill([clip(f"- note: {md_text(note)}", _LINE_CAP)], 0)
    if gates or comparison.notes:
        out.add("")
    folded = _groups(table, top, out, cap=out.left // 2)
    sections: list[_Section] = [] if comparison.jit_only else _function_sections(comparison)
    if jit is not None and not comparison.jit_only:
        sections.append(_jit_section(jit))
    if folded:
        extra = table.download_delta is not None
        sections.append(
            (f"Other {table.key} {table.unit}: {len(folded):,}", _header(table.key, extra), folded)
        )
    produced = [
        clip(f"- {side}: {md_text(provenance_line(r.provenance))}", _LINE_CAP)
        for side, r in (("base", base), ("head", head))
        if comparison.holds(r)
    ]
    sections.append(("How these were measured and built", [], produced))
    for index, section in enumerate(sections):
        _details(out, section, out.left // (len(sections) - index))
    out.add(footer)
    return out.lines


def _function_sections(comparison: Comparison) -> list[_Section]:
    """Added, removed and resized functions (matched by name)."""
    sections: list[_Section] = []
    for label, fns, sign in (("added", comparison.added, 1), ("removed", comparison.removed, -1)):
        summary = (
            f"Functions {label}: {len(fns):,} ({human_delta(sign * sum(r.bytes for r in fns))})"
        )
        sections.append(
            (summary, ["| function | group | size |", "|---|---|---:|"], _function_rows(fns))
        )
    if comparison.changed:
        changed = _Rendered(
            comparison.changed,
            lambda c: (
                f"| {_code(c.name)} | {human_size(c.base_bytes)} | "
                f"{human_size(c.head_bytes)} | {human_delta(c.delta)} |"
            ),
        )
        sections.append(
            (
                f"Functions changed in size: {len(changed):,}",
                ["| function | base | head | delta |", "|---|---:|---:|---:|"],
                changed,
            )
        )
    return sections


def _jit_what(jit: JitComparison) -> str:
    return "JIT host library" if jit.host_measured else "embedded JIT source"


def _jit_headline(comparison: Comparison, jit: JitComparison, rows: str = "JIT units") -> str:
    sizes = (jit.base_total, jit.head_total)
    units = (len(comparison.base.jit_units), len(comparison.head.jit_units))
    return _change_line(comparison, jit.delta, jit.percent, sizes, units, _jit_what(jit), rows)


def _jit_section(jit: JitComparison) -> _Section:
    """A build's JIT units beside its metallib: one collapsed table, with its origin."""
    rows = [_group_row(g, "overhead", g.name) if g.overhead else _group_row(g) for g in jit.groups]
    rows.append(_total_row(jit.base_total, jit.head_total, jit.percent, None))
    rows.append(
        clip(
            f"| measured: base {md_text(jit.base_origin or 'no JIT unit')}; head "
            f"{md_text(jit.head_origin or 'no JIT unit')} | | | | |",
            _LINE_CAP * 2,
        )
    )
    summary = (
        f"JIT units ({_jit_what(jit)}): {human_size(jit.base_total)} → "
        f"{human_size(jit.head_total)}, {human_delta(jit.delta)}"
    )
    return (summary, _header("JIT unit", False), rows)


def comment_markdown(
    pairs: Sequence[tuple[Comparison, Sequence[Check]]],
    top: int | None = 15,
    *,
    limit: int = DEFAULT_LIMIT,
    marker: str = MARKER,
) -> str:
    """The whole comment for one or more library pairs, under ``limit`` UTF-8 bytes.

    ``top`` = None shows every group that fits. Each pair gets an equal share of the budget.
    """
    head_lines = [marker, "### Metallib size", ""]
    summary = pairs_summary([comparison for comparison, _ in pairs], lambda n: md_code(n, 200))
    if summary is not None:  # which libraries are on one side only, before any detail
        head_lines += [clip(summary[0].upper() + summary[1:] + ".", _LINE_CAP * 4), ""]
    budget = limit - sum(map(_size, head_lines)) - 1
    share = budget // max(1, len(pairs))
    lines = list(head_lines)
    for comparison, gates in pairs:
        if len(pairs) > 1 or comparison.change != "paired":
            what = "" if comparison.change == "paired" else f" ({comparison.change} library)"
            title = f"#### {_code(comparison.library.source.label)}{what}"
            lines += [title, ""]
            section = _section(comparison, gates, top, share - _size(title) - 1)
        else:
            section = _section(comparison, gates, top, share)
        lines += [*section, ""]
    return "\n".join(lines).rstrip("\n") + "\n"


def compare_markdown(
    comparison: Comparison,
    gates: Sequence[Check] = (),
    top: int | None = 15,
    *,
    limit: int = DEFAULT_LIMIT,
) -> str:
    """The comment for one library pair (see ``comment_markdown``)."""
    return comment_markdown([(comparison, gates)], top, limit=limit)
