"""``--ceiling``: choose the entry files to compile at run time so that a variant fits, by one
measure: its metallib's bytes (``--ceiling-of metallib``, exact) or its download
(``--ceiling-of download``: the metallib as a wheel stores it plus the embedded source compressed).

The goal, in order: the measure is at most the ceiling; as little as possible is compiled at run
time, by a measured proxy of what run-time compilation costs (``Candidate.cost``: the source bytes
each JIT entry file's first use compiles, its preambles plus its instantiation lines,
``builder.subsets.split_costs``; 0 for every file: the kernel count alone); then as few kernels
(the JIT entry files' functions that the library has); then as few embedded source bytes. Moving
a file to JIT saves about its functions' bytes, so this is a 0/1 knapsack: cover "bytes over the
ceiling" at the least cost. Entry files are few (MLX has 34), so the planner

1. starts from the better (lower cost, then fewer kernels, then fewer embedded bytes) of two
   answers:
   - **greedy**: files in order of bytes saved per unit of cost (ties: fewer embedded bytes,
     then name), until the variant fits;
   - **knapsack**: a dynamic programme over the cost (in units of at most ``DP_COLUMNS`` steps
     up to the greedy answer's, each file's cost rounded up: the proxy's bytes are large) that
     finds the least cost whose estimated saving covers the excess; skipped when files x steps
     exceeds ``DP_CELLS``;
2. improves it until nothing changes: moves back to AOT every JIT file whose return still fits
   (costliest first), and swaps a JIT file for an AOT one that costs less (or as much and fewer
   kernels, or as many and fewer embedded bytes) when the swap still fits.

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

from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass
from typing import NamedTuple

from builder.errors import CheckFailed
from builder.files.dataclass_json import field

__all__ = ["ROUNDS", "Candidate", "Plan", "PlannedFile", "Step", "plan_ceiling"]

DP_CELLS = 20_000_000
"""Largest files x steps table the knapsack fills (MLX at a tight ceiling, by kernels alone:
34 x 16,113)."""
DP_COLUMNS = 65_536
"""Most steps of the knapsack's cost axis: a proxy cost in bytes is counted in units of
``ceil(limit / DP_COLUMNS)`` bytes (each file's cost rounded up), a count of kernels as it is."""
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
    cost: int = 0
    """What compiling it at run time costs, by the measured proxy (source bytes its first use
    compiles, ``builder.subsets.split_costs``); 0 when not measured (the kernels decide)."""


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
    first_use_bytes: int = field(key="first_use_source_bytes_proxy", default=0)
    """Its :attr:`Candidate.cost`: the proxy of what its compile at first use reads."""


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
    first_use_bytes: int = field(key="first_use_source_bytes_proxy", default=0)
    """The objective's proxy of what run-time compilation costs, summed over the JIT entry
    files: the source bytes each one's first use compiles (its preambles, its instantiation
    lines), ``builder.subsets.split_costs``."""
    ceiling_of: str = "metallib"
    """What the sizes are: ``metallib`` bytes (exact), or ``download`` (estimates from the
    input's download shares, the total measured: ``DownloadMeasure``)."""
    start: str = "all-aot"
    """Which answer the improvement started from: ``greedy``, ``knapsack`` or ``all-aot``."""
    steps: tuple[Step, ...] = ()
    files: tuple[PlannedFile, ...] = ()
    kept_aot: tuple[str, ...] = field(key="keep_aot", default=())
    """Entry files ``--keep-aot`` / ``[build] keep-aot`` pinned AOT (never candidates)."""
    exact_layouts: int = 0
    """Exact sizes computed (each a layout of the subset)."""
    jit: tuple[str, ...] = field(default=(), omit="always")
    """The JIT entry files, in candidate order (the variant's own)."""
    embedded_bytes: int = field(default=0, omit="always")


class _Search:
    """One search for a ceiling: exact sizes by ``size_of`` (cached), additive estimates, and the
    steps taken so far. ``weight`` is what the objective counts first: the proxy cost when any
    candidate has one, else the kernels."""

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
        by_cost = any(c.cost for c in usable)
        self.weight = {c.source: c.cost if by_cost else c.kernels for c in usable}
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

    def cost(self, jit: Iterable[str]) -> int:
        """The proxy cost of ``jit`` (0 when not measured)."""
        return sum(self.by_source[s].cost for s in jit)

    def rank(self, jit: frozenset[str]) -> tuple[int, int, int]:
        """The objective, lower is better: cost (or kernels), kernels, embedded bytes."""
        return sum(self.weight[s] for s in jit), self.kernels(jit), self.embedded_of(jit)

    def start(self) -> tuple[str, set[str]]:
        """The better of the greedy and the knapsack answers (``all-aot`` when all fits)."""
        if self.full <= self.ceiling:
            return "all-aot", set()
        single = {c.source: self.embedded_of(frozenset([c.source])) for c in self.usable}
        greedy = self._greedy(single)
        knapsack = self._knapsack(sum(self.weight[s] for s in greedy))
        if knapsack is not None and self.rank(knapsack) < self.rank(greedy):
            return "knapsack", set(knapsack)
        return "greedy", set(greedy)

    def _greedy(self, single: dict[str, int]) -> frozenset[str]:
        """Most bytes saved per unit of weight first, until the exact size fits (least <=
        ceiling, so it does at the latest with every file)."""
        jit: list[str] = []
        weight = self.weight
        for c in sorted(
            self.usable,
            key=lambda c: (-c.bytes / max(weight[c.source], 1), single[c.source], c.source),
        ):
            jit.append(c.source)
            if self.estimate(jit) <= self.ceiling and self.exact(jit) <= self.ceiling:
                break
        return frozenset(jit)

    def _knapsack(self, limit: int) -> frozenset[str] | None:
        """The least weight (at most ``limit``, in steps of ``unit``) whose estimated saving
        brings the variant within the ceiling, checked exactly (up to ``DP_TRIES`` answers);
        None if none is found."""
        unit = max(1, -(-limit // DP_COLUMNS))
        steps = limit // unit + 1
        if len(self.usable) * (steps + 1) > DP_CELLS:
            return None
        need = self.full - self.ceiling
        best = [-1] * (steps + 1)  # most bytes saved with exactly c steps (-1: impossible)
        best[0] = 0
        took: list[bytearray] = []
        sizes = [max(1, -(-self.weight[item.source] // unit)) for item in self.usable]
        for item, k in zip(self.usable, sizes):
            saved = item.bytes
            row = bytearray(steps + 1)
            for c in range(steps, k - 1, -1):
                prior = best[c - k]
                if prior >= 0 and prior + saved > best[c]:
                    best[c] = prior + saved
                    row[c] = 1
            took.append(row)
        tries = 0
        for count in range(steps + 1):
            if best[count] < need:
                continue
            chosen, c = [], count
            for item, k, row in zip(reversed(self.usable), reversed(sizes), reversed(took)):
                if row[c]:
                    chosen.append(item.source)
                    c -= k
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
        """Move back every JIT file whose return fits (heaviest first); repeat until a whole
        pass moves none, and return that pass's exact sizes."""
        by_source, weight = self.by_source, self.weight
        while True:
            files: list[PlannedFile] = []
            moved = False
            for source in sorted(jit, key=lambda s: (-weight[s], -by_source[s].kernels, s)):
                back = self.exact(jit - {source})
                if back <= self.ceiling:
                    jit.discard(source)
                    self.steps.append(Step("aot", source, by_source[source].kernels, back))
                    moved = True
                else:
                    now = self.exact(jit)
                    c = by_source[source]
                    files.append(PlannedFile(source, c.kernels, back - now, back, c.cost))
            if not moved:
                return files

    def _swap(self, jit: set[str]) -> bool:
        """Make the first swap (a JIT file back, an AOT file in) that fits and lowers the
        objective (:meth:`rank`); largest weight reduction tried first."""
        by_source, weight = self.by_source, self.weight
        current = frozenset(jit)
        rank: tuple[int, int, int] | None = None
        pairs = [
            (out, into)
            for out in current
            for into in by_source
            if into not in current and weight[into] <= weight[out]
        ]
        pairs.sort(key=lambda p: (weight[p[1]] - weight[p[0]], p))
        for out, into in pairs:
            trial = (current - {out}) | {into}
            if self.estimate(trial) > self.ceiling + SWAP_SLACK:
                continue
            if weight[into] == weight[out]:
                rank = self.rank(current) if rank is None else rank
                if self.rank(trial) >= rank:
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
        first_use_bytes=search.cost(chosen),
        embedded_bytes=embedded_of(chosen),
        start=start,
        steps=tuple(search.steps),
        files=tuple(files),
        exact_layouts=search.layouts,
    )
