"""Loading the targets ``report`` and ``compare`` read: each as reports, with what the user
should know on stderr (the rules not used, the bytes no entry file of ``--source-dir`` makes),
and the check that no ``-o`` names one of the files read.
"""

from __future__ import annotations

import gc
from collections.abc import Iterator, Sequence
from contextlib import contextmanager
from typing import TYPE_CHECKING

import click

if TYPE_CHECKING:
    from builder.cli.tree_options import TreeOptions
    from builder.size.grouping import Sources
    from builder.size.load import TreeSources
    from builder.size.report import Report

__all__ = ["check_output", "load", "measured_files"]


def check_output(
    outputs: Sequence[str], targets: Sequence[str], rules: str | None, tree: TreeOptions
) -> None:
    """Exit 2 before any work when an ``-o`` names a file the command reads: a target given as
    a path, the rule file, the kernel tree's settings file
    (``builder.files.atomic.check_not_an_input``)."""
    from builder.files.atomic import check_not_an_input

    source_dir = tree.source_dir
    settings = [tree.config, source_dir / "metallib.toml" if source_dir else None]
    for output in outputs:
        check_not_an_input(output, [*targets, rules, *settings])


def measured_files(reports: Sequence[Report]) -> list[str | None]:
    """The files behind loaded reports (a build folder's metallib, manifest and host library, a
    wheel): what a target named by a folder or a wheel turned out to be."""
    files: list[str | None] = []
    for report in reports:
        source = report.source
        files += [source.path, source.manifest, source.wheel]
        if source.kind != "report" and report.host_library is not None:
            files.append(report.host_library.path)
    return files


def _progress(message: str) -> None:
    click.echo(message, err=True)


def load(
    target: str,
    by: str,
    rules_path: str | None,
    platform: str | None,
    sources: Sources | TreeSources | None = None,
    download: bool = False,
    member: str | None = None,
    absent_ok: bool = False,
) -> list[Report]:
    from builder.size.load import load_reports

    rules = None
    if rules_path is not None:
        from builder.size.grouping import load_rules

        rules = load_rules(rules_path)
    with _gc_paused():
        reports = load_reports(
            target,
            by=by,
            rules=rules,
            platform=platform,
            progress=_progress,
            sources=sources,
            download=download,
            member=member,
            absent_ok=absent_ok,
        )
    if rules is not None and any(r.grouping == "manifest" for r in reports):
        click.echo(
            f"note: {target}: kernel groups come from its build manifest; --rules "
            "is not used for it",
            err=True,
        )
    if sources is not None:
        _warn_unattributed(reports, sources.origin)
        _warn_unmatched(reports, sources.origin)
    return reports


def _warn_unmatched(reports: list[Report], origin: str) -> None:
    """Say on stderr which run-time sources of a shipped host library no header of the tree
    made (another release of the tree, or not its sources at all), as for a library's
    functions."""
    from builder.render.text import human_size, visible

    for report in reports:
        host = report.host_library
        if host is None or not host.unmatched:
            continue
        rows = [j for j in report.jit_units if j.name in host.unmatched]
        size = sum(j.host_bytes or 0 for j in rows)
        shown = ", ".join(visible(j.name) for j in rows[:5]) + (", ..." if len(rows) > 5 else "")
        click.echo(
            f"warning: {visible(report.source.label)}: {len(rows):,} of "
            f"{len(report.jit_units):,} run-time sources ({human_size(size)}, {size:,} bytes) "
            f"are made from no header of {visible(origin.partition(':')[2])}: {shown}",
            err=True,
        )


def _warn_unattributed(reports: list[Report], origin: str) -> None:
    """Say on stderr how much of a library no entry file of ``--source-dir`` produces: a tree
    that does not match the library (another release, other -D or --exclude) leaves it in
    'other', which a table alone would not show as a mismatch."""
    from builder.render.text import human_size, visible
    from builder.size.grouping import OTHER

    for report in reports:
        if report.grouping != origin:
            continue  # grouped by its manifest or a saved report, not by the tree
        row = next((g for g in report.groups if g.name == OTHER), None)
        if row is not None and row.function_count:
            click.echo(
                f"warning: {visible(report.source.label)}: {row.function_count:,} of "
                f"{report.function_count:,} functions ({human_size(row.bytes)}, {row.bytes:,} "
                f"bytes) are produced by no entry file of {visible(origin.partition(':')[2])} "
                f"and land in '{OTHER}': does the tree match the library (release, -D, "
                "--exclude, [kernels.requires])?",
                err=True,
            )


@contextmanager
def _gc_paused() -> Iterator[None]:
    """Measuring a library allocates ~100k small objects and no reference cycles; pausing the
    cyclic collector meanwhile saves its repeated scans (about 5 % of a report's run time)."""
    enabled = gc.isenabled()
    gc.disable()
    try:
        yield
    finally:
        if enabled:
            gc.enable()
