"""``--budget``: choose the entry files to compile at run time so that the metallib fits.

The goal, in order: the metallib is at most the budget; as few kernels as possible are compiled
at run time (the JIT entry files' functions that the library has); then as few embedded source
bytes as possible. Moving a file to JIT saves about its functions' bytes, so this is a 0/1
knapsack: cover "bytes over the budget" with the fewest kernels. Entry files are few (MLX has 34),
so the planner

1. starts from the better (fewer kernels, then fewer embedded bytes) of two answers:
   - **greedy**: files in order of bytes saved per run-time kernel (ties: fewer embedded bytes,
     then name), until the metallib fits;
   - **knapsack**: a dynamic programme over the run-time kernel count (up to the greedy answer's)
     that finds the fewest kernels whose estimated saving covers the excess; skipped when files x
     kernels exceeds ``DP_CELLS``;
2. improves it until nothing changes: moves back to AOT every JIT file whose return still fits
   (most kernels first), and swaps a JIT file for an AOT one that costs fewer run-time kernels (or
   as many and fewer embedded bytes) when the swap still fits.

The result is locally optimal: no JIT entry file can go back to AOT within the budget, shown by
an exact size for each. Every size it states is exact: ``size_of`` is the writer's own layout of
the subset (nothing written). The additive estimate (the input's function sizes, off by a few
bytes of reflection padding) only proposes: each proposal is checked exactly before it is taken.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass
from typing import NamedTuple

from builder.errors import CheckFailed

__all__ = ["Candidate", "Plan", "PlannedFile", "Step", "plan_budget"]

DP_CELLS = 20_000_000
"""Largest files x kernels table the knapsack fills (MLX at a tight budget: 34 x 16,113)."""
DP_TRIES = 8
"""Knapsack answers checked exactly (the next one when an estimate was a few bytes short)."""
SWAP_SLACK = 64 * 1024
"""A swap whose estimated metallib is more than this over the budget is not checked exactly."""
SWAP_CHECKS = 400
"""Exact checks the swap search may spend in all; local optimality does not depend on swaps, so
the cap only bounds the time on very large trees."""


class Candidate(NamedTuple):
    """An entry file the planner may move to JIT."""

    source: str
    kernels: int
    """Library functions it produces: what moving it makes the app compile at run time."""
    bytes: int
    """Estimated metallib bytes moving it saves (its functions' bytes in the input)."""


class Step(NamedTuple):
    """An improvement over the starting answer, with exact metallib sizes."""

    action: str
    """``aot`` (moved back: not needed) or ``swap`` (``source`` JIT, ``swapped_for`` back)."""
    source: str
    kernels: int
    metallib_bytes: int
    """The metallib's size after the step."""
    swapped_for: str | None = None


class PlannedFile(NamedTuple):
    """A chosen JIT entry file: what it saves and why it cannot go back."""

    source: str
    kernels: int
    saved_bytes: int
    """Exact: the metallib were this file AOT again, minus the planned metallib."""
    back_bytes: int
    """Exact size of the metallib were this file AOT again: over the budget."""


@dataclass(frozen=True)
class Plan:
    budget: int
    all_aot_bytes: int
    least_bytes: int
    """The metallib with every movable entry file JIT: the smallest reachable."""
    jit: tuple[str, ...]
    metallib_bytes: int
    kernels: int
    embedded_bytes: int
    start: str
    """Which answer the improvement started from: ``greedy``, ``knapsack`` or ``all-aot``."""
    steps: tuple[Step, ...]
    files: tuple[PlannedFile, ...]
    exact_layouts: int
    """Exact sizes computed (each a layout of the subset)."""
    budget_of: str = "metallib"
    """What the sizes are: ``metallib`` bytes (exact), or ``download`` (estimates from the
    input's download shares, the total measured; ``builder.subsets.variant_download``)."""


class _Sizes:
    """Exact sizes by layout (cached) and additive estimates."""

    def __init__(self, size_of: Callable[[frozenset[str]], int], by_source: dict[str, Candidate]):
        self._size_of = size_of
        self._cache: dict[frozenset[str], int] = {}
        self._by_source = by_source
        self.full = self.exact(frozenset())

    def exact(self, jit: Iterable[str]) -> int:
        key = frozenset(jit)
        if key not in self._cache:
            self._cache[key] = self._size_of(key)
        return self._cache[key]

    def estimate(self, jit: Iterable[str]) -> int:
        return self.full - sum(self._by_source[s].bytes for s in jit)

    @property
    def layouts(self) -> int:
        return len(self._cache)


def plan_budget(
    candidates: Sequence[Candidate],
    budget: int,
    *,
    size_of: Callable[[frozenset[str]], int],
    embedded_of: Callable[[frozenset[str]], int],
    fixed: str = "the entry files that must stay AOT",
    measure: str = "metallib size",
) -> Plan:
    """The JIT entry files (among ``candidates``) for a metallib of at most ``budget`` bytes.

    ``size_of(jit)`` is the exact metallib size with ``jit`` JIT; ``embedded_of(jit)`` the embedded
    source bytes they need (ties). ``CheckFailed`` (exit 1) when even every candidate JIT does not
    fit: the message states the least reachable size and what it is made of (``fixed``).
    """
    usable = [c for c in candidates if c.kernels > 0]
    by_source = {c.source: c for c in usable}
    sizes = _Sizes(size_of, by_source)
    least = sizes.exact(by_source)
    if least > budget:
        raise CheckFailed(
            f"--budget {budget:,} bytes is below the least reachable {measure}, {least:,} "
            f"bytes (every movable entry file JIT; what remains is {fixed})"
        )
    start = "all-aot"
    jit: set[str] = set()
    if sizes.full > budget:
        single = {c.source: embedded_of(frozenset([c.source])) for c in usable}
        greedy = _greedy(usable, budget, sizes, single)

        def cost(answer: frozenset[str]) -> tuple[int, int]:
            return sum(by_source[s].kernels for s in answer), embedded_of(answer)

        start, chosen = "greedy", greedy
        knapsack = _knapsack(usable, budget, sizes, cost(greedy)[0])
        if knapsack is not None and cost(knapsack) < cost(greedy):
            start, chosen = "knapsack", knapsack
        jit = set(chosen)
    steps: list[Step] = []
    files = _improve(jit, steps, budget, sizes, by_source, embedded_of)
    chosen = frozenset(jit)
    return Plan(
        budget=budget,
        all_aot_bytes=sizes.full,
        least_bytes=least,
        jit=tuple(c.source for c in candidates if c.source in chosen),
        metallib_bytes=sizes.exact(chosen),
        kernels=sum(by_source[s].kernels for s in chosen),
        embedded_bytes=embedded_of(chosen),
        start=start,
        steps=tuple(steps),
        files=tuple(files),
        exact_layouts=sizes.layouts,
    )


def _greedy(
    usable: list[Candidate], budget: int, sizes: _Sizes, single: dict[str, int]
) -> frozenset[str]:
    """Most bytes saved per run-time kernel first, until the exact size fits (least <= budget,
    so it does at the latest with every file)."""
    jit: list[str] = []
    for c in sorted(usable, key=lambda c: (-c.bytes / c.kernels, single[c.source], c.source)):
        jit.append(c.source)
        if sizes.estimate(jit) <= budget and sizes.exact(jit) <= budget:
            break
    return frozenset(jit)


def _knapsack(
    usable: list[Candidate], budget: int, sizes: _Sizes, limit: int
) -> frozenset[str] | None:
    """The fewest run-time kernels (at most ``limit``) whose estimated saving brings the metallib
    within the budget, checked exactly (up to ``DP_TRIES`` answers); None if none is found."""
    if len(usable) * (limit + 1) > DP_CELLS:
        return None
    need = sizes.full - budget
    best = [-1] * (limit + 1)  # most bytes saved with exactly c kernels (-1: impossible)
    best[0] = 0
    took: list[bytearray] = []
    for item in usable:
        k, saved = item.kernels, item.bytes
        row = bytearray(limit + 1)
        for c in range(limit, k - 1, -1):
            prior = best[c - k]
            if prior >= 0 and prior + saved > best[c]:
                best[c] = prior + saved
                row[c] = 1
        took.append(row)
    tries = 0
    for count in range(limit + 1):
        if best[count] < need:
            continue
        chosen, c = [], count
        for item, row in zip(reversed(usable), reversed(took)):
            if row[c]:
                chosen.append(item.source)
                c -= item.kernels
        if sizes.exact(chosen) <= budget:
            return frozenset(chosen)
        tries += 1
        if tries >= DP_TRIES:
            return None
    return None


def _improve(
    jit: set[str],
    steps: list[Step],
    budget: int,
    sizes: _Sizes,
    by_source: dict[str, Candidate],
    embedded_of: Callable[[frozenset[str]], int],
) -> list[PlannedFile]:
    """Drop and swap until neither changes ``jit`` (in place); returns each remaining JIT file
    with the exact size were it AOT again (all over the budget: local optimality)."""
    remaining = [SWAP_CHECKS]
    while True:
        files = _drop_pass(jit, steps, budget, sizes, by_source)
        if not _swap(jit, steps, budget, sizes, by_source, embedded_of, remaining):
            return files


def _drop_pass(
    jit: set[str], steps: list[Step], budget: int, sizes: _Sizes, by_source: dict[str, Candidate]
) -> list[PlannedFile]:
    """Move back every JIT file whose return fits (most kernels first); repeat until a whole pass
    moves none, and return that pass's exact sizes."""
    while True:
        files: list[PlannedFile] = []
        moved = False
        for source in sorted(jit, key=lambda s: (-by_source[s].kernels, s)):
            back = sizes.exact(jit - {source})
            if back <= budget:
                jit.discard(source)
                steps.append(Step("aot", source, by_source[source].kernels, back))
                moved = True
            else:
                now = sizes.exact(jit)
                files.append(PlannedFile(source, by_source[source].kernels, back - now, back))
        if not moved:
            return files


def _swap(
    jit: set[str],
    steps: list[Step],
    budget: int,
    sizes: _Sizes,
    by_source: dict[str, Candidate],
    embedded_of: Callable[[frozenset[str]], int],
    remaining: list[int],
) -> bool:
    """Make the first swap (a JIT file back, an AOT file in) that fits and lowers the run-time
    kernels, or keeps them and lowers the embedded bytes; largest kernel reduction tried first."""
    current = frozenset(jit)
    embedded: int | None = None
    pairs = [
        (out, into)
        for out in current
        for into in by_source
        if into not in current and by_source[into].kernels <= by_source[out].kernels
    ]
    pairs.sort(key=lambda p: (by_source[p[1]].kernels - by_source[p[0]].kernels, p))
    for out, into in pairs:
        trial = (current - {out}) | {into}
        if sizes.estimate(trial) > budget + SWAP_SLACK:
            continue
        if by_source[into].kernels == by_source[out].kernels:
            embedded = embedded_of(current) if embedded is None else embedded
            if embedded_of(trial) >= embedded:
                continue
        if remaining[0] <= 0:
            return False
        remaining[0] -= 1
        after = sizes.exact(trial)
        if after > budget:
            continue
        jit.discard(out)
        jit.add(into)
        steps.append(Step("swap", into, by_source[into].kernels, after, out))
        return True
    return False
