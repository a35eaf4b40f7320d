"""``--ceiling``: choose the entry files to compile at run time so that a variant fits, by one
measure: its metallib's bytes (``--ceiling-of metallib``, exact) or its download
(``--ceiling-of download``: the metallib as a wheel stores it plus the embedded source compressed).

The goal, in order: the measure is at most the ceiling; as few kernels as possible are compiled
at run time (the JIT entry files' functions that the library has); then as few embedded source
bytes as possible. Moving a file to JIT saves about its functions' bytes, so this is a 0/1
knapsack: cover "bytes over the ceiling" with the fewest kernels. Entry files are few (MLX has 34),
so the planner

1. starts from the better (fewer kernels, then fewer embedded bytes) of two answers:
   - **greedy**: files in order of bytes saved per run-time kernel (ties: fewer embedded bytes,
     then name), until the variant fits;
   - **knapsack**: a dynamic programme over the run-time kernel count (up to the greedy answer's)
     that finds the fewest kernels whose estimated saving covers the excess; skipped when files x
     kernels exceeds ``DP_CELLS``;
2. improves it until nothing changes: moves back to AOT every JIT file whose return still fits
   (most kernels first), and swaps a JIT file for an AOT one that costs fewer run-time kernels (or
   as many and fewer embedded bytes) when the swap still fits.

The result is locally optimal: no JIT entry file can go back to AOT within the ceiling, shown by
a size for each. The additive estimate (the input's function sizes, off by a few bytes of
reflection padding) only proposes: each proposal is checked by the measure's ``size_of``
before it is taken.

The two measures (``builder.subsets.variant_library``'s ``MetallibMeasure`` and
``DownloadMeasure``):

* metallib: ``size_of`` is the writer's own layout of the subset (nothing written), exact;
* download: compressing every candidate split would take seconds, so ``size_of`` is an estimate
  built from measured figures: the input's modelled download minus the download shares of the
  functions the split removes (built to predict removals: docs/download-size.md measures it
  within 0.1% for MLX's kernel groups), plus what its JIT entry files' preambles store as the
  tree's API stores them, compressed together (ordered by key, so it is a function of the set).
  The plan is then measured on the real thing (the planned metallib written to a temporary file
  and modelled, its JIT source compressed); if that is over the ceiling the planner runs again
  with the ceiling lowered by the overshoot (``ROUNDS`` at most), so the planned variant's
  measured download is within the ceiling or the run fails (exit 1).
"""

from __future__ import annotations

import dataclasses
from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING, NamedTuple

from builder.errors import CheckFailed
from builder.files.dataclass_json import field

if TYPE_CHECKING:
    from builder.subsets.coverage import EmbedCosts
    from builder.subsets.variant_library import DownloadMeasure, LibraryIndex, MetallibMeasure

__all__ = ["Candidate", "Plan", "PlannedFile", "Step", "plan_ceiling", "plan_variant"]

DP_CELLS = 20_000_000
"""Largest files x kernels table the knapsack fills (MLX at a tight ceiling: 34 x 16,113)."""
DP_TRIES = 8
"""Knapsack answers checked exactly (the next one when an estimate was a few bytes short)."""
SWAP_SLACK = 64 * 1024
"""A swap whose estimated metallib is more than this over the ceiling is not checked exactly."""
SWAP_CHECKS = 400
"""Exact checks the swap search may spend in all; local optimality does not depend on swaps, so
that number only bounds the time on very large trees."""
ROUNDS = 4
"""Plans tried before giving up when each measured download is over the ceiling."""


class Candidate(NamedTuple):
    """An entry file the planner may move to JIT."""

    source: str
    kernels: int
    """Library functions it produces: what moving it makes the app compile at run time."""
    bytes: int
    """Estimated metallib bytes moving it saves (its functions' bytes in the input)."""


@dataclass(frozen=True)
class Step:
    """An improvement over the starting answer, with exact metallib sizes."""

    action: str
    """``aot`` (moved back: not needed) or ``swap`` (``source`` JIT, ``swapped_for`` back)."""
    source: str
    kernels: int
    metallib_bytes: int
    """The metallib's size after the step."""
    swapped_for: str | None = None


@dataclass(frozen=True)
class PlannedFile:
    """A chosen JIT entry file: what it saves and why it cannot go back."""

    source: str
    kernels: int
    saved_bytes: int
    """Exact: the metallib were this file AOT again, minus the planned metallib."""
    back_bytes: int = field(key="metallib_bytes_if_aot", default=0)
    """Exact size of the metallib were this file AOT again: over the ceiling."""


@dataclass(frozen=True)
class Plan:
    """The planner's answer (every field given; the defaults only let the JSON keys that differ
    from a field's name be declared), its fields in the order ``variants.json`` gives them."""

    ceiling: int
    all_aot_bytes: int
    least_bytes: int
    """The metallib with every movable entry file JIT: the smallest reachable."""
    metallib_bytes: int
    kernels: int = field(key="jit_kernels", default=0)
    ceiling_of: str = "metallib"
    """What the sizes are: ``metallib`` bytes (exact), or ``download`` (estimates from the
    input's download shares, the total measured: ``DownloadMeasure``)."""
    start: str = "all-aot"
    """Which answer the improvement started from: ``greedy``, ``knapsack`` or ``all-aot``."""
    steps: tuple[Step, ...] = ()
    files: tuple[PlannedFile, ...] = ()
    exact_layouts: int = 0
    """Exact sizes computed (each a layout of the subset)."""
    jit: tuple[str, ...] = field(default=(), omit="always")
    """The JIT entry files, in candidate order (the variant's own)."""
    embedded_bytes: int = field(default=0, omit="always")


class _Search:
    """One search for a ceiling: exact sizes by ``size_of`` (cached), additive estimates, and the
    steps taken so far."""

    def __init__(
        self,
        usable: list[Candidate],
        ceiling: int,
        size_of: Callable[[frozenset[str]], int],
        embedded_of: Callable[[frozenset[str]], int],
    ) -> None:
        self.usable = usable
        self.ceiling = ceiling
        self.by_source = {c.source: c for c in usable}
        self.embedded_of = embedded_of
        self.steps: list[Step] = []
        self._size_of = size_of
        self._cache: dict[frozenset[str], int] = {}
        self._swaps_left = SWAP_CHECKS
        self.full = self.exact(frozenset())

    def exact(self, jit: Iterable[str]) -> int:
        key = frozenset(jit)
        if key not in self._cache:
            self._cache[key] = self._size_of(key)
        return self._cache[key]

    def estimate(self, jit: Iterable[str]) -> int:
        return self.full - sum(self.by_source[s].bytes for s in jit)

    @property
    def layouts(self) -> int:
        """Exact sizes computed."""
        return len(self._cache)

    def kernels(self, jit: Iterable[str]) -> int:
        return sum(self.by_source[s].kernels for s in jit)

    def start(self) -> tuple[str, set[str]]:
        """The better of the greedy and the knapsack answers (``all-aot`` when all fits)."""
        if self.full <= self.ceiling:
            return "all-aot", set()
        single = {c.source: self.embedded_of(frozenset([c.source])) for c in self.usable}
        greedy = self._greedy(single)

        def cost(answer: frozenset[str]) -> tuple[int, int]:
            return self.kernels(answer), self.embedded_of(answer)

        knapsack = self._knapsack(cost(greedy)[0])
        if knapsack is not None and cost(knapsack) < cost(greedy):
            return "knapsack", set(knapsack)
        return "greedy", set(greedy)

    def _greedy(self, single: dict[str, int]) -> frozenset[str]:
        """Most bytes saved per run-time kernel first, until the exact size fits (least <=
        ceiling, so it does at the latest with every file)."""
        jit: list[str] = []
        for c in sorted(
            self.usable, key=lambda c: (-c.bytes / c.kernels, single[c.source], c.source)
        ):
            jit.append(c.source)
            if self.estimate(jit) <= self.ceiling and self.exact(jit) <= self.ceiling:
                break
        return frozenset(jit)

    def _knapsack(self, limit: int) -> frozenset[str] | None:
        """The fewest run-time kernels (at most ``limit``) whose estimated saving brings the
        variant within the ceiling, checked exactly (up to ``DP_TRIES`` answers); None if none is
        found."""
        if len(self.usable) * (limit + 1) > DP_CELLS:
            return None
        need = self.full - self.ceiling
        best = [-1] * (limit + 1)  # most bytes saved with exactly c kernels (-1: impossible)
        best[0] = 0
        took: list[bytearray] = []
        for item in self.usable:
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
            for item, row in zip(reversed(self.usable), reversed(took)):
                if row[c]:
                    chosen.append(item.source)
                    c -= item.kernels
            if self.exact(chosen) <= self.ceiling:
                return frozenset(chosen)
            tries += 1
            if tries >= DP_TRIES:
                return None
        return None

    def improve(self, jit: set[str]) -> list[PlannedFile]:
        """Drop and swap until neither changes ``jit`` (in place); returns each remaining JIT
        file with the exact size were it AOT again (all over the ceiling: local optimality)."""
        while True:
            files = self._drop_pass(jit)
            if not self._swap(jit):
                return files

    def _drop_pass(self, jit: set[str]) -> list[PlannedFile]:
        """Move back every JIT file whose return fits (most kernels first); repeat until a whole
        pass moves none, and return that pass's exact sizes."""
        by_source = self.by_source
        while True:
            files: list[PlannedFile] = []
            moved = False
            for source in sorted(jit, key=lambda s: (-by_source[s].kernels, s)):
                back = self.exact(jit - {source})
                if back <= self.ceiling:
                    jit.discard(source)
                    self.steps.append(Step("aot", source, by_source[source].kernels, back))
                    moved = True
                else:
                    now = self.exact(jit)
                    files.append(PlannedFile(source, by_source[source].kernels, back - now, back))
            if not moved:
                return files

    def _swap(self, jit: set[str]) -> bool:
        """Make the first swap (a JIT file back, an AOT file in) that fits and lowers the
        run-time kernels, or keeps them and lowers the embedded bytes; largest kernel reduction
        tried first."""
        by_source = self.by_source
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
            if self.estimate(trial) > self.ceiling + SWAP_SLACK:
                continue
            if by_source[into].kernels == by_source[out].kernels:
                embedded = self.embedded_of(current) if embedded is None else embedded
                if self.embedded_of(trial) >= embedded:
                    continue
            if self._swaps_left <= 0:
                return False
            self._swaps_left -= 1
            after = self.exact(trial)
            if after > self.ceiling:
                continue
            jit.discard(out)
            jit.add(into)
            self.steps.append(Step("swap", into, by_source[into].kernels, after, out))
            return True
        return False


def plan_ceiling(
    candidates: Sequence[Candidate],
    ceiling: int,
    *,
    size_of: Callable[[frozenset[str]], int],
    embedded_of: Callable[[frozenset[str]], int],
    fixed: str = "the entry files that must stay AOT",
    measure: str = "metallib size",
) -> Plan:
    """The JIT entry files (among ``candidates``) for a variant of at most ``ceiling`` bytes.

    ``size_of(jit)`` is the variant's size with ``jit`` JIT; ``embedded_of(jit)`` the embedded
    source bytes they need (ties). ``CheckFailed`` (exit 1) when even every candidate JIT does not
    fit: the message states the least reachable size and what it is made of (``fixed``).
    """
    search = _Search([c for c in candidates if c.kernels > 0], ceiling, size_of, embedded_of)
    least = search.exact(search.by_source)
    if least > ceiling:
        raise CheckFailed(
            f"--ceiling {ceiling:,} bytes is below the least reachable {measure}, {least:,} "
            f"bytes (every movable entry file JIT; what remains is {fixed})"
        )
    start, jit = search.start()
    files = search.improve(jit)
    chosen = frozenset(jit)
    return Plan(
        ceiling=ceiling,
        all_aot_bytes=search.full,
        least_bytes=least,
        jit=tuple(c.source for c in candidates if c.source in chosen),
        metallib_bytes=search.exact(chosen),
        kernels=search.kernels(chosen),
        embedded_bytes=embedded_of(chosen),
        start=start,
        steps=tuple(search.steps),
        files=tuple(files),
        exact_layouts=search.layouts,
    )


def plan_variant(
    index: LibraryIndex,
    ceiling: int,
    measure: MetallibMeasure | DownloadMeasure,
    *,
    embedded_of: EmbedCosts,
    fixed: str,
) -> Plan:
    """The planner over ``index``'s movable entry files by ``measure``, its answer measured: when
    the measure is an estimate and the measured figure is over the ceiling, planned again with the
    ceiling lowered by the overshoot (``ROUNDS`` at most; ``CheckFailed`` then)."""
    candidates = [
        Candidate(s, len(e.functions), measure.saving(s))
        for s, e in index.entries.items()
        if not e.held
    ]
    target = ceiling
    for _ in range(ROUNDS):
        plan = plan_ceiling(
            candidates,
            target,
            size_of=measure.size_of,
            embedded_of=embedded_of,
            fixed=fixed,
            measure=measure.words,
        )
        measured = measure.measured(plan.jit, plan.metallib_bytes)
        if measured <= ceiling:
            return dataclasses.replace(
                plan, ceiling=ceiling, ceiling_of=measure.of, metallib_bytes=measured
            )
        target -= measured - ceiling
    raise CheckFailed(
        f"--ceiling {ceiling:,} bytes --ceiling-of {measure.of}: the planned split measured "
        f"{measured:,} bytes after {ROUNDS} rounds of planning on estimates"
    )
