"""The size commands: ``report``, ``compare`` and ``budget`` (``history``: ``builder.cli.history``).

Everything heavy is imported inside the commands, so ``report --format json`` pays only for what
it uses (no rich). Data goes to stdout; progress and errors go to stderr.
"""

from __future__ import annotations

from functools import partial
from pathlib import Path
from typing import TYPE_CHECKING, Any, TypeVar

import click

from builder.cli.gate_options import content_gates
from builder.cli.loading import check_output, load, measured_files, warn
from builder.cli.publishing import (
    deliver,
    output_options,
    output_plan,
    publish,
    pull_request_for,
    say,
    verdict,
)
from builder.cli.tree_options import option, options, tree_options, tree_sources
from builder.size.grouping import BY_CHOICES

if TYPE_CHECKING:
    from builder.cli.tree_options import TreeOptions
    from builder.size.budget_file import Budget
    from builder.size.compare import Comparison
    from builder.size.report import Report, Source

__all__ = ["budget_command", "compare_command", "report_command"]


_FORMATS = ("table", "json", "csv", "markdown", "html")
R = TypeVar("R")


def _by_keys(ctx: click.Context, param: click.Parameter, value: str) -> str:
    """``--by`` checked and spelled one way (``source, dtype`` -> ``source,dtype``)."""
    from builder.size.grouping import parse_by

    return ",".join(parse_by(value))


_common = options(
    click.option(
        "--by",
        default="kernel",
        show_default=True,
        callback=_by_keys,
        metavar="KEY[,KEY]",
        help=f"Group bytes by kernel group, stem (the name without its dtypes and "
        f"parameters), dtype, source file (from a build manifest, or from the kernel tree "
        f"given with --source-dir), the name less its template parameters (param) or "
        f"function ({'|'.join(BY_CHOICES)}). Two keys nest: --by source,dtype divides each "
        f"source file's bytes by dtype, --by kernel,stem each op's by stem (abs: abs_dense, "
        f"abs_strided...) (report only). report --by param adds, per group, the bytes of "
        f"each value of each parameter its names carry (dtype, bm64, gs_32...): what "
        f"dropping that value would save (--by kernel,param: per kernel group).",
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
    option("platform"),
    option(
        "download",
        note="Each function's and group's share of it; a wheel also lists its files with "
        "their real compressed sizes, and the model's error against its metallib member.",
    ),
    option(
        "member",
        note="compare takes it from both sides (one side only: an added or removed "
        "library). A wheel's binary member that holds no metallib (mlx-metal's "
        "mlx/lib/libmlx.dylib) is reported as a host library, as the binary given itself.",
    ),
    tree_options(),
)
"""The options ``report`` and ``compare`` share."""


def _notes(comparison: Comparison) -> None:
    from builder.render.text import visible

    for note in comparison.notes:
        say(f"note: {visible(note)}")  # a saved report's grouping: untrusted


@click.command("report")
@click.argument("targets", metavar="TARGET...", nargs=-1, required=True)
@_common
def report_command(
    targets: tuple[str, ...],
    by: str,
    rules: str | None,
    top: int | None,
    fmt: str,
    outputs: tuple[str, ...],
    platform: str | None,
    download: bool,
    member: str | None,
    tree: TreeOptions,
) -> None:
    """Show which kernels make a metallib big.

    Each TARGET is a .metallib, a binary holding metallibs (a Mach-O dylib or .so, thin or fat, an
    ELF file: each metallib is reported as BINARY#N with its section), a .whl, PACKAGE==VERSION
    (the macOS wheel is downloaded and cached), a saved report .json, or a build directory of
    this project. Every byte is attributed to one function or to named container overhead; the
    totals equal the metallib's size. A Mach-O or ELF host library that holds no metallib
    (MLX's libmlx.dylib) is reported by the run-time sources it embeds, each with the bytes of its
    string in the file; with --source-dir each is named by the tree's header it was made from.

    When the targets hold several libraries (torch's libtorch_cpu.dylib holds two; or several
    targets, such as two wheel files of one release), a last table (JSON "duplicates") lists
    each pair of libraries holding functions of the same name: how many and the second
    library's bytes of them (what dropping them from it would save), how many of those have
    identical modules (same size and HASH tag), and the functions only one of the two holds.
    --platform applies to every PACKAGE==VERSION target: to set two platforms of one release
    side by side, give their wheel files (docs/report-schema.md, "duplicates").

    --by param groups functions by their name less its template parameters
    (steel_gemm_fused_nn_float16_float16_bm64_bn64_bk16_wm2_wn2 is in steel_gemm_fused_nn)
    and adds a table: per group, each parameter its names carry (dtype, bm/bn/bk, wm/wn, head
    dim bd, group size gs, bits b, a bare number #1...) with the bytes of every value, which is
    what dropping that value would save; each parameter's values add up to the group (JSON
    "parameters", docs/report-schema.md).

    \b
    Examples:
      metallib-builder report mlx-metal==0.30.0
      metallib-builder report mlx-metal==0.32.1 --source-dir mlx/backend/metal/kernels -I .
      metallib-builder report mlx-metal==0.32.1 --member mlx/lib/libmlx.dylib --source-dir TREE
      metallib-builder report build/ --by source,dtype
      metallib-builder report mlx.metallib --by dtype --format json > report.json
      metallib-builder report mlx-metal==0.32.1 --by param --top 5
      metallib-builder report build/ -o report.json -o report.html
      metallib-builder report mlx-metal==0.32.4 --platform macosx_26_0_arm64 --download
      metallib-builder report torch==2.14.1 --format json
      metallib-builder report mlx_metal-0.32.1-py3-none-macosx_14_0_arm64.whl \\
          mlx_metal-0.32.1-py3-none-macosx_26_0_arm64.whl
    """
    check_output(outputs, list(targets), rules, tree)
    plan = output_plan(outputs, fmt)
    by, sources = tree_sources(by, tree)
    reports = [
        report
        for target in targets
        for report in load(target, by, rules, platform, sources, download, member)
    ]
    from builder.size.attribution import binary_accounts
    from builder.size.duplicates import report_duplicates

    binaries = binary_accounts(
        [
            (s.path, _binary_name(s), s.embedded, s.label, n)
            for s, n in ((r.source, r.function_count) for r in reports)
        ]
    )

    from builder.publish.outputs import report_output

    duplicates = report_duplicates(reports)  # several libraries: the functions they share
    deliver(
        plan,
        lambda kind, color, width: report_output(
            reports, kind, top, color, width, binaries, duplicates
        ),
        measured_files(reports),
    )


def _binary_name(source: Source) -> str:
    """How a binary holding libraries is named: the target itself, or its path in a wheel."""
    if source.kind == "binary":
        return source.target
    return source.binary or source.target


@click.command("compare")
@click.argument("base")
@click.argument("head")
@_common
@options("max_growth", "max_size", "max_total_size", "fail_on_new_group", "warn_only")
@options("github_comment", "max_download_growth", "max_download_size")
@content_gates
@options("fail_on_missing", "max_unattributed")
def compare_command(
    base: str,
    head: str,
    by: str,
    rules: str | None,
    top: int | None,
    fmt: str,
    outputs: tuple[str, ...],
    platform: str | None,
    warn_only: bool,
    github_comment: bool,
    download: bool,
    member: str | None,
    tree: TreeOptions,
    **limits: Any,
) -> None:
    """Compare two libraries per group and gate on their size and on what they hold (exit 1
    when a gate fails).

    BASE and HEAD are any two targets (see 'report --help'). Gates on size (--max-growth,
    --max-size, ...) and on content: functions head must hold (--require) or keep
    (--fail-on-removed), how many (--min-functions), its platform floor (--max-deployment-target,
    --max-metal-version) and whether it changed (--fail-on-platform-change); a library holding
    no function always fails (empty-library). Exit codes: 0 all gates pass, 1 a gate failed (the
    message names it; with --warn-only the verdict is printed and the exit is 0), 2 an input is
    missing or unusable. A summary comes first: groups new, grown, shrunk and removed with their
    bytes, and functions renamed (names differing by one token). Groups are listed by how much
    they changed (grew or shrank), unchanged ones last; when the rows shown would leave more
    than half of the change in the rest row, they are rolled up to label prefixes
    (sort_block*). The markdown is a sticky PR comment: a hidden marker line
    first, then what failed in a reviewer's words, totals, the top groups, collapsed details,
    always under 60 KB. With
    GITHUB_STEP_SUMMARY set, the markdown (with the verdict) is appended there once per run.

    \b
    Examples:
      metallib-builder compare mlx-metal==0.29.0 mlx-metal==0.30.0
      metallib-builder compare base/ head/ --max-growth 1% --format markdown
      metallib-builder compare base.json head.metallib --max-size 120MB --fail-on-new-group
      metallib-builder compare base.json build/ -o size.md -o size.html -o size.json
      metallib-builder compare base.json build/ --max-growth 1% --github-comment --warn-only
      metallib-builder compare base.json head.whl --download --max-download-growth 1%
      metallib-builder compare macos26.whl macos14.whl --require '*_nax*>=1' --fail-on-removed
      metallib-builder compare base.json build/ --max-deployment-target 14.0 --max-metal-version 3.1
    """
    from builder.errors import UsageError
    from builder.publish.outputs import comparison_output
    from builder.render.pr_comment import MARKER
    from builder.render.text import gate_message, visible
    from builder.size.verdicts import Gates, check_pairs

    gates = Gates(**limits)  # the gate options are named as Gates' fields
    if "," in by:
        raise UsageError(
            f"compare groups by one key, not --by {by}: nested groups are shown by "
            f"'report --by {by}' (run it on each side)"
        )
    check_output(outputs, [base, head], rules, tree)
    plan = output_plan(outputs, fmt)
    pull_request = pull_request_for(github_comment)
    by, sources = tree_sources(by, tree)
    download = download or gates.download
    loaded = [
        load(target, by, rules, platform, sources, download, member, absent_ok=True)
        for target in (base, head)
    ]
    if member is not None and not any(loaded):
        raise UsageError(f"no metallib {member!r} in {base} nor in {head}")
    evaluated = check_pairs(loaded[0], loaded[1], gates, _notes)

    markdown = deliver(
        plan,
        lambda kind, color, width: comparison_output(evaluated, kind, top, color, width),
        measured_files([*loaded[0], *loaded[1]]),
    )
    publish(markdown, MARKER, pull_request)
    failed = [gate_message(r) for _, results in evaluated for r in results if not r.passed]
    passed = "size gates passed" if gates != Gates() else None
    verdict(failed, warn_only, "size gate failed", passed, visible)


@click.command("budget")
@click.argument("budget_file", required=False, type=click.Path(dir_okay=False, path_type=Path))
@output_options(
    ("table", "json", "markdown", "csv"),
    "Output format (markdown: the step summary and PR comment).",
)
@options("warn_only", "github_comment")
def budget_command(
    budget_file: Path | None,
    fmt: str,
    outputs: tuple[str, ...],
    warn_only: bool,
    github_comment: bool,
) -> None:
    """Check every size budget of the project: one row per limit, exit 1 if any is exceeded.

    BUDGET_FILE is a pyproject.toml with [[tool.metallib-builder.budget]] tables or a
    metallib-size.toml with [[budget]] tables; without it, the nearest one from the working
    directory upward. Each budget names a target (path, glob, build folder or PACKAGE==VERSION;
    member: one library of it, as 'report --member') and any of max-size, max-total-size
    (metallib + JIT host library), max-download-size, max-functions, groups (with by),
    max-growth against a base report, and the content limits compare gates on: require
    (["GLOB>=N"]), fail-on-removed (GLOB, against base), min-functions, max-deployment-target,
    max-metal-version and fail-on-platform-change (against base); a library holding no
    function always fails (empty-library). by = "source" names its
    kernel tree with source-dir, include-dirs, defines, exclude and config, read as
    --source-dir, -I, -D, --exclude and --config are. Exit codes: 0 every limit holds, 1 one is
    exceeded (the message names it), 2 a bad budget file (naming the key) or an unusable target.
    With GITHUB_STEP_SUMMARY set, the markdown is appended there once.

    \b
    Example pyproject.toml:
      [[tool.metallib-builder.budget]]
      target = "build/"
      max-size = "120MB"
      groups = { quantized = "30MB", gemm = "20MB" }
      base = "main-report.json"
      max-growth = "1%"
      require = ["*_nax*>=1"]
      max-deployment-target = "14.0"

    \b
    Examples:
      metallib-builder budget
      metallib-builder budget ci/metallib-size.toml --format json
      metallib-builder budget -o budget.md -o budget.json --github-comment
    """
    from builder.cli.tree_options import tree_of
    from builder.publish.outputs import budget_output
    from builder.render.budget_tables import BUDGET_MARKER as MARKER
    from builder.render.text import failures
    from builder.size.budget import check_budgets
    from builder.size.budget_file import find_budget_file, read_budget_file

    plan = output_plan(outputs, fmt)
    pull_request = pull_request_for(github_comment)
    path = budget_file if budget_file is not None else find_budget_file(Path.cwd())
    parsed = read_budget_file(path)
    say(f"budgets: {path} ({len(parsed.budgets)} in {parsed.table})")
    warnings: list[str] = []  # each library's, as report and compare say them

    def warned(budget: Budget, report: Report) -> None:
        label = f"{budget.name}: {report.source.label}"
        warnings.extend(f"{label}: {w}" for w in report.warnings)
        warn(label, report.warnings)

    verdicts = check_budgets(parsed.budgets, progress=say, trees=tree_of, warned=warned)

    markdown = deliver(plan, partial(budget_output, verdicts, str(path), warnings=warnings))
    publish(markdown, MARKER, pull_request)
    verdict(
        failures(verdicts), warn_only, "budget exceeded", f"all {len(verdicts)} budget limits pass"
    )
