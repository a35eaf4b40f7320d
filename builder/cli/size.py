"""``report`` and ``compare``: thin Click shells over targets, report, compare and render.

Everything heavy is imported inside the commands, so ``report --format json`` pays only for what
it uses (no rich). Data goes to stdout; progress and errors go to stderr.
"""

from __future__ import annotations

import gc
import os
import sys
from collections.abc import Iterator
from contextlib import contextmanager
from typing import Any

import click

from builder.cli.tree_options import tree_options
from builder.errors import UsageError
from builder.size.grouping import BY_CHOICES

__all__ = ["compare_command", "report_command"]

_FORMATS = ("table", "json", "csv", "markdown", "html")


def _common(func: Any) -> Any:
    options = [
        click.option("--by", type=click.Choice(BY_CHOICES), default="kernel", show_default=True,
                     help="Group bytes by kernel family, dtype, source file (from a build "
                          "manifest, or from the kernel tree given with --source-dir) or "
                          "function."),
        click.option("--rules", type=click.Path(dir_okay=False), default=None,
                     help="Rule file for kernel families: 'FAMILY REGEX' lines, first match wins "
                          "(default: the build manifest, else built-in MLX rules, else generic)."),
        click.option("--top", type=int, default=None,
                     help="Show the N largest groups and fold the rest into one row "
                          "(default 20 for table/markdown, all for csv/json; 0 = all)."),
        click.option("--format", "fmt", type=click.Choice(_FORMATS), default="table",
                     show_default=True, help="Output format (JSON and CSV for machines; html: a "
                                             "self-contained treemap page, see docs/html-report.md)."),
        click.option("-o", "--output", type=click.Path(dir_okay=False), default=None,
                     help="Write to FILE (atomically) instead of stdout."),
        click.option("--platform", default=None,
                     help="Wheel platform for PACKAGE==VERSION targets "
                          "[default: macosx_14_0_arm64]."),
    ]  # fmt: skip
    func = tree_options(func)
    for option in reversed(options):
        func = option(func)
    return func


def _emit(text: str, output: str | None) -> None:
    """Data to stdout, or to ``output`` atomically (``builder.fileio``: a new file gets the
    umask's mode, a replaced one keeps its own; exit 2 naming ``output`` when it cannot be
    written)."""
    if output is None:
        sys.stdout.write(text)
        return
    from builder.fileio import write_atomic

    data = text.encode("utf-8")
    write_atomic(output, data)
    click.echo(f"wrote {output} ({len(data):,} bytes)", err=True)


def _progress(message: str) -> None:
    click.echo(message, err=True)


def _load(target: str, by: str, rules_path: str | None, platform: str | None,
          sources: Any = None) -> list[Any]:  # fmt: skip
    from builder.size.load import load_reports

    rules = None
    if rules_path is not None:
        from builder.size.grouping import load_rules

        rules = load_rules(rules_path)
    with _gc_paused():
        reports = load_reports(target, by=by, rules=rules, platform=platform, progress=_progress,
                               sources=sources)  # fmt: skip
    if rules is not None and any(r.grouping == "manifest" for r in reports):
        click.echo(f"note: {target}: kernel families come from its build manifest; --rules "
                   "is not used for it", err=True)  # fmt: skip
    return reports


def _grouping(by: str, tree: dict[str, Any]) -> tuple[str, Any]:
    """``--by`` and the entry file of every kernel of the tree named by ``--source-dir`` (None
    without one). ``--source-dir`` alone means ``--by source``."""
    source_dir = tree.pop("source_dir")
    if source_dir is None:
        if any(tree.values()):
            raise UsageError("-I, -D, --exclude, --config and -j describe a kernel tree; "
                             "name it with --source-dir")  # fmt: skip
        return by, None
    ctx = click.get_current_context()
    if ctx.get_parameter_source("by") is click.core.ParameterSource.DEFAULT:
        by = "source"
    elif by != "source":
        raise UsageError(f"--source-dir attributes functions to entry files; it goes with "
                         f"--by source, not --by {by}")  # fmt: skip
    from builder.cli.tree_options import load_tree_with_progress
    from builder.size.grouping import Sources

    found = load_tree_with_progress(source_dir, **tree)
    click.echo(f"kernel tree {found.root}: {len(found.kernels):,} kernels in "
               f"{len(found.sources):,} {'entry files' if found.kind == 'discovered' else 'family headers'}",
               err=True)  # fmt: skip
    return by, Sources(found.source_of(), f"discovery:{found.root}")


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


def _top(top: int | None, fmt: str) -> int | None:
    if top is None:
        return None if fmt in ("csv", "json") else 20
    return None if top <= 0 else top


def _width() -> int:
    from builder.console import table_width

    return table_width()


@click.command("report")
@click.argument("target")
@_common
def report_command(
    target: str,
    by: str,
    rules: str | None,
    top: int | None,
    fmt: str,
    output: str | None,
    platform: str | None,
    **tree: Any,
) -> None:
    """Show which kernels make a metallib big.

    TARGET is a .metallib, a .whl, PACKAGE==VERSION (the macOS wheel is downloaded and cached), a
    saved report .json, or a build directory of this project. Every byte is attributed to one
    function or to named container overhead; the totals equal the file size.

    \b
    Examples:
      metallib-builder report mlx-metal==0.30.0
      metallib-builder report build/ --by source
      metallib-builder report mlx-metal==0.32.1 --source-dir mlx/backend/metal/kernels -I .
      metallib-builder report mlx.metallib --by dtype --format json > report.json
      metallib-builder report mlx-metal==0.32.0 --format html -o size.html
    """
    by, sources = _grouping(by, tree)
    reports = _load(target, by, rules, platform, sources)
    shown = _top(top, fmt)
    if fmt == "html":
        from builder.render.html import report_html

        text = report_html(reports)
    elif fmt == "json":
        from builder.render.machine import report_json

        text = report_json(reports)
    elif fmt == "csv":
        from builder.render.machine import report_csv

        text = report_csv(reports, shown)
    elif fmt == "markdown":
        from builder.render.markdown import report_markdown

        text = report_markdown(reports, shown)
    else:
        from builder.render.tables import report_table

        text = report_table(reports, shown, color=_color() and output is None, width=_width())
    _emit(text, output)


def _color() -> bool:
    from builder.console import stdout_color

    return stdout_color()


@click.command("compare")
@click.argument("base")
@click.argument("head")
@_common
@click.option("--max-growth", default=None, metavar="N",
              help="Fail when head is more than N larger than base: bytes, with KB/MB/KiB/MiB "
                   "suffixes, or N% of base.")  # fmt: skip
@click.option(
    "--max-size",
    default=None,
    metavar="N",
    help="Fail when head is larger than N (bytes, KB/MB/KiB/MiB).",
)
@click.option(
    "--fail-on-new-group", is_flag=True, help="Fail when head has a group that base does not."
)
@click.option(
    "--warn-only",
    is_flag=True,
    help="Print the gate verdict (on stderr, naming any failing gate) but exit 0.",
)
def compare_command(
    base: str,
    head: str,
    by: str,
    rules: str | None,
    top: int | None,
    fmt: str,
    output: str | None,
    platform: str | None,
    max_growth: str | None,
    max_size: str | None,
    fail_on_new_group: bool,
    warn_only: bool,
    **tree: Any,
) -> None:
    """Compare two libraries per group and gate on the growth (exit 1 when a gate fails).

    BASE and HEAD are any two targets (see 'report --help'). Exit codes: 0 all gates pass, 1 a
    gate failed (the message names it; with --warn-only the verdict is printed and the exit is 0),
    2 an input is missing or unusable. The markdown is a sticky PR comment: a hidden marker line
    first, totals, the top groups, collapsed details, always under 60 KB. With
    GITHUB_STEP_SUMMARY set, the markdown is also appended there.

    \b
    Examples:
      metallib-builder compare mlx-metal==0.29.0 mlx-metal==0.30.0
      metallib-builder compare base/ head/ --max-growth 1% --format markdown
      metallib-builder compare base.json head.metallib --max-size 120MB --fail-on-new-group
      metallib-builder compare base/ head/ --format html -o size-diff.html --warn-only
    """
    from builder.errors import CheckFailed
    from builder.render.machine import compare_csv, compare_json
    from builder.render.pr_comment import comment_markdown
    from builder.render.tables import compare_table
    from builder.render.text import gate_message, visible
    from builder.size.compare import Gates, compare_reports, evaluate_gates, pair_reports
    from builder.size.limits import parse_limit, parse_size

    gates = Gates(
        max_growth=parse_limit(max_growth) if max_growth is not None else None,
        max_size=parse_size(max_size) if max_size is not None else None,
        fail_on_new_group=fail_on_new_group,
    )
    by, sources = _grouping(by, tree)
    pairs = pair_reports(_load(base, by, rules, platform, sources),
                         _load(head, by, rules, platform, sources))  # fmt: skip
    shown = _top(top, fmt)
    failed: list[str] = []
    texts: list[str] = []
    evaluated = []
    for base_report, head_report in pairs:
        comparison = compare_reports(base_report, head_report)
        for note in comparison.notes:
            click.echo(f"note: {visible(note)}", err=True)  # a saved report's grouping: untrusted
        results = evaluate_gates(comparison, gates)
        evaluated.append((comparison, results))
        failed += [gate_message(r) for r in results if not r.passed]  # escaped where printed
        if fmt == "table":
            texts.append(compare_table(comparison, results, shown,
                                              color=_color() and output is None,
                                              width=_width()))  # fmt: skip
    markdown = comment_markdown(evaluated, shown)
    if fmt == "json":
        texts = [compare_json(evaluated)]
    elif fmt == "csv":
        texts = [compare_csv(evaluated)]
    elif fmt == "markdown":
        texts = [markdown]
    elif fmt == "html":
        from builder.render.html import compare_html

        texts = [compare_html(evaluated)]
    _emit("".join(texts), output)
    summary_path = os.environ.get("GITHUB_STEP_SUMMARY")
    if summary_path:
        try:
            with open(summary_path, "a", encoding="utf-8") as handle:
                handle.write(markdown)
        except OSError as exc:
            from builder.errors import OutputError

            raise OutputError(
                f"cannot append to GITHUB_STEP_SUMMARY {summary_path}: {exc.strerror or exc}"
            ) from None
    if failed and warn_only:
        click.echo("warning: size gate failed (--warn-only: exit 0): " + visible("; ".join(failed)),
                   err=True)  # fmt: skip
    elif failed:
        raise CheckFailed("size gate failed: " + "; ".join(failed))
    elif gates != Gates():
        click.echo("size gates passed", err=True)
