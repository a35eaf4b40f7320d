"""``budget``: check the size budgets committed with the project (pyproject.toml or
metallib-size.toml), print one table, exit 1 when any limit is exceeded."""

from __future__ import annotations

from pathlib import Path

import click

from builder.cli.publishing import github_comment_option, output_options
from builder.cli.tree_options import option

__all__ = ["budget_command"]

_FORMATS = ("table", "json", "markdown", "csv")


@click.command("budget")
@click.argument("budget_file", required=False, type=click.Path(dir_okay=False, path_type=Path))
@output_options(_FORMATS, "Output format (markdown: the step summary and PR comment).")
@option("warn_only")
@github_comment_option
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
    directory upward. Each budget names a target (path, glob, build folder or PACKAGE==VERSION)
    (member: one library of it, as 'report --member')
    and any of max-size, max-total-size (metallib + JIT host library), max-download-size,
    max-functions, groups (with by) and max-growth against a base report; by = "source" names
    its kernel tree with source-dir, include-dirs, defines, exclude and config, read as
    --source-dir, -I, -D, --exclude and --config are. Exit codes: 0 every
    limit holds, 1 one is exceeded (the message names it), 2 a bad budget file (naming the key)
    or an unusable target. With GITHUB_STEP_SUMMARY set, the markdown is appended there once.

    \b
    Example pyproject.toml:
      [[tool.metallib-builder.budget]]
      target = "build/"
      max-size = "120MB"
      groups = { quantized = "30MB", gemm = "20MB" }
      base = "main-report.json"
      max-growth = "1%"

    \b
    Examples:
      metallib-builder budget
      metallib-builder budget ci/metallib-size.toml --format json
      metallib-builder budget -o budget.md -o budget.json --github-comment
    """
    from builder.cli.publishing import output_plan, publish, pull_request_for, terminal, verdict
    from builder.cli.tree_options import tree_of
    from builder.publish.outputs import write_outputs
    from builder.render.checks import MARKER, failures
    from builder.render.formats import budget_output
    from builder.size.budget import check_budgets
    from builder.size.budget_file import find_budget_file, read_budget_file

    plan = output_plan(outputs, fmt, _FORMATS)
    pull_request = pull_request_for(github_comment)
    path = budget_file if budget_file is not None else find_budget_file(Path.cwd())
    parsed = read_budget_file(path)
    click.echo(f"budgets: {path} ({len(parsed.budgets)} in {parsed.table})", err=True)
    checks = check_budgets(
        parsed.budgets, progress=lambda line: click.echo(line, err=True), trees=tree_of
    )

    def render(kind: str, to_stdout: bool) -> str:
        return budget_output(checks, str(path), kind, *terminal(to_stdout))

    write_outputs(plan, render)
    publish(lambda: render("markdown", False), MARKER, pull_request)
    verdict(failures(checks), warn_only, "budget exceeded", f"all {len(checks)} budget limits pass")
