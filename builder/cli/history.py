"""The ``history`` command: a library's size over releases or builds, measured as ``report``
measures each target (``builder.size.history``).
"""

from __future__ import annotations

from functools import partial
from typing import TYPE_CHECKING

import click

from builder.cli.loading import warn
from builder.cli.publishing import deliver, output_options, output_plan, say
from builder.cli.tree_options import option, tree_options, tree_sources
from builder.size.grouping import BY_CHOICES

if TYPE_CHECKING:
    from builder.cli.tree_options import TreeOptions

__all__ = ["history_command"]


@click.command("history")
@click.argument("targets", nargs=-1, required=True)
@click.option(
    "--by",
    type=click.Choice(BY_CHOICES),
    default="kernel",
    show_default=True,
    help="What the groups are; source: each function's entry file, from a build folder's "
    "manifest or from the kernel tree given with --source-dir.",
)
@click.option(
    "--top",
    type=click.IntRange(min=0),
    default=5,
    show_default=True,
    help="Groups shown per target, the largest at any point, and per step from one target "
    "to the next, those that moved most (0 = all).",
)
@option("download")
@option("member")
@output_options(
    ("table", "json", "html", "markdown", "csv"),
    "Output format (html: a self-contained page with line charts).",
)
@option("platform")
@tree_options()
def history_command(
    targets: tuple[str, ...],
    by: str,
    top: int,
    download: bool,
    member: str | None,
    fmt: str,
    outputs: tuple[str, ...],
    platform: str | None,
    tree: TreeOptions,
) -> None:
    """Show how a library's size changed over releases or builds, in the order given.

    Each TARGET is measured as 'report' measures it: total size, functions, the largest groups
    and, with --download, the download size. JSON has one entry in "points" per target
    ("target", "bytes", "groups"), and in "steps" the groups that moved most from each target
    to the next (a table after the history: growth outside the largest groups shows); the
    HTML page draws the points as line charts without scripts or network. Targets that hold
    several libraries (a binary or wheel) have a history per library, paired by its name
    (JSON: "libraries", each with its "points"), never their sum; --member shows one. With
    --source-dir (and -I, -D, --exclude, --config as for 'report'), the groups are the entry
    files of that kernel tree, for every target: releases built from one tree compare by file.

    \b
    Examples:
      metallib-builder history mlx-metal==0.30.0 mlx-metal==0.31.0 mlx-metal==0.32.4
      metallib-builder history mlx-metal=={0.28.0,0.29.0,0.30.0,0.31.0,0.32.4} -o history.html
      metallib-builder history reports/*.json --format json --download
      metallib-builder history torch==2.13.0 torch==2.14.1 --member '#2'
      metallib-builder history mlx-metal==0.32.0 mlx-metal==0.32.1 \\
          --source-dir mlx/backend/metal/kernels -I . --exclude fence.metal --exclude '*_nax*'
    """
    from builder.publish.outputs import history_output
    from builder.size.history import library_histories, measure_history

    plan = output_plan(outputs, fmt)
    by, sources = tree_sources(by, tree)
    points = measure_history(
        targets,
        by=by,
        platform=platform,
        download=download,
        sources=sources,
        progress=say,
        member=member,
    )
    for point in points:
        warn(point.label, point.warnings)
    deliver(plan, partial(history_output, library_histories(points, top or None), by))
