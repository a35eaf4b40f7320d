"""Functions in more than one library as a table of the one model (``builder.render.table``):
a row per pair of libraries sharing a name (``builder.size.duplicates``), shown after the
reports' own tables by every text format (terminal, markdown, CSV); under it, per pair, the
first few shared names, those with identical modules, and what each library holds alone.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import TYPE_CHECKING

from builder.inputs.member_names import shortened
from builder.render.table import CSV_ONLY, Column, Name, Row, Table, Words
from builder.render.text import human_size

if TYPE_CHECKING:
    from builder.size.duplicates import Duplication, OnlyIn

__all__ = ["SHOWN_NAMES", "duplicates_table"]

SHOWN_NAMES = 3
"""Names a note lists before "and N more" (JSON lists them all)."""
_SHOWN_GROUPS = 3

_TEXT = frozenset({"text"})
_MARKDOWN = frozenset({"markdown"})
_NOT_TEXT = frozenset({"markdown", "csv"})
_COLUMNS = (
    Column("first", "library", "text", _NOT_TEXT),  # first: the name a CSV record takes
    Column("first", "library", "text", _TEXT, keep=True),  # short: the title names it whole
    Column("second", "and library", "text", _NOT_TEXT),
    Column("second", "and library", "text", _TEXT, keep=True),
    # the terminal: a count and its size in one cell (wrapped at the space), so that the table
    # fits 80 columns without cutting the names
    Column("functions", "shared", "text", _TEXT),
    Column("functions", "shared functions", "count", _NOT_TEXT),
    Column("bytes", "their size", "size", _MARKDOWN),
    Column("bytes", "bytes", "bytes", CSV_ONLY),
    Column("identical_functions", "identical", "text", _TEXT),
    Column("identical_functions", "identical modules", "count", _NOT_TEXT),
    Column("identical_bytes", "their size", "size", _MARKDOWN),
    Column("identical_bytes", "identical bytes", "bytes", CSV_ONLY),
    Column("only_first_functions", "only in the first", "text", _TEXT),
    Column("only_first_functions", "only in the first", "count", _NOT_TEXT),
    Column("only_first_bytes", "size", "size", _MARKDOWN),
    Column("only_first_bytes", "only in the first bytes", "bytes", CSV_ONLY),
    Column("only_second_functions", "only in the second", "text", _TEXT),
    Column("only_second_functions", "only in the second", "count", _NOT_TEXT),
    Column("only_second_bytes", "size", "size", _MARKDOWN),
    Column("only_second_bytes", "only in the second bytes", "bytes", CSV_ONLY),
)


def _both(functions: int | None, size: int | None) -> str | None:
    """A count and its size (None: not known)."""
    if functions is None or size is None:
        return None
    return f"{functions:,} ({human_size(size)})"


WHOSE_BYTES = (
    "shared and identical: the second library's bytes of those functions (everything each "
    "owns), what dropping them from it would save; identical: a module of the same size and "
    "HASH tag (its SHA-256); only in one: that library's bytes"
)


def duplicates_table(found: Sequence[Duplication], libraries: int) -> Table:
    """A row per pair of the ``libraries`` that shares any function name; notes name them.
    The terminal shows each library by its short name (``member_names.shortened``: an identity,
    a version), the title names them whole once; markdown and CSV keep the whole names."""
    named = shortened([name for d in found for name in (d.first, d.second)])
    short = iter(named.short)
    rows = tuple(
        Row(
            (
                Name(d.first),
                Name(next(short)),
                Name(d.second),
                Name(next(short)),
                _both(d.functions, d.bytes),
                d.functions,
                d.bytes,
                d.bytes,
                _both(d.identical_functions, d.identical_bytes),
                d.identical_functions,
                d.identical_bytes,
                d.identical_bytes,
                _both(d.only_first.functions, d.only_first.bytes),
                d.only_first.functions,
                d.only_first.bytes,
                d.only_first.bytes,
                _both(d.only_second.functions, d.only_second.bytes),
                d.only_second.functions,
                d.only_second.bytes,
                d.only_second.bytes,
            )
        )
        for d in found
    )
    whole: Words = () if named.whole is None else (" (libraries ", Name(named.whole), ")")
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
            *whole,
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
