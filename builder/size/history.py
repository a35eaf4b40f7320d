"""Size across releases: one point per library of each target, in the order given
(``history``).

A maintainer before a release wants the trend, not one diff: total bytes, the biggest groups and,
with ``download``, what users download, for (say) every mlx-metal from 0.28.0 to 0.32.4 on one
platform. Each point is measured like ``report`` measures (``builder.size.load``), then reduced to
numbers, so many large libraries never sit in memory together. A target holding several
libraries (torch's dylib holds two alternatives, of which a device loads one) gives a point per
library, never their sum: each library has its own history (``LibraryHistory``), its points
paired across targets by the library's name. Pure data: shown by
``builder.render.compare_tables`` (tables) and ``builder.render.html`` (the page).
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field
from itertools import pairwise
from typing import TYPE_CHECKING

from builder.size.change_summary import explain
from builder.size.rollup import Rollup, join

if TYPE_CHECKING:
    from builder.inputs.targets import Progress
    from builder.size.grouping import Sources
    from builder.size.load import TreeSources
    from builder.size.report import Report

__all__ = [
    "HistoryPoint",
    "LibraryHistory",
    "Step",
    "library_histories",
    "measure_history",
    "steps",
    "top_groups",
]


@dataclass(frozen=True)
class HistoryPoint:
    """One library of one target, measured."""

    target: str
    bytes: int
    """The metallib's size."""
    function_count: int
    groups: list[Rollup]
    """Every group, largest first (ties by name)."""
    measured_in: tuple[str, ...]
    """The metallib file (or saved report) measured."""
    download_bytes: int | None = None
    """With ``download``: ``builder.size.budget.download_bytes`` of the library."""
    host_library_bytes: int | None = None
    """A build's JIT host library, when it has one."""
    library: str | None = None
    """The library's name in the target (``report``'s ``source.member``); None: the target is
    the library itself."""
    label: str = ""
    """How stderr names the library (``Source.label``)."""
    warnings: tuple[str, ...] = ()
    """``Report.warnings``: a kernel tree that does not match the library, among others."""
    tree_kernels_missing: tuple[str, ...] | None = None
    """With a kernel tree: its kernels for the library's platform the library lacks."""


@dataclass(frozen=True)
class Step:
    """From one point of a library's history to the next: the groups that moved most, so that
    growth spread over many small groups is seen, not only the largest groups' sizes."""

    base: str
    """The earlier point's target."""
    head: str
    delta_bytes: int
    moves: list[Rollup]
    """Joined rows (``rollup.join``: head's measures, ``base_`` ones base's) by |delta|, the
    ``top`` that moved most; rolled up to label prefixes as ``compare`` rolls its rows
    (``change_summary.explain``) when those groups explain less than half of the step."""
    label_tokens: int | None
    """None: the groups as they are; else their labels' first ``label_tokens`` tokens."""
    explained: float
    """The share of the step's change (sum of |delta|) the moves explain."""


@dataclass(frozen=True)
class LibraryHistory:
    """One library's points, in the order of the targets that hold it, and the groups shown."""

    library: str | None
    """Its name, the same in every target; None when each target holds one library."""
    points: list[HistoryPoint]
    top: list[str]
    """The groups shown (``top_groups``)."""
    steps: list[Step] = field(default_factory=list)
    """From each point to the next, the groups that moved most (``steps``)."""


def measure_history(
    targets: Sequence[str],
    *,
    by: str = "kernel",
    platform: str | None = None,
    download: bool = False,
    sources: Sources | TreeSources | None = None,
    progress: Progress | None = None,
    member: str | None = None,
) -> list[HistoryPoint]:
    """Measure each target in turn (``PACKAGE==VERSION`` wheels are downloaded and cached), a
    point per library it holds (``member``: only the one it names); ``sources``, a kernel
    tree's entry file of each kernel, groups every target ``by`` source."""
    from builder.size.budget import download_bytes
    from builder.size.load import load_reports

    points = []
    for target in targets:
        reports = load_reports(
            target, by=by, platform=platform, sources=sources, progress=progress, member=member
        )
        for report in reports:
            host = report.host_library
            points.append(
                HistoryPoint(
                    target=target,
                    bytes=report.file_size,
                    function_count=report.function_count,
                    groups=sorted(report.groups, key=lambda g: (-g.bytes, g.name)),
                    measured_in=(
                        f"saved report {report.source.target}"
                        if report.source.kind == "report"
                        else _measured_in(report),
                    ),
                    download_bytes=download_bytes(report) if download else None,
                    host_library_bytes=host.file_size if host is not None else None,
                    library=report.source.member,
                    label=report.source.label,
                    warnings=tuple(report.warnings),
                    tree_kernels_missing=None
                    if report.tree_kernels_missing is None
                    else tuple(report.tree_kernels_missing),
                )
            )
    return points


def library_histories(points: Sequence[HistoryPoint], top: int | None) -> list[LibraryHistory]:
    """The points as one history per library: one when no target holds several (whatever
    each one's name), else one per library name, in the order first met, each point paired
    with the same name in the other targets (a library one target lacks has no point there).
    ``top`` groups of each (``top_groups``)."""
    per_target: dict[str, int] = {}
    for point in points:
        per_target[point.target] = per_target.get(point.target, 0) + 1
    if all(count == 1 for count in per_target.values()):
        return [LibraryHistory(None, list(points), top_groups(points, top), steps(points, top))]
    named: dict[str | None, list[HistoryPoint]] = {}
    for point in points:
        named.setdefault(point.library, []).append(point)
    return [
        LibraryHistory(name, ps, top_groups(ps, top), steps(ps, top)) for name, ps in named.items()
    ]


def steps(points: Sequence[HistoryPoint], top: int | None) -> list[Step]:
    """Each point against the one before: its ``top`` groups by |delta| (every group that
    moved for None), rolled up as ``compare``'s rows are."""
    found = []
    for a, b in pairwise(points):
        joined = join(a.groups, b.groups)
        shown = explain(joined, top)
        moves = [g for g in shown.groups if g.delta][:top]
        found.append(Step(a.target, b.target, b.bytes - a.bytes, moves, shown.tokens, shown.share))
    return found


def top_groups(points: Sequence[HistoryPoint], top: int | None) -> list[str]:
    """The ``top`` groups by their largest size at any point (so a group that grew, shrank or
    vanished is still shown), largest first; all of them for ``top`` None."""
    peak: dict[str, int] = {}
    for point in points:
        for group in point.groups:
            peak[group.name] = max(peak.get(group.name, 0), group.bytes)
    ranked = sorted(peak, key=lambda name: (-peak[name], name))
    return ranked if top is None else ranked[:top]


def _measured_in(report: Report) -> str:
    """The file measured; for a metallib inside a binary, the binary and its number there."""
    src = report.source
    if src.embedded is not None and src.path and src.member:
        return f"{src.path}#{src.member.rpartition('#')[2]}"
    return src.path or src.target
