"""The sticky pull-request comment, through the GitHub REST API (``rest.py``, standard library).

One comment per pull request and marker: the first run creates it, later runs find it by the
hidden marker its body starts with (``<!-- metallib-builder:size-comment -->``) and edit it, so a
pull request shows the current figures once instead of one comment per push. Only a comment the
token's own account wrote is edited: anyone may post a comment that starts with the marker, and
editing theirs would put the figures under their name (or fail the step where the token may not
edit it). Who the token is comes from GraphQL's ``viewer``, which answers for every kind of token
(REST ``GET /user`` refuses the ``GITHUB_TOKEN`` of a workflow). Everything comes
from the environment a GitHub Actions job has: ``GITHUB_TOKEN`` (passed by the workflow),
``GITHUB_REPOSITORY``, ``GITHUB_API_URL`` and the pull request's number in the event payload at
``GITHUB_EVENT_PATH``.

Every request goes through ``rest.call``: the token to ``GITHUB_API_URL`` only, replies bounded
in size and nesting, a total deadline per request. Every failure (a missing variable, a refused
request, an unreachable server, a reply that is not the expected JSON) is an ``OutputError`` or
``UsageError`` with one line naming what was attempted and what to change; the token is never
printed. Reading is bounded: at most ``MAX_PAGES`` pages of ``PER_PAGE`` comments.

The report a pull request is compared with: the newest artifact that this repository's own
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

import os
import urllib.parse
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any, NamedTuple

from builder.errors import OutputError, UsageError
from builder.files.bounds import json_int
from builder.files.reading import read_json
from builder.publish.rest import ENVIRONMENT as API_ENVIRONMENT
from builder.publish.rest import Api, api_from_env, call, pages
from builder.render.text import visible

__all__ = [
    "ENVIRONMENT",
    "MAX_RUNS",
    "BaseArtifact",
    "Identity",
    "Posted",
    "PullRequest",
    "find_base_artifact",
    "find_comment",
    "is_own_push",
    "post_sticky_comment",
    "pull_request_from_env",
    "token_identity",
    "written_by",
]


ENVIRONMENT = (*API_ENVIRONMENT, "GITHUB_EVENT_PATH")
PER_PAGE = 100
MAX_PAGES = 100
_HINTS = {
    403: "the token may not write comments: give the job 'permissions: pull-requests: write' "
    "(pull requests from forks get a read-only token)",
    404: "no such repository or pull request for this token (check GITHUB_REPOSITORY and the "
    "event's pull request number)",
}


@dataclass(frozen=True)
class PullRequest:
    """Where the comment goes: the API (with the token that may write it) and the number."""

    api: Api
    number: int

    @property
    def repository(self) -> str:
        """``owner/name``."""
        return self.api.repository


class Posted(NamedTuple):
    """What ``post_sticky_comment`` did."""

    action: str
    """``created`` or ``updated``."""
    comment_id: int
    url: str | None
    """The comment's page (``html_url``), when the API gave one."""


def pull_request_from_env(environ: Mapping[str, str] = os.environ) -> PullRequest:
    """The pull request of the running workflow; UsageError (exit 2) naming what is missing."""
    api = api_from_env(
        environ,
        "--github-comment",
        also=("GITHUB_EVENT_PATH",),
        where=" in a pull_request workflow",
    )
    return PullRequest(api, _eventjson_int(environ["GITHUB_EVENT_PATH"]))


def _eventjson_int(path: str) -> int:
    """The pull request's number in the event payload (``pull_request`` events, or an
    ``issue_comment`` on a pull request)."""
    event = read_json(path, "the event (GITHUB_EVENT_PATH)")  # a regular file, bounded
    number = None
    if isinstance(event, dict):
        pull = event.get("pull_request")
        issue = event.get("issue")
        if isinstance(pull, dict):
            number = json_int(pull.get("number"))
        elif isinstance(issue, dict) and "pull_request" in issue:
            number = json_int(issue.get("number"))
    if number is None or number <= 0:
        raise UsageError(
            f"GITHUB_EVENT_PATH {path}: not a pull request event (no "
            "pull_request.number); post the comment from a pull_request workflow"
        )
    return number


class Identity(NamedTuple):
    """The account a token acts as: a person's for a personal token, ``github-actions[bot]``
    for a workflow's ``GITHUB_TOKEN``, ``SLUG[bot]`` for a GitHub App's token."""

    login: str
    user_id: int | None
    """The account's id (the ``user.id`` of the comments it wrote), when the API gave one."""


_VIEWER = "query { viewer { login databaseId } }"


def token_identity(api: Api) -> Identity:
    """Who ``api``'s token is, from GraphQL's ``viewer`` (one request; OutputError naming what
    failed)."""
    doing = "learn which account the token is (GraphQL viewer)"
    reply, _ = call(api, doing, "POST", api.graphql_url, {"query": _VIEWER})
    data = reply.get("data") if isinstance(reply, dict) else None
    viewer = data.get("viewer") if isinstance(data, dict) else None
    login = viewer.get("login") if isinstance(viewer, dict) else None
    if not isinstance(login, str) or not login:
        errors = reply.get("errors") if isinstance(reply, dict) else None
        first = errors[0] if isinstance(errors, list) and errors else None
        said = first.get("message") if isinstance(first, dict) else None
        why = f": {visible(str(said))[:200]}" if said else ""
        raise OutputError(f"GitHub API: cannot {doing}: the reply names no login{why}")
    return Identity(login, json_int(viewer.get("databaseId")) if isinstance(viewer, dict) else None)


def written_by(comment: Mapping[str, object], me: Identity) -> bool:
    """Whether ``comment`` (as the REST API lists it) was written by ``me``: its ``user.id``
    equals the token's id, or, when either id is missing, its ``user.login`` equals the token's
    login (logins are unique, and a ``[bot]`` login cannot be taken by a person)."""
    user = comment.get("user")
    if not isinstance(user, dict):
        return False
    their_id = json_int(user.get("id"))
    if me.user_id is not None and their_id is not None:
        return their_id == me.user_id
    return user.get("login") == me.login


def find_comment(pr: PullRequest, marker: str) -> int | None:
    """The id of the pull request's first comment whose body starts with ``marker`` and that
    the token's own account wrote; comments by anyone else are passed over. Who the token is
    is asked only once a comment with the marker turns up (a first run makes no such request)."""
    url = pr.api.repo_url(f"issues/{pr.number}/comments?per_page={PER_PAGE}")
    doing = f"list the comments of pull request #{pr.number} in {pr.repository}"
    me: Identity | None = None
    for comments in pages(pr.api, doing, url, MAX_PAGES, _HINTS):
        if not isinstance(comments, list):
            raise OutputError(f"GitHub API: cannot {doing}: the reply is not a list of comments")
        for comment in comments:
            body = comment.get("body") if isinstance(comment, dict) else None
            if not (isinstance(comment, dict) and isinstance(body, str)):
                continue
            if not body.lstrip().startswith(marker):
                continue
            me = me or token_identity(pr.api)
            found = json_int(comment.get("id"))
            if found is not None and written_by(comment, me):
                return found
    return None


def post_sticky_comment(pr: PullRequest, body: str, marker: str) -> Posted:
    """Edit the token's own comment that starts with ``marker`` (``find_comment``), or create
    it; ``body`` must start with the marker so that the next run finds it."""
    if not body.lstrip().startswith(marker):
        raise ValueError("the comment body must start with its marker")
    found = find_comment(pr, marker)
    if found is None:
        what, method, path = (
            f"comment on pull request #{pr.number}",
            "POST",
            f"issues/{pr.number}/comments",
        )
        action = "created"
    else:
        what, method, path = f"update comment {found}", "PATCH", f"issues/comments/{found}"
        action = "updated"
    reply, _ = call(
        pr.api, f"{what} in {pr.repository}", method, pr.api.repo_url(path), {"body": body}, _HINTS
    )
    reply = reply if isinstance(reply, dict) else {}
    comment_id = reply.get("id", found)
    url = reply.get("html_url")
    return Posted(
        action,
        comment_id if isinstance(comment_id, int) else -1,
        url if isinstance(url, str) else None,
    )


ARTIFACT_PAGES = 10
MAX_RUNS = 20
_ARTIFACT_HINTS = {
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


def _id_of(thing: Any) -> int | None:
    return json_int(thing.get("id")) if isinstance(thing, dict) else None


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
        and json_int(run.get("id")) is not None
        and json_int(artifact.get("id")) is not None
        and run.get("head_branch") == branch
        and json_int(run.get("head_repository_id")) == repository_id
        and json_int(run.get("repository_id")) == repository_id
    )


def find_base_artifact(api: Api, name: str, branch: str) -> BaseArtifact:
    """The newest unexpired artifact ``name`` uploaded by a push to ``branch`` of this
    repository; UsageError (exit 2) naming what was found instead when there is none."""
    if not name or not branch:
        raise UsageError("the base artifact needs a name and a branch")
    where = api.repository
    repository, _ = call(
        api, f"read the repository {where}", "GET", api.repo_url(""), None, _ARTIFACT_HINTS
    )
    repository_id = _id_of(repository)
    if repository_id is None:
        raise OutputError(f"GitHub API: cannot read the repository {where}: the reply has no id")
    query = urllib.parse.urlencode({"name": name, "per_page": PER_PAGE})
    doing = f"list the artifacts named {visible(name)!r} of {where}"
    listed = elsewhere = looked_up = 0
    for page in pages(
        api, doing, api.repo_url(f"actions/artifacts?{query}"), ARTIFACT_PAGES, _ARTIFACT_HINTS
    ):
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
                _ARTIFACT_HINTS,
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
