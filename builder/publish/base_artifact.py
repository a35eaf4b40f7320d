"""The report a pull request is compared with: the newest artifact that this repository's own
pushes to the base branch uploaded, found through the GitHub REST API (``rest.py``).

Why so strict: pull requests from forks run their workflows in this repository, so their
artifacts are listed beside main's, and a run's ``head_branch`` is the name of the *fork's*
branch. Selecting by ``head_branch == "main"`` lets anyone open a pull request from a branch
named ``main`` and plant the base every later comparison trusts. A run counts here only when its
``event`` is ``push``, its branch is the base branch, and both its head repository and its
repository are this one, compared by numeric id (a name can be taken again after a rename).

The artifact list gives each artifact's run with its ids and branch, which rules out other
repositories and branches without a request; the run's event needs one look-up per remaining
candidate (at most ``MAX_RUNS``), newest artifact first.
"""

from __future__ import annotations

import urllib.parse
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

from builder.errors import OutputError, UsageError
from builder.publish.rest import Api, call, pages
from builder.render.text import visible

__all__ = ["MAX_RUNS", "BaseArtifact", "find_base_artifact", "is_own_push"]

PER_PAGE = 100
MAX_PAGES = 10
MAX_RUNS = 20
_HINTS = {
    403: "the token may not read this repository's artifacts: give the job "
    "'permissions: actions: read'",
    404: "no such repository for this token (check GITHUB_REPOSITORY)",
}


@dataclass(frozen=True)
class BaseArtifact:
    """The artifact chosen, and the run that uploaded it."""

    name: str
    artifact_id: int
    run_id: int
    branch: str
    head_sha: str


def _number(value: Any) -> int | None:
    return value if isinstance(value, int) and not isinstance(value, bool) else None


def _id_of(thing: Any) -> int | None:
    return _number(thing.get("id")) if isinstance(thing, dict) else None


def is_own_push(run: Mapping[str, Any], repository_id: int, branch: str) -> bool:
    """Whether a workflow run (the REST API's object) is a push to ``branch`` of the repository
    ``repository_id`` itself: not a pull request, not a fork, not another branch."""
    return (
        run.get("event") == "push"
        and run.get("head_branch") == branch
        and _id_of(run.get("head_repository")) == repository_id
        and _id_of(run.get("repository")) == repository_id
    )


def _from_here(artifact: Any, name: str, repository_id: int, branch: str) -> bool:
    """The cheap half of the rule, on the artifact list's own fields: the name, not expired,
    uploaded by a run of this repository on ``branch``."""
    if not isinstance(artifact, dict) or artifact.get("name") != name or artifact.get("expired"):
        return False
    run = artifact.get("workflow_run")
    return (
        isinstance(run, dict)
        and _number(run.get("id")) is not None
        and _number(artifact.get("id")) is not None
        and run.get("head_branch") == branch
        and _number(run.get("head_repository_id")) == repository_id
        and _number(run.get("repository_id")) == repository_id
    )


def find_base_artifact(api: Api, name: str, branch: str) -> BaseArtifact:
    """The newest unexpired artifact ``name`` uploaded by a push to ``branch`` of this
    repository; UsageError (exit 2) naming what was found instead when there is none."""
    if not name or not branch:
        raise UsageError("the base artifact needs a name and a branch")
    where = api.repository
    repository, _ = call(api, f"read the repository {where}", "GET", api.repo_url(""), None, _HINTS)
    repository_id = _id_of(repository)
    if repository_id is None:
        raise OutputError(f"GitHub API: cannot read the repository {where}: the reply has no id")
    query = urllib.parse.urlencode({"name": name, "per_page": PER_PAGE})
    doing = f"list the artifacts named {visible(name)!r} of {where}"
    listed = elsewhere = looked_up = 0
    for page in pages(api, doing, api.repo_url(f"actions/artifacts?{query}"), MAX_PAGES, _HINTS):
        artifacts = page.get("artifacts") if isinstance(page, dict) else None
        if not isinstance(artifacts, list):
            raise OutputError(f"GitHub API: cannot {doing}: the reply has no artifacts list")
        for artifact in artifacts:
            listed += 1
            if not _from_here(artifact, name, repository_id, branch):
                elsewhere += 1
                continue
            run_id = artifact["workflow_run"]["id"]
            if looked_up == MAX_RUNS:
                raise UsageError(
                    f"no artifact {visible(name)!r} from a push to {visible(branch)!r} of {where} "
                    f"among the newest {MAX_RUNS} of its runs on that branch (the others were "
                    "not pushes); save one from a push with 'command: report'"
                )
            looked_up += 1
            run, _ = call(
                api,
                f"read workflow run {run_id} of {where}",
                "GET",
                api.repo_url(f"actions/runs/{run_id}"),
                None,
                _HINTS,
            )
            if isinstance(run, dict) and is_own_push(run, repository_id, branch):
                sha = run.get("head_sha")
                return BaseArtifact(
                    name, artifact["id"], run_id, branch, sha if isinstance(sha, str) else ""
                )
            elsewhere += 1
    raise UsageError(
        f"no artifact {visible(name)!r} from a push to {visible(branch)!r} of {where} "
        f"({listed} listed, {elsewhere} from pull requests, forks, other branches or events, or "
        "expired): save one on that branch with 'command: report' (docs/ci-recipe.md)"
    )
