"""``report`` and ``compare``: thin Click shells over targets, report, compare and render.

Everything heavy is imported inside the commands, so ``report --format json`` pays only for what
it uses (no rich). Data goes to stdout; progress and errors go to stderr.
"""

from __future__ import annotations

import gc
from collections.abc import Iterator, Sequence
from contextlib import contextmanager
from typing import TYPE_CHECKING, Any

import click

from builder.cli.publishing import output_options, output_plan, publish, pull_request_for
from builder.cli.tree_options import tree_options, tree_sources
from builder.size.grouping import BY_CHOICES

if TYPE_CHECKING:
    from builder.size.limits import Limit

__all__ = ["compare_command", "report_command"]

_FORMATS = ("table", "json", "csv", "markdown", "html")


def _common(func: Any) -> Any:
    options = [
        click.option(
            "--by",
            default="kernel",
            show_default=True,
            callback=_by_keys,
            metavar="KEY[,KEY]",
            help=f"Group bytes by kernel group, dtype, source file (from a build "
            f"manifest, or from the kernel tree given with --source-dir) or "
            f"function ({'|'.join(BY_CHOICES)}). Two keys nest: --by source,dtype "
            f"divides each source file's bytes by dtype (report only).",
        ),
        click.option(
            "--rules",
            type=click.Path(dir_okay=False),
            default=None,
            help="Rule file for --by kernel: 'GROUP REGEX' lines, first match wins "
            "(default: the build manifest's units, else built-in MLX rules, else generic).",
        ),
        click.option(
            "--top",
            type=int,
            default=None,
            help="Show the N largest groups and fold the rest into one row "
            "(default 20 for table/markdown, all for csv/json; 0 = all).",
        ),
        output_options(
            _FORMATS,
            "Output format (JSON and CSV for machines; html: a self-contained treemap page, "
            "see docs/html-report.md).",
        ),
        click.option(
            "--platform",
            default=None,
            help="Wheel platform for PACKAGE==VERSION targets [default: macosx_14_0_arm64].",
        ),
        click.option(
            "--download",
            is_flag=True,
            help="Add download bytes: each function's and group's share of the library "
            "compressed as a wheel stores it (zlib 6, modelled on both cores; "
            "docs/download-size.md). A wheel also lists its files with their real "
            "compressed sizes, and the model's error against its metallib member.",
        ),
    ]
    func = tree_options(func)
    for option in reversed(options):
        func = option(func)
    return func


def _by_keys(ctx: click.Context, param: click.Parameter, value: str) -> str:
    """``--by`` checked and spelled one way (``source, dtype`` -> ``source,dtype``)."""
    from builder.size.grouping import parse_by

    return ",".join(parse_by(value))


def _check_output(
    outputs: Sequence[str], targets: Sequence[str], rules: str | None, tree: dict[str, Any]
) -> None:
    """Exit 2 before any work when an ``-o`` names a file the command reads: a target given as
    a path, the rule file, the kernel tree's settings file
    (``builder.files.atomic.check_not_an_input``)."""
    from builder.files.atomic import check_not_an_input

    source_dir = tree.get("source_dir")
    settings = [tree.get("config_file"), source_dir / "metallib.toml" if source_dir else None]
    for output in outputs:
        check_not_an_input(output, [*targets, rules, *settings])


def _measured_files(reports: Sequence[Any]) -> list[str | None]:
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


def _load(
    target: str,
    by: str,
    rules_path: str | None,
    platform: str | None,
    sources: Any = None,
    download: bool = False,
) -> list[Any]:
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
        )
    if rules is not None and any(r.grouping == "manifest" for r in reports):
        click.echo(
            f"note: {target}: kernel groups come from its build manifest; --rules "
            "is not used for it",
            err=True,
        )
    if sources is not None:
        _warn_unattributed(reports, sources.origin)
    return reports


def _warn_unattributed(reports: list[Any], origin: str) -> None:
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
                "--exclude)?",
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


def _top(top: int | None, fmt: str) -> int | None:
    if top is None:
        return None if fmt in ("csv", "json") else 20
    return None if top <= 0 else top


def _width(terminal: bool) -> int | None:
    """The terminal's width for a table shown on one; None (as wide as the table's cells need,
    no function name cut) for a pipe or a file."""
    from builder.cli.console import stdout_table_width

    return stdout_table_width() if terminal else None


@click.command("report")
@click.argument("target")
@_common
def report_command(
    target: str,
    by: str,
    rules: str | None,
    top: int | None,
    fmt: str,
    outputs: tuple[str, ...],
    platform: str | None,
    download: bool,
    **tree: Any,
) -> None:
    """Show which kernels make a metallib big.

    TARGET is a .metallib, a binary holding metallibs (a Mach-O dylib or .so, thin or fat, an
    ELF file: each metallib is reported as BINARY#N with its section), a .whl, PACKAGE==VERSION
    (the macOS wheel is downloaded and cached), a saved report .json, or a build directory of
    this project. Every byte is attributed to one function or to named container overhead; the
    totals equal the metallib's size.

    \b
    Examples:
      metallib-builder report mlx-metal==0.30.0
      metallib-builder report build/ --by source
      metallib-builder report mlx-metal==0.32.1 --source-dir mlx/backend/metal/kernels -I .
      metallib-builder report build/ --by source,dtype
      metallib-builder report mlx.metallib --by dtype --format json > report.json
      metallib-builder report mlx-metal==0.32.0 --format html -o size.html
      metallib-builder report build/ -o report.json -o report.html
      metallib-builder report mlx-metal==0.32.4 --platform macosx_26_0_arm64 --download
    """
    _check_output(outputs, [target], rules, tree)
    plan = output_plan(outputs, fmt, _FORMATS)
    by, sources = tree_sources(by, tree)
    reports = _load(target, by, rules, platform, sources, download)

    def render(kind: str, terminal: bool) -> str:
        shown = _top(top, kind)
        if kind == "html":
            from builder.render.html import report_html

            return report_html(reports)
        if kind == "json":
            from builder.render.machine import report_json

            return report_json(reports)
        if kind == "csv":
            from builder.render.machine import report_csv

            return report_csv(reports, shown)
        if kind == "markdown":
            from builder.render.markdown import report_markdown

            return report_markdown(reports, shown)
        from builder.render.tables import report_table

        return report_table(reports, shown, color=_color() and terminal, width=_width(terminal))

    from builder.publish.outputs import write_outputs

    write_outputs(plan, render, _measured_files(reports))


def _gate_size(option: str, text: str | None) -> int | None:
    """A size gate's limit in bytes (None when not given). A negative limit would fail every
    run whatever the library holds, so it is a usage error (exit 2) like a budget file's."""
    from builder.errors import UsageError
    from builder.size.limits import parse_size

    if text is None:
        return None
    try:
        size = parse_size(text)
    except UsageError as exc:
        raise UsageError(f"{option}: {exc}") from None
    if size < 0:
        raise UsageError(f"{option} {text}: a size limit must not be negative")
    return size


def _gate_growth(option: str, text: str | None) -> Limit | None:
    """A growth gate's limit (None when not given). A negative one, or a percentage past
    ``LARGEST_PERCENT``, is a usage error (exit 2), as in a budget file: a gate that only a
    shrinking library passes is written as ``--max-size``."""
    from builder.errors import UsageError
    from builder.size.limits import parse_limit

    if text is None:
        return None
    try:
        return parse_limit(text)
    except UsageError as exc:
        raise UsageError(f"{option}: {exc}") from None


def _color() -> bool:
    from builder.cli.console import stdout_color

    return stdout_color()


@click.command("compare")
@click.argument("base")
@click.argument("head")
@_common
@click.option(
    "--max-growth",
    default=None,
    metavar="N",
    help="Fail when head is more than N larger than base: bytes, with KB/MB/KiB/MiB "
    "suffixes, or N% of base. Counts everything shipped: a build's JIT host "
    "library too.",
)
@click.option(
    "--max-size",
    default=None,
    metavar="N",
    help="Fail when head's metallib is larger than N (bytes, KB/MB/KiB/MiB).",
)
@click.option(
    "--max-total-size",
    default=None,
    metavar="N",
    help="Fail when head's metallib plus its JIT host library is larger than N.",
)
@click.option(
    "--fail-on-new-group", is_flag=True, help="Fail when head has a group that base does not."
)
@click.option(
    "--warn-only",
    is_flag=True,
    help="Print the gate verdict (on stderr, naming any failing gate) but exit 0.",
)
@click.option(
    "--github-comment",
    is_flag=True,
    help="Post the markdown as a pull-request comment, and edit that same comment on "
    "later runs (GITHUB_TOKEN, GITHUB_REPOSITORY, GITHUB_API_URL, "
    "GITHUB_EVENT_PATH; docs/ci-recipe.md).",
)
@click.option(
    "--max-download-growth",
    default=None,
    metavar="N",
    help="Fail when head's modelled download (as --download) is more than N larger "
    "than base's: bytes with KB/MB/KiB/MiB suffixes, or N% of base.",
)
@click.option(
    "--max-download-size",
    default=None,
    metavar="N",
    help="Fail when head's modelled download is larger than N (bytes, KB/MB/KiB/MiB).",
)
def compare_command(
    base: str,
    head: str,
    by: str,
    rules: str | None,
    top: int | None,
    fmt: str,
    outputs: tuple[str, ...],
    platform: str | None,
    max_growth: str | None,
    max_size: str | None,
    max_total_size: str | None,
    fail_on_new_group: bool,
    warn_only: bool,
    github_comment: bool,
    download: bool,
    max_download_growth: str | None,
    max_download_size: str | None,
    **tree: Any,
) -> None:
    """Compare two libraries per group and gate on the growth (exit 1 when a gate fails).

    BASE and HEAD are any two targets (see 'report --help'). Exit codes: 0 all gates pass, 1 a
    gate failed (the message names it; with --warn-only the verdict is printed and the exit is 0),
    2 an input is missing or unusable. Groups are listed by how much they changed (grew or
    shrank), unchanged ones last. The markdown is a sticky PR comment: a hidden marker line
    first, totals, the top groups, collapsed details, always under 60 KB. With
    GITHUB_STEP_SUMMARY set, the markdown (with the verdict) is appended there once per run.

    \b
    Examples:
      metallib-builder compare mlx-metal==0.29.0 mlx-metal==0.30.0
      metallib-builder compare base/ head/ --max-growth 1% --format markdown
      metallib-builder compare base.json head.metallib --max-size 120MB --fail-on-new-group
      metallib-builder compare base.json build/ -o size.md -o size.html -o size.json
      metallib-builder compare base.json build/ --max-growth 1% --github-comment
      metallib-builder compare base/ head/ --format html -o size-diff.html --warn-only
      metallib-builder compare base.json head.whl --download --max-download-growth 1%
    """
    from builder.errors import CheckFailed
    from builder.publish.outputs import write_outputs
    from builder.render.text import gate_message, visible
    from builder.size.compare import compare_reports, pair_reports
    from builder.size.gates import Gates, evaluate_gates

    gates = Gates(
        max_growth=_gate_growth("--max-growth", max_growth),
        max_size=_gate_size("--max-size", max_size),
        fail_on_new_group=fail_on_new_group,
        max_total_size=_gate_size("--max-total-size", max_total_size),
        max_download_growth=_gate_growth("--max-download-growth", max_download_growth),
        max_download_size=_gate_size("--max-download-size", max_download_size),
    )
    download = (
        download or gates.max_download_growth is not None or gates.max_download_size is not None
    )
    if "," in by:
        from builder.errors import UsageError

        raise UsageError(
            f"compare groups by one key, not --by {by}: nested groups are shown by "
            f"'report --by {by}' (run it on each side)"
        )
    _check_output(outputs, [base, head], rules, tree)
    plan = output_plan(outputs, fmt, _FORMATS)
    pull_request = pull_request_for(github_comment)
    by, sources = tree_sources(by, tree)
    loaded = (
        _load(base, by, rules, platform, sources, download),
        _load(head, by, rules, platform, sources, download),
    )
    pairs = pair_reports(*loaded)
    failed: list[str] = []
    evaluated = []
    for base_report, head_report in pairs:
        comparison = compare_reports(base_report, head_report)
        for note in comparison.notes:
            click.echo(f"note: {visible(note)}", err=True)  # a saved report's grouping: untrusted
        results = evaluate_gates(comparison, gates)
        evaluated.append((comparison, results))
        failed += [gate_message(r) for r in results if not r.passed]  # escaped where printed

    def render(kind: str, terminal: bool) -> str:
        from builder.render import machine

        if kind == "json":
            return machine.compare_json(evaluated)
        if kind == "csv":
            return machine.compare_csv(evaluated)
        if kind == "markdown":
            from builder.render.pr_comment import comment_markdown

            return comment_markdown(evaluated, _top(top, kind))
        if kind == "html":
            from builder.render.html import compare_html

            return compare_html(evaluated)
        from builder.render.tables import compare_table

        return "".join(
            compare_table(
                c, r, _top(top, kind), color=_color() and terminal, width=_width(terminal)
            )
            for c, r in evaluated
        )

    write_outputs(plan, render, [*_measured_files(loaded[0]), *_measured_files(loaded[1])])
    from builder.render.pr_comment import MARKER

    publish(lambda: render("markdown", False), MARKER, pull_request)
    if failed and warn_only:
        click.echo(
            "warning: size gate failed (--warn-only: exit 0): " + visible("; ".join(failed)),
            err=True,
        )
    elif failed:
        raise CheckFailed("size gate failed: " + "; ".join(failed))
    elif gates != Gates():
        click.echo("size gates passed", err=True)
