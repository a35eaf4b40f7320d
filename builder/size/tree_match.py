"""How a library matches the kernel tree given with ``--source-dir``, said in the report itself.

A tree that is not the library's (another release, other ``-D`` or ``--exclude``, another
platform's ``[kernels.requires]``) still groups the library without error: its functions that no
entry file produces land in 'other', and the tree's kernels the library lacks go unseen. Both
are measured here, where the library is grouped with the tree's ``Sources``
(``builder.size.load``): ``Report.tree_kernels_missing`` (the kernels, sorted) and one
``Report.warnings`` sentence for each mismatch, so that the terminal (stderr), the tables, the
markdown, the PR comment and JSON all say the same. A shipped host library's run-time sources
that no header of the tree made are a warning too.

``unattributed`` is the 'other' group of a report grouped by source: the bytes that
``--max-unattributed`` and the budget key ``max-unattributed`` limit.
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from dataclasses import replace
from typing import TYPE_CHECKING

from builder.size.grouping import OTHER

if TYPE_CHECKING:
    from builder.size.grouping import Sources
    from builder.size.report import Report
    from builder.size.rollup import Rollup

__all__ = ["DISCOVERY", "OTHER", "SHOWN_NAMES", "named_few", "tree_facts", "unattributed"]

DISCOVERY = "discovery:"
"""``Sources.origin`` of a kernel tree (``discovery:<tree>``); a build manifest's is
``manifest``."""
SHOWN_NAMES = 5
"""Names a sentence lists before ``...``: JSON carries them all."""


def named_few(names: Sequence[str], shown: int = SHOWN_NAMES) -> str:
    """The first ``shown`` of ``names``, comma-separated, ``...`` when there are more."""
    return ", ".join(names[:shown]) + (", ..." if len(names) > shown else "")


def tree_facts(
    report: Report,
    sources: Sources | None,
    *,
    kernels: bool = True,
    run_time: Iterable[str] = (),
) -> Report:
    """``report`` with what its tree says of it, when ``sources`` is a kernel tree's (any other
    grouping: ``report`` itself): the tree's kernels it lacks (``kernels``; False for a host
    library, which holds no metallib) and a warning for each mismatch. ``run_time``: the kernels
    a build compiles at run time (its JIT units'), which the library holds in its host library
    instead of its metallib."""
    if sources is None or not sources.origin.startswith(DISCOVERY):
        return report
    tree = sources.origin.removeprefix(DISCOVERY)
    said: list[str] = []
    missing = None
    if kernels:
        of = sources.of
        held = {f.name for f in report.functions}.union(run_time)
        missing = sorted(name for name in of if name not in held)
        outside = [f for f in report.functions if f.name not in of]
        if outside:
            size = sum(f.bytes for f in outside)
            said.append(
                f"{len(outside):,} of {report.function_count:,} functions ({size:,} bytes) are "
                f"produced by no entry file of {tree} and land in '{OTHER}': does the tree "
                "match the library (release, -D, --exclude, [kernels.requires])?"
            )
        if missing:
            said.append(
                f"{len(missing):,} of the {len(of):,} kernels of {tree} for the library's "
                f"platform are not in the library: {named_few(missing)} (another release, or "
                "entry files its platform's build leaves out: [kernels.requires] in "
                "metallib.toml?)"
            )
    said += _unmatched(report, tree)
    warnings = [*report.warnings, *(w for w in said if w not in report.warnings)]
    return replace(report, tree_kernels_missing=missing, warnings=warnings)


def _unmatched(report: Report, tree: str) -> list[str]:
    """The run-time sources of a shipped host library that no header of ``tree`` made (another
    release of the tree, or not its sources at all), as for a library's functions."""
    host = report.host_library
    if host is None or not host.unmatched:
        return []
    rows = [j for j in report.jit_units if j.name in host.unmatched]
    size = sum(j.host_bytes or 0 for j in rows)
    said = (
        f"{len(rows):,} of {len(report.jit_units):,} run-time sources ({size:,} bytes) are "
        f"made from no header of {tree}: {named_few([j.name for j in rows])}"
    )
    return [said]


def unattributed(report: Report) -> Rollup | None:
    """The bytes of ``report`` attributed to no entry file: its 'other' group when it is grouped
    by source (a kernel tree's or a build manifest's; an empty rollup when every function has
    its entry file); None when it is grouped otherwise, which cannot say."""
    from builder.size.rollup import Rollup

    if report.keys[0] != "source":
        return None
    found = next((g for g in report.groups if g.name == OTHER and not g.overhead), None)
    return found if found is not None else Rollup(OTHER, 0, 0, 0)
