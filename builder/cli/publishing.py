"""What the commands that publish (``report``, ``compare``, ``budget``, ``history``) share: where
each output goes, the pull request to comment on, and the step summary and comment at the end.

The decisions that can fail on bad usage (an unknown ``-o`` extension, a missing GITHUB_TOKEN)
are taken before anything is measured.

``base-artifact``: which workflow run's artifact holds the base report a pull request is
compared with (``builder.publish.github``: pushes of this repository only, never a fork's
branch that happens to be named ``main``).

It prints ``run-id=N`` and ``artifact-id=N`` lines, the format of ``$GITHUB_OUTPUT``, so that a
step can append them there and hand the run to ``actions/download-artifact`` (action.yml does).
"""

from __future__ import annotations

import os
import sys
from collections.abc import Callable, Mapping, Sequence
from typing import TYPE_CHECKING, TypeVar

import click

if TYPE_CHECKING:
    from builder.publish.github import PullRequest
    from builder.publish.outputs import Destination

__all__ = [
    "base_artifact_command",
    "deliver",
    "emit_json",
    "format_option",
    "given",
    "output_options",
    "output_plan",
    "publish",
    "pull_request_for",
    "say",
    "terminal",
    "verdict",
]


F = TypeVar("F", bound=Callable[..., object])


def say(line: str) -> None:
    """One line for the person watching, on stderr (progress, notes): stdout stays data."""
    click.echo(line, err=True)


def emit_json(document: Mapping[str, object]) -> None:
    """One compact JSON document on stdout (the C encoder: ``indent`` would force the slow one;
    no cycle check, as documents are plain trees: tens of thousands of kernels encode ~25%
    faster without it). The machine output of ``list``, ``verify``, ``kernels`` and ``check``."""
    from builder.files.dataclass_json import dumps

    sys.stdout.write(dumps(document, separators=(",", ":"), check_circular=False) + "\n")


def format_option(choices: Sequence[str], help_text: str) -> Callable[[F], F]:
    """``--format`` of a command that prints to stdout; the first choice is the default."""
    return click.option(
        "--format",
        "fmt",
        type=click.Choice(list(choices)),
        default=choices[0],
        show_default=True,
        help=help_text,
    )


def output_options(formats: Sequence[str], format_help: str) -> Callable[[F], F]:
    """``--format`` (one of ``formats``, the first by default) and the repeatable ``-o FILE``,
    spelled and explained the same way by every command that publishes; the extensions listed
    in ``-o``'s help are the ones ``builder.publish.outputs`` maps to ``formats``."""
    from builder.publish.outputs import EXTENSIONS

    first: dict[str, str] = {}  # format -> its first extension
    for extension, name in EXTENSIONS.items():
        if name in formats:
            first.setdefault(name, extension)
    shown = " ".join(first.values())
    as_format = format_option(formats, format_help)
    to_files = click.option(
        "-o",
        "--output",
        "outputs",
        type=click.Path(dir_okay=False),
        multiple=True,
        metavar="FILE",
        help="Write to FILE (atomically) instead of stdout. Repeatable: each file's format "
        f"comes from its extension ({shown}).",
    )

    def add(func: F) -> F:
        return as_format(to_files(func))

    return add


def given(name: str) -> bool:
    """Whether option ``name`` was given on the command line (not its default)."""
    source = click.get_current_context().get_parameter_source(name)
    return source is not click.core.ParameterSource.DEFAULT


def output_plan(outputs: Sequence[str], fmt: str) -> list[Destination]:
    """Where each rendering goes (``builder.publish.outputs.plan_outputs``), in the formats the
    command's ``--format`` offers; ``--format`` counts as given when it was on the command line."""
    from builder.publish.outputs import plan_outputs

    ctx = click.get_current_context()
    choice = next(p.type for p in ctx.command.params if p.name == "fmt")
    assert isinstance(choice, click.Choice)  # format_option's
    return plan_outputs(outputs, fmt, explicit=given("fmt"), formats=choice.choices)


def deliver(
    plan: Sequence[Destination],
    view: Callable[[str, bool, int | None], str],
    inputs: Sequence[str | None] = (),
) -> Callable[[], str]:
    """Write each output of ``plan`` (``builder.publish.outputs.write_outputs``) as
    ``view(format, colour, width)`` renders it, with the terminal's colour and width for stdout
    only (:func:`terminal`); returns the markdown rendering, for :func:`publish`."""
    from builder.publish.outputs import write_outputs

    write_outputs(plan, lambda kind, to_stdout: view(kind, *terminal(to_stdout)), inputs)
    return lambda: view("markdown", False, None)


def pull_request_for(wanted: bool) -> PullRequest | None:
    """The pull request ``--github-comment`` posts to (None without the flag)."""
    if not wanted:
        return None
    from builder.publish.github import pull_request_from_env

    return pull_request_from_env()


def publish(markdown: Callable[[], str], marker: str, pull_request: PullRequest | None) -> None:
    """The step summary (once per run) and the sticky comment; what was done, on stderr. The
    markdown is rendered only when one of them wants it."""
    from builder.publish.outputs import STEP_SUMMARY, publish_markdown

    if pull_request is None and not os.environ.get(STEP_SUMMARY):
        return
    for line in publish_markdown(markdown(), marker=marker, pull_request=pull_request):
        say(line)


def terminal(to_stdout: bool) -> tuple[bool, int | None]:
    """Colour (stdout is a terminal and NO_COLOR is unset) and width for a rendering: the
    terminal's (80 to 160 columns) on a terminal; None for a pipe or a file, which are never
    wrapped (each table as wide as its cells, each line whole)."""
    from builder.cli.console import stdout_color, stdout_table_width

    return (stdout_color(), stdout_table_width()) if to_stdout else (False, None)


def verdict(
    failed: Sequence[str],
    warn_only: bool,
    what: str,
    passed: str | None,
    shown: Callable[[str], str] = str,
) -> None:
    """End a checking command: exit 1 naming every failed check (``--warn-only``: say so on
    stderr, through ``shown``, and exit 0), else print ``passed`` (when not None) on stderr."""
    from builder.errors import CheckFailed

    if failed and warn_only:
        say(f"warning: {what} (--warn-only: exit 0): " + shown("; ".join(failed)))
    elif failed:
        raise CheckFailed(f"{what}: " + "; ".join(failed))
    elif passed is not None:
        say(passed)


@click.command(
    "base-artifact",
    epilog="""\b
In a GitHub Actions step, with GITHUB_TOKEN set and 'permissions: actions: read'.
Examples:
  metallib-builder base-artifact metallib-size-main --branch main >> "$GITHUB_OUTPUT"
""",
)
@click.argument("name")
@click.option(
    "--branch",
    required=True,
    metavar="BRANCH",
    help="The base branch: only an artifact uploaded by a push to it counts.",
)
def base_artifact_command(name: str, branch: str) -> None:
    """Find the newest artifact NAME that a push to BRANCH of this repository uploaded.

    Runs of pull requests (from forks or not), of other branches and of other events are never
    taken, whatever their branch is named. Needs GITHUB_TOKEN, GITHUB_REPOSITORY and
    GITHUB_API_URL; exit 2 when there is no such artifact.
    """
    from builder.publish.github import find_base_artifact
    from builder.publish.rest import api_from_env

    api = api_from_env(os.environ, "base-artifact")
    found = find_base_artifact(api, name, branch)
    click.echo(f"run-id={found.run_id}\nartifact-id={found.artifact_id}")
    say(
        f"base: artifact {found.name!r} #{found.artifact_id} of run {found.run_id} "
        f"(a push to {found.branch} of {api.repository}, commit {found.head_sha[:12] or '?'})"
    )
