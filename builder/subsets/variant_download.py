"""``--budget SIZE --budget-of download``: plan against what a variant costs to download.

A variant's download is its metallib as a wheel stores it (``builder.size.download``: zlib level
6) plus its embedded JIT source compressed (zlib level 9, ``builder.subsets.variant_sources``).
The planner (``builder.subsets.variant_plan``) needs the size of many candidate splits; compressing
each would take seconds, so it works on estimates built from measured figures:

* the metallib: the input's modelled download minus the download shares of the functions the
  split removes. The shares are built to predict removals (docs/download-size.md measures it:
  within 0.1% for MLX's kernel groups);
* the embedded source: what its JIT entry files' preambles store as the tree's API stores them
  (shared pieces once with ``string``, each function's text with ``cstring``), compressed
  together (ordered by key, so it is a function of the set).

The plan it returns is then checked on the real thing: the planned metallib is written to a
temporary file and modelled, and its JIT source compressed; if that total is over the budget the
planner runs again with the budget lowered by the overshoot (a few rounds at most), so the
planned variant's measured download is within the budget or the run fails (exit 1).
"""

from __future__ import annotations

import dataclasses
import tempfile
import zlib
from collections.abc import Callable, Iterable
from pathlib import Path
from typing import TYPE_CHECKING

from builder.errors import CheckFailed
from builder.subsets.variant_plan import Candidate, Plan, plan_budget
from builder.subsets.variant_sources import ZLIB_LEVEL, EmbedCosts

if TYPE_CHECKING:
    from builder.kernels.discovery import KernelTree
    from builder.metallib import Metallib
    from builder.subsets.variant_select import LibraryIndex

__all__ = ["ROUNDS", "DownloadEstimate", "plan_download", "variant_download"]

ROUNDS = 4
"""Plans tried before giving up when each measured total is over the budget."""


def variant_download(path: Path) -> int:
    """The modelled download of a written metallib (the total ``report --download`` gives)."""
    from builder.metallib import open_metallib
    from builder.size.attribution import attribute
    from builder.size.download import download_total

    with open_metallib(path) as lib:
        return download_total(lib, attribute(lib))


class DownloadEstimate:
    """Estimated download of a split: metallib (input's model minus removed shares) plus the
    embedded source compressed; cached per set of JIT entry files."""

    def __init__(self, lib: Metallib, index: LibraryIndex, tree: KernelTree) -> None:
        from builder.size.attribution import attribute
        from builder.size.download import download_share

        share = download_share(lib, attribute(lib))
        self.total = share.total
        self.index = index
        self.by_source = {
            s: sum(share.functions[i] for i in e.functions) for s, e in index.entries.items()
        }
        self._texts = EmbedCosts(tree)
        self._cache: dict[frozenset[str], int] = {}

    def embedded(self, jit: Iterable[str]) -> int:
        """What ``jit``'s source stores (``EmbedCosts``), by key order, as one zlib stream."""
        text = self._texts.joined(jit)
        return len(zlib.compress(text.encode("utf-8"), ZLIB_LEVEL)) if text else 0

    def __call__(self, jit: frozenset[str]) -> int:
        if jit not in self._cache:
            kept = self.index.kept(jit)
            metallib = self.total - sum(self.by_source[s] for s in jit) if kept else 0
            self._cache[jit] = metallib + self.embedded(jit)
        return self._cache[jit]


def plan_download(
    tree: KernelTree,
    index: LibraryIndex,
    lib: Metallib,
    budget: int,
    *,
    write: Callable[[list[int], Path], int],
    sources_compressed: Callable[[tuple[str, ...]], int],
    fixed: str,
) -> Plan:
    """The planner on download estimates, its answer checked by measuring the split (see the
    module docstring). ``write(kept, path)`` writes a subset; ``sources_compressed(jit)`` is the
    measured compressed size of the JIT source a variant would embed."""
    estimate = DownloadEstimate(lib, index, tree)
    candidates = [
        Candidate(s, len(e.functions), estimate.by_source[s])
        for s, e in index.entries.items()
        if not e.held
    ]
    target = budget
    with tempfile.TemporaryDirectory(prefix=".plan-", dir=None) as scratch:
        for _ in range(ROUNDS):
            plan = plan_budget(
                candidates,
                target,
                size_of=estimate,
                embedded_of=EmbedCosts(tree),
                fixed=fixed,
                measure="download (estimated)",
            )
            chosen = frozenset(plan.jit)
            kept = index.kept(chosen)
            metallib = 0
            if kept:
                path = Path(scratch) / "planned.metallib"
                write(kept, path)
                metallib = variant_download(path)
            measured = metallib + sources_compressed(plan.jit)
            if measured <= budget:
                return dataclasses.replace(
                    plan, budget=budget, budget_of="download", metallib_bytes=measured
                )
            target -= measured - budget
    raise CheckFailed(
        f"--budget {budget:,} bytes --budget-of download: the planned split measured "
        f"{measured:,} bytes after {ROUNDS} rounds of planning on estimates"
    )
