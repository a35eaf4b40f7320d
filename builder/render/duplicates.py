"""Functions in more than one library as a table of the one model (``builder.render.table``):
a row per pair of libraries sharing a name (``builder.size.duplicates``), shown after the
reports' own tables by every text format (terminal, markdown, CSV); under it, per pair, the
first few shared names, those with identical modules, and what each library holds alone.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import TYPE_CHECKING

from builder.render.table import CSV_ONLY, PEOPLE, Column, Name, Row, Table, Words
from builder.render.text import human_size

if TYPE_CHECKING:
    from builder.size.duplicates import Duplication, OnlyIn

__all__ = ["SHOWN_NAMES", "duplicates_table"]

SHOWN_NAMES = 3
"""Names a note lists before "and N more" (JSON lists them all)."""
_SHOWN_GROUPS = 3

_COLUMNS = (
    Column("first", "library", "text"),
    Column("second", "and library", "text"),
    Column("functions", "shared functions", "count"),
    Column("bytes", "their size", "size", PEOPLE),
    Column("bytes", "bytes", "bytes", CSV_ONLY),
    Column("identical_functions", "identical modules", "count"),
    Column("identical_bytes", "their size", "size", PEOPLE),
    Column("identical_bytes", "identical bytes", "bytes", CSV_ONLY),
    Column("only_first_functions", "only in the first", "count"),
    Column("only_first_bytes", "size", "size", PEOPLE),
    Column("only_first_bytes", "only in the first bytes", "bytes", CSV_ONLY),
    Column("only_second_functions", "only in the second", "count"),
    Column("only_second_bytes", "size", "size", PEOPLE),
    Column("only_second_bytes", "only in the second bytes", "bytes", CSV_ONLY),
)

WHOSE_BYTES = (
    "shared and identical: the second library's bytes of those functions (everything each "
    "owns), what dropping them from it would save; identical: a module of the same size and "
    "HASH tag (its SHA-256); only in one: that library's bytes"
)


def duplicates_table(found: Sequence[Duplication], libraries: int) -> Table:
    """A row per pair of the ``libraries`` that shares any function name; notes name them."""
    rows = tuple(
        Row(
            (
                Name(d.first),
                Name(d.second),
                d.functions,
                d.bytes,
                d.bytes,
                d.identical_functions,
                d.identical_bytes,
                d.identical_bytes,
                d.only_first.functions,
                d.only_first.bytes,
                d.only_first.bytes,
                d.only_second.functions,
                d.only_second.bytes,
                d.only_second.bytes,
            )
        )
        for d in found
    )
    notes: list[Words] = []
    for d in found:
        notes += _pair_notes(d)
    if not found:
        notes.append((f"no function name is in more than one of the {libraries} libraries",))
    return Table(
        _COLUMNS,
        rows,
        title=(
            "Functions in more than one library: ",
            f"{len(found)} of {libraries * (libraries - 1) // 2} pairs of libraries share names",
        ),
        heading=("Functions in more than one library",),
        caption=((WHOSE_BYTES,),),
        notes=tuple(notes),
    )


def _names(names: Sequence[str]) -> Words:
    """The first few ``names``, and how many more."""
    words: list[str] = []
    for at, name in enumerate(names[:SHOWN_NAMES]):
        words += [", " if at else "", Name(name)]
    if len(names) > SHOWN_NAMES:
        words.append(f" and {len(names) - SHOWN_NAMES:,} more")
    return tuple(words)


def _pair_notes(d: Duplication) -> list[Words]:
    first, second = Name(d.first), Name(d.second)
    lines: list[Words] = [
        (
            "- ",
            first,
            " and ",
            second,
            f" share {_functions(d.functions)} by name ({d.bytes:,} bytes in the second): ",
            *_names(d.names),
        )
    ]
    if d.identical_names is None:
        lines.append(("  - identical modules: not known (a saved report keeps no HASH tags)",))
    elif d.identical_names:
        counted = f"{d.identical_functions or 0:,} ({d.identical_bytes or 0:,} bytes in the second)"
        lines.append((f"  - identical modules: {counted}: ", *_names(d.identical_names)))
    else:
        lines.append(("  - identical modules: none",))
    lines += [_only(d.first, d.only_first), _only(d.second, d.only_second)]
    return [line for line in lines if line]


def _functions(count: int) -> str:
    return f"{count:,} function" + ("" if count == 1 else "s")


def _only(label: str, only: OnlyIn) -> Words:
    """What one library of a pair holds alone: count, bytes, its largest groups, names."""
    if not only.functions:
        return ()
    groups: list[str] = []
    for at, g in enumerate(only.groups[:_SHOWN_GROUPS]):
        groups += [", " if at else "", Name(g.group), f" {g.functions:,} ({human_size(g.bytes)})"]
    rest = len(only.groups) - _SHOWN_GROUPS
    more = (f" and {rest:,} groups more",) if rest > 0 else ()
    return (
        "  - only in ",
        Name(label),
        f": {_functions(only.functions)} ({only.bytes:,} bytes); by group: ",
        *groups,
        *more,
        "; ",
        *_names(only.names),
    )
