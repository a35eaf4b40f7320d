"""``base-artifact``: which workflow run's artifact holds the base report a pull request is
compared with (``builder.publish.github``: pushes of this repository only, never a fork's
branch that happens to be named ``main``).

It prints ``run-id=N`` and ``artifact-id=N`` lines, the format of ``$GITHUB_OUTPUT``, so that a
step can append them there and hand the run to ``actions/download-artifact`` (action.yml does).
"""

from __future__ import annotations

import os

import click

__all__ = ["base_artifact_command"]


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
    click.echo(
        f"base: artifact {found.name!r} #{found.artifact_id} of run {found.run_id} "
        f"(a push to {found.branch} of {api.repository}, commit {found.head_sha[:12] or '?'})",
        err=True,
    )
