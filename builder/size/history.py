"""Size across releases: one point per target, in the order given (``history``).

A maintainer before a release wants the trend, not one diff: total bytes, the biggest groups and,
with ``download``, what users download, for (say) every mlx-metal from 0.28.0 to 0.32.4 on one
platform. Each point is measured like ``report`` measures (``builder.size.load``), then reduced to
numbers, so many large libraries never sit in memory together. Pure data: rendering is
``builder.render.history``.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING

from builder.size.rollup import Rollup, fold

if TYPE_CHECKING:
    from builder.inputs.targets import Progress
    from builder.size.grouping import Sources
    from builder.size.load import TreeSources
    from builder.size.report import Report

__all__ = ["HistoryPoint", "measure_history", "top_groups"]


@dataclass(frozen=True)
class HistoryPoint:
    """One target's measured sizes, summed over the libraries it holds."""

    target: str
    bytes: int
    """The metallib files' sizes."""
    function_count: int
    groups: list[Rollup]
    """Every group, summed over the libraries, largest first (ties by name)."""
    measured_in: tuple[str, ...]
    """The metallib files (or saved reports) measured."""
    download_bytes: int | None = None
    """With ``download``: ``builder.size.budget.download_bytes`` of each library, summed."""
    host_library_bytes: int | None = None
    """A build's JIT host library, when it has one."""


def measure_history(
    targets: Sequence[str],
    *,
    by: str = "kernel",
    platform: str | None = None,
    download: bool = False,
    sources: Sources | TreeSources | None = None,
    progress: Progress | None = None,
) -> list[HistoryPoint]:
    """Measure each target in turn (``PACKAGE==VERSION`` wheels are downloaded and cached);
    ``sources``, a kernel tree's entry file of each kernel, groups every target ``by`` source."""
    from builder.size.budget import download_bytes
    from builder.size.load import load_reports

    points = []
    for target in targets:
        reports = load_reports(target, by=by, platform=platform, sources=sources, progress=progress)
        groups: dict[str, Rollup] = {}
        for report in reports:
            for group in report.groups:
                seen = groups.get(group.name)
                groups[group.name] = group if seen is None else fold(group.name, [seen, group])
        hosts = [r.host_library.file_size for r in reports if r.host_library is not None]
        points.append(
            HistoryPoint(
                target=target,
                bytes=sum(r.file_size for r in reports),
                function_count=sum(r.function_count for r in reports),
                groups=sorted(groups.values(), key=lambda g: (-g.bytes, g.name)),
                measured_in=tuple(
                    f"saved report {r.source.target}"
                    if r.source.kind == "report"
                    else _measured_in(r)
                    for r in reports
                ),
                download_bytes=sum(map(download_bytes, reports)) if download else None,
                host_library_bytes=sum(hosts) if hosts else None,
            )
        )
    return points


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
