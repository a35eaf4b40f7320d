"""``history``: size across releases or builds, as a table, JSON, markdown, CSV or an HTML line
chart."""

from __future__ import annotations

from typing import TYPE_CHECKING

import click

from builder.cli.publishing import output_options
from builder.cli.tree_options import option, tree_options
from builder.size.grouping import BY_CHOICES

if TYPE_CHECKING:
    from builder.cli.tree_options import TreeOptions

__all__ = ["history_command"]

_FORMATS = ("table", "json", "html", "markdown", "csv")


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
    help="Groups shown per target, the largest at any point (0 = all).",
)
@option("download")
@option("member")
@output_options(_FORMATS, "Output format (html: a self-contained page with line charts).")
@option("platform")
@tree_options
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

    Each TARGET is measured as 'report' measures it (a .metallib, .whl, PACKAGE==VERSION, saved
    report .json or build folder): total size, functions, the largest groups and, with
    --download, the download size. JSON has one entry in "points" per target ("target", "bytes",
    "groups"); the HTML page draws them as line charts without scripts or network. Targets that
    hold several libraries (a binary or wheel) have a history per library, paired by its name
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
    from builder.cli.publishing import output_plan, terminal
    from builder.cli.tree_options import tree_sources
    from builder.publish.outputs import history_output, write_outputs
    from builder.size.history import library_histories, measure_history

    plan = output_plan(outputs, fmt, _FORMATS)
    by, sources = tree_sources(by, tree)
    points = measure_history(
        targets,
        by=by,
        platform=platform,
        download=download,
        sources=sources,
        progress=lambda line: click.echo(line, err=True),
        member=member,
    )
    histories = library_histories(points, top or None)

    def render(kind: str, to_stdout: bool) -> str:
        return history_output(histories, by, kind, *terminal(to_stdout))

    write_outputs(plan, render)
