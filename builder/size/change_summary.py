"""What changed between two sides of a comparison, in a few numbers: the summary above every
compare table, and the roll-up that keeps a table's rest row from holding most of the change.

A summary classes every joined group (``builder.size.rollup.join``) as new, grown, shrunk,
removed or unchanged; the deltas of those classes and of the overhead rows add up to the
comparison's delta exactly. Renames are function-level: a removed and an added function whose
names differ by one ``_``-separated token (one token replaced, inserted or deleted; the tokens
both keep at least two), paired one to one (``renames``).

A table shows its ``top`` rows by |delta| and folds the others into one rest row. When that
rest row would hold more than half of the change, the groups are rolled up one level, to a
coarser label: the first N ``_``- or ``/``-separated tokens of their labels, N falling from the
longest label's token count minus one to 1, until the rows shown explain at least half
(``explain``). "The change" a table's rows explain is the sum of every row's |delta| at that
level (growth and shrinkage both count; overhead rows and a pinned row are always shown).
Pure data.
"""

from __future__ import annotations

import re
from collections.abc import Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING

from builder.size.rollup import fold

if TYPE_CHECKING:
    from builder.size.rollup import FunctionRow, Rollup

__all__ = [
    "EXPLAINED",
    "ChangeSummary",
    "Explained",
    "Moved",
    "Rename",
    "explain",
    "explained_share",
    "prefix_label",
    "renames",
    "summarize",
]

EXPLAINED = 0.5
"""The share of the change the rows a table shows must explain before it rolls up no further."""


@dataclass(frozen=True)
class Moved:
    """Groups of one class (new, grown, shrunk, removed) and the bytes they moved (signed:
    head minus base)."""

    groups: int
    delta_bytes: int


@dataclass(frozen=True)
class Rename:
    """A removed function and the added one it became (their names differ by one token)."""

    base: str
    head: str
    base_bytes: int
    head_bytes: int

    @property
    def delta(self) -> int:
        return self.head_bytes - self.base_bytes


@dataclass(frozen=True)
class ChangeSummary:
    """The classes of a comparison's groups; ``new + grown + shrunk + removed +
    overhead_delta_bytes`` is ``delta_bytes``."""

    new: Moved
    grown: Moved
    shrunk: Moved
    removed: Moved
    unchanged: int
    """Groups on both sides with the same bytes."""
    overhead_delta_bytes: int
    """The overhead rows' change (the container's, a host library's unowned bytes)."""
    delta_bytes: int
    renames: tuple[Rename, ...]
    """Largest first (by the larger side's bytes, then name)."""

    @property
    def renamed_delta_bytes(self) -> int:
        return sum(r.delta for r in self.renames)


def summarize(
    groups: Sequence[Rollup],
    added: Sequence[FunctionRow] = (),
    removed: Sequence[FunctionRow] = (),
) -> ChangeSummary:
    """The summary of joined ``groups`` (every row, overhead rows included), with the renames
    among ``added`` and ``removed`` functions."""
    classes: dict[str, list[int]] = {k: [] for k in ("new", "grown", "shrunk", "removed", "same")}
    overhead = 0
    for g in groups:
        if g.overhead:
            overhead += g.delta
        elif not g.base_function_count and not g.base_bytes:
            classes["new" if g.function_count or g.bytes else "same"].append(g.delta)
        elif not g.function_count and not g.bytes:
            classes["removed"].append(g.delta)
        else:
            key = "grown" if g.delta > 0 else "shrunk" if g.delta < 0 else "same"
            classes[key].append(g.delta)
    moved = {k: Moved(len(v), sum(v)) for k, v in classes.items()}
    return ChangeSummary(
        moved["new"],
        moved["grown"],
        moved["shrunk"],
        moved["removed"],
        moved["same"].groups,
        overhead,
        sum(g.delta for g in groups),
        tuple(renames(removed, added)),
    )


_SPARE = 2
"""Tokens a renamed pair must share: two names of two tokens differing in one (``copy_float``
and ``fill_float``) are two functions, not a rename."""


def renames(removed: Sequence[FunctionRow], added: Sequence[FunctionRow]) -> list[Rename]:
    """Removed and added functions paired one to one where their names differ by one token:
    one replaced (``sum_reduction_inner_chunk`` -> ``sum_reduction_innermost_chunk``), inserted
    or deleted (``igamma_strided_cast_float`` -> ``igamma_strided_cast_float_float``), the
    names sharing at least two tokens. Each removed function (by name) takes the closest added
    one still free: a replaced token before an inserted or deleted one, then the nearest size,
    then the name."""
    if not removed or not added:
        return []
    # two such names share their first token or their last: only those added names are keyed
    ends = {f.name.partition("_")[0] for f in removed} | {
        f.name.rpartition("_")[2] for f in removed
    }
    by_name: dict[str, FunctionRow] = {}
    index: dict[str, list[str]] = {}
    for f in added:
        if f.name.partition("_")[0] not in ends and f.name.rpartition("_")[2] not in ends:
            continue
        by_name[f.name] = f
        tokens = f.name.split("_")
        for key in _replaced(tokens):
            index.setdefault(key, []).append(f.name)
        if len(tokens) > _SPARE:  # the removed name is this one less a token
            for key in _dropped(tokens):
                index.setdefault("+" + key, []).append(f.name)
    taken: set[str] = set()
    found: list[Rename] = []
    for fn in sorted(removed, key=lambda f: f.name):
        tokens = fn.name.split("_")
        options = [(0, name) for key in _replaced(tokens) for name in index.get(key, ())]
        options += [(1, name) for name in index.get("+" + fn.name, ())]
        if len(tokens) > _SPARE:  # a token of the removed name dropped
            options += [(1, n) for n in _dropped(tokens) if n in by_name]
        free = [
            (rank, abs(by_name[name].bytes - fn.bytes), name)
            for rank, name in options
            if name not in taken
        ]
        if free:
            name = min(free)[2]
            taken.add(name)
            found.append(Rename(fn.name, name, fn.bytes, by_name[name].bytes))
    found.sort(key=lambda r: (-max(r.base_bytes, r.head_bytes), r.base))
    return found


def _replaced(tokens: list[str]) -> list[str]:
    """The keys of a name with one token replaced (``\0`` where it was)."""
    if len(tokens) <= _SPARE:
        return []
    return ["_".join([*tokens[:i], "\0", *tokens[i + 1 :]]) for i in range(len(tokens))]


def _dropped(tokens: list[str]) -> list[str]:
    """The name less one token, for each token."""
    return ["_".join(tokens[:i] + tokens[i + 1 :]) for i in range(len(tokens))]


@dataclass(frozen=True)
class Explained:
    """The rows a table ranks and how much of the change its ``top`` of them explain."""

    groups: list[Rollup]
    """The rows, by |delta| (overhead rows and the pinned one as given, after them)."""
    tokens: int | None
    """None: the groups as they are; else their labels' first ``tokens`` tokens."""
    share: float
    """The share of the change the rows shown explain (1.0 when nothing is folded)."""
    group_share: float
    """The same share with the groups as they are (before any roll-up)."""


def explain(groups: Sequence[Rollup], top: int | None, pinned: str | None = None) -> Explained:
    """``groups`` as given when the ``top`` rows shown explain at least ``EXPLAINED`` of the
    change (or ``top`` is None: every row shown); else rolled up, one token fewer at a time,
    until they do or the labels are one token each. A rolled-up row is labelled by what its
    groups' labels share (``prefix_label``)."""
    first = explained_share(groups, top, pinned)
    if first >= EXPLAINED or top is None:
        return Explained(list(groups), None, first, first)
    ranked = [g for g in groups if not g.overhead and g.name != pinned]
    kept = [g for g in groups if g.overhead or g.name == pinned]
    split = {g.name: _tokens(g.name) for g in ranked}
    longest = max((len(t) // 2 + 1 for t in split.values()), default=1)
    best = Explained(list(groups), None, first, first)
    count = len(ranked)
    for tokens in range(longest - 1, 0, -1):
        members: dict[str, list[Rollup]] = {}
        for g in ranked:
            members.setdefault("".join(split[g.name][: 2 * tokens - 1]), []).append(g)
        if len(members) == count:  # nothing merged at this level
            continue
        count = len(members)
        rows = [_rolled(rows) for rows in members.values()]
        rows.sort(key=lambda g: (-abs(g.delta), -g.bytes, g.name))
        share = explained_share([*rows, *kept], top, pinned)
        best = Explained([*rows, *kept], tokens, share, first)
        if share >= EXPLAINED:
            break
    return best


def explained_share(groups: Sequence[Rollup], top: int | None, pinned: str | None = None) -> float:
    """The share of the change (the sum of every row's |delta|) held by the rows a table with
    ``top`` rows shows: all but the rest row (``shown_count``'s rule: a rest row folds two
    rows or more). 1.0 when nothing changed."""
    ranked = [g for g in groups if not g.overhead and g.name != pinned]
    whole = sum(abs(g.delta) for g in groups)
    if not whole:
        return 1.0
    shown = len(ranked) if top is None or top >= len(ranked) - 1 else max(top, 0)
    return 1.0 - sum(abs(g.delta) for g in ranked[shown:]) / whole


_SEPARATOR = re.compile(r"([_/])")


def _tokens(label: str) -> list[str]:
    """A label's tokens with the separators between them (``a_b/c``: ``a _ b / c``)."""
    return _SEPARATOR.split(label)


def prefix_label(labels: Sequence[str]) -> str:
    """The label of rolled-up groups: one group keeps its own; several, the tokens all their
    labels start with, and ``*`` (``sort_block*`` for ``sort_block`` and
    ``sort_block_stable``)."""
    if len(labels) == 1:
        return labels[0]
    split = [_tokens(label) for label in labels]
    common: list[str] = []
    for pieces in zip(*split, strict=False):
        if len(set(pieces)) != 1:
            break
        common.append(pieces[0])
    while common and _SEPARATOR.fullmatch(common[-1]):
        common.pop()
    return "".join(common) + "*"


def _rolled(rows: list[Rollup]) -> Rollup:
    label = prefix_label([g.name for g in rows])
    return rows[0] if len(rows) == 1 else fold(label, rows)
