"""The one table model every result is shown through, and how each medium writes a cell.

A result (a report, a comparison, a budget, a binary's account...) is made into ``Table`` values
once: columns (the CSV/JSON key, the word heading it for people, the kind of value), rows of plain
values with their role (a named row, the rest folded into one, overhead, the total) and nesting
depth (a second ``--by`` key). Every figure a reader sees is in the rows: shares, cumulative
shares and deltas are computed here, when the rows are made, never by a writer. The writers
(``builder.render.writers``: rich text, markdown, CSV) only format values by their column's
kind, so the formats of one result cannot disagree, and a column added to a result's table is
shown by every writer with no change to them.

Untrusted text (a function's name, a path from a saved report) is marked by its type: ``Name``
(shown as code in markdown) and ``Said`` (free text); plain ``str`` is the tool's own words.
Each writer escapes the marked kinds for its medium (``builder.render.markup``).
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Literal, cast

from builder.render.text import human_delta, human_size, signed_percent

__all__ = [
    "ALL",
    "CSV",
    "PEOPLE",
    "Column",
    "Kind",
    "Name",
    "Role",
    "Row",
    "Said",
    "Table",
    "Words",
    "cell_text",
    "cumulative_shares",
    "share_of",
]

Kind = Literal["text", "count", "size", "bytes", "share", "delta", "percent", "verdict"]
"""How a value is written: ``count`` and ``bytes`` exact (``1,234``), ``size`` and ``delta``
human (``1.23 kB``, ``+512 B``), ``share`` a fraction (``12.5%``), ``percent`` a change in
percent (``+1.2%``, ``new``), ``verdict`` a check's result (``pass``/``FAIL``; a failed row is
red in the terminal). CSV writes every number as it is, a share with six places, a verdict as
``true``/``false``."""

Role = Literal["row", "rest", "overhead", "total"]

ALL = frozenset({"text", "markdown", "csv"})
PEOPLE = frozenset({"text", "markdown"})
CSV = frozenset({"text", "csv"})
"""Media of the exact ``bytes`` column: the terminal table shows it beside the human size."""


class Name(str):
    """An untrusted name (a function, group, file): inline code in markdown."""

    __slots__ = ()


class Said(str):
    """Untrusted free text (a path, a target, a message naming one): plain text in markdown."""

    __slots__ = ()


Words = tuple[str, ...]
"""A line made of pieces: the tool's words (``str``) and untrusted ``Name``/``Said`` pieces."""


@dataclass(frozen=True)
class Column:
    """One column: ``key`` in CSV (and JSON), ``heading`` for people, the ``kind`` of its values,
    and the ``media`` that show it."""

    key: str
    heading: str
    kind: Kind
    media: frozenset[str] = ALL


@dataclass(frozen=True)
class Row:
    """One row's values, one per column (None: an empty cell), its role and nesting depth,
    and the media that show it."""

    values: tuple[object, ...]
    role: Role = "row"
    depth: int = 0
    media: frozenset[str] = ALL


@dataclass(frozen=True)
class Table:
    """A titled table. ``caption`` lines follow it (a rich caption; ``<sub>`` in markdown),
    ``notes`` lines come after it in the text formats. ``context`` are the CSV cells that name
    where the rows come from (``file``, ``by``; ``library``, ``change``); ``nested`` tables have
    a second key (a ``subgroup`` CSV column); ``csv_total`` names the total row in CSV (None: no
    total row there, the rows add up by themselves); ``csv_prefix`` goes before each CSV name."""

    columns: tuple[Column, ...]
    rows: tuple[Row, ...]
    title: Words
    heading: Words = ()
    caption: tuple[Words, ...] = ()
    notes: tuple[Words, ...] = ()
    context: tuple[tuple[str, str], ...] = ()
    nested: bool = False
    csv_total: str | None = None
    csv_prefix: str = ""
    rich: dict[str, str] = field(default_factory=dict)
    """Row styles for the terminal by role (``builder.render.writers.text``)."""

    def value(self, row: Row, key: str) -> object:
        """``row``'s value in the first column keyed ``key``."""
        for column, value in zip(self.columns, row.values, strict=True):
            if column.key == key:
                return value
        raise KeyError(key)


_VERDICTS = {"text": ("FAIL", "pass"), "markdown": ("❌ **FAIL**", "✅ pass")}


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


def cell_text(kind: Kind, value: object, medium: str) -> str:
    """A value as ``medium`` writes it (text is escaped by the writer, not here)."""
    if value is None:
        return "new" if kind == "percent" and medium != "csv" else ""
    if kind == "text":
        return str(value)
    if kind == "verdict":
        return ("true" if value else "false") if medium == "csv" else _VERDICTS[medium][bool(value)]
    number = cast(float, value)
    if medium == "csv":
        if kind == "share":
            return "" if math.isnan(number) else f"{number:.6f}"
        return f"{number:.4f}" if kind == "percent" else str(value)
    if kind == "share":
        return "-" if math.isnan(number) else f"{100.0 * number:.1f}%"
    if kind == "percent":
        return signed_percent(number)
    if kind == "size":
        return human_size(number)
    if kind == "delta":
        return human_delta(cast(int, value))
    return f"{value:,}"
