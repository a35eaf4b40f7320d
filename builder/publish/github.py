"""The sticky pull-request comment, through the GitHub REST API (``urllib``, standard library only).

One comment per pull request and marker: the first run creates it, later runs find it by the
hidden marker its body starts with (``<!-- metallib-builder:size-comment -->``) and edit it, so a
pull request shows the current figures once instead of one comment per push. Everything comes
from the environment a GitHub Actions job has: ``GITHUB_TOKEN`` (passed by the workflow),
``GITHUB_REPOSITORY``, ``GITHUB_API_URL`` and the pull request's number in the event payload at
``GITHUB_EVENT_PATH``.

The token goes to ``GITHUB_API_URL`` only: redirects are not followed and a pagination link to
another origin is refused. Every failure (a missing variable, a refused request, an unreachable
server, a reply that is not the expected JSON) is an ``OutputError`` or ``UsageError`` with one
line naming what was attempted and what to change; the token is never printed. Reading is bounded:
at most ``MAX_PAGES`` pages of ``PER_PAGE`` comments, replies of at most ``MAX_REPLY`` bytes,
``TIMEOUT_S`` per request.
"""

from __future__ import annotations

import json
import os
import re
import urllib.error
import urllib.parse
import urllib.request
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any, NamedTuple

from builder.errors import OutputError, UsageError
from builder.files.reading import read_json
from builder.render.text import visible

__all__ = [
    "ENVIRONMENT",
    "Posted",
    "PullRequest",
    "find_comment",
    "post_sticky_comment",
    "pull_request_from_env",
]

ENVIRONMENT = ("GITHUB_TOKEN", "GITHUB_REPOSITORY", "GITHUB_API_URL", "GITHUB_EVENT_PATH")
PER_PAGE = 100
MAX_PAGES = 100
MAX_REPLY = 16 << 20
TIMEOUT_S = 30.0
_REPOSITORY = re.compile(r"^[A-Za-z0-9_.-]+/[A-Za-z0-9_.-]+$")
_NEXT = re.compile(r'<([^>]*)>\s*;\s*rel="?next"?')
_HINTS = {
    401: "the token was not accepted (pass GITHUB_TOKEN: ${{ github.token }} to the step)",
    403: "the token may not write comments: give the job 'permissions: pull-requests: write' "
    "(pull requests from forks get a read-only token)",
    404: "no such repository or pull request for this token (check GITHUB_REPOSITORY and the "
    "event's pull request number)",
}


@dataclass(frozen=True)
class PullRequest:
    """Where the comment goes, and the token that may write it (never shown)."""

    api: str
    """``GITHUB_API_URL`` without a trailing slash, e.g. ``https://api.github.com``."""
    repository: str
    """``owner/name``."""
    number: int
    token: str = field(repr=False)


class Posted(NamedTuple):
    """What ``post_sticky_comment`` did."""

    action: str
    """``created`` or ``updated``."""
    comment_id: int
    url: str | None
    """The comment's page (``html_url``), when the API gave one."""


def pull_request_from_env(environ: Mapping[str, str] = os.environ) -> PullRequest:
    """The pull request of the running workflow; UsageError (exit 2) naming what is missing."""
    missing = [name for name in ENVIRONMENT if not environ.get(name)]
    if missing:
        raise UsageError(
            f"--github-comment needs {', '.join(missing)} in the environment (GitHub Actions sets "
            "all but GITHUB_TOKEN in a pull_request workflow; pass it with "
            "'env: GITHUB_TOKEN: ${{ github.token }}')"
        )
    repository, api = environ["GITHUB_REPOSITORY"], environ["GITHUB_API_URL"].rstrip("/")
    if not _REPOSITORY.match(repository):
        raise UsageError(f"GITHUB_REPOSITORY {visible(repository)!r} is not OWNER/NAME")
    if urllib.parse.urlsplit(api).scheme not in ("http", "https"):
        raise UsageError(f"GITHUB_API_URL {visible(api)!r} is not an http(s) URL")
    return PullRequest(
        api, repository, _event_number(environ["GITHUB_EVENT_PATH"]), environ["GITHUB_TOKEN"]
    )


def _event_number(path: str) -> int:
    """The pull request's number in the event payload (``pull_request`` events, or an
    ``issue_comment`` on a pull request)."""
    event = read_json(path, "the event (GITHUB_EVENT_PATH)")  # a regular file, bounded
    number = None
    if isinstance(event, dict):
        pull = event.get("pull_request")
        issue = event.get("issue")
        if isinstance(pull, dict):
            number = pull.get("number")
        elif isinstance(issue, dict) and "pull_request" in issue:
            number = issue.get("number")
    if isinstance(number, bool) or not isinstance(number, int) or number <= 0:
        raise UsageError(
            f"GITHUB_EVENT_PATH {path}: not a pull request event (no "
            "pull_request.number); post the comment from a pull_request workflow"
        )
    return number


class _NoRedirect(urllib.request.HTTPRedirectHandler):
    """Redirects are refused: the Authorization header must reach GITHUB_API_URL only."""

    def redirect_request(self, *args: Any, **kwargs: Any) -> None:
        return None


_OPENER = urllib.request.build_opener(_NoRedirect)


def _call(
    pr: PullRequest, doing: str, method: str, url: str, body: dict[str, Any] | None = None
) -> tuple[Any, str | None]:
    """One API request; the decoded JSON reply and the next page's URL (``Link: rel="next"``)."""
    request = urllib.request.Request(
        url,
        method=method,
        data=None if body is None else json.dumps(body).encode("utf-8"),
        headers={
            "Accept": "application/vnd.github+json",
            "Authorization": f"Bearer {pr.token}",
            "X-GitHub-Api-Version": "2022-11-28",
            "User-Agent": "metallib-builder",
            **({} if body is None else {"Content-Type": "application/json"}),
        },
    )
    try:
        with _OPENER.open(request, timeout=TIMEOUT_S) as reply:
            raw = reply.read(MAX_REPLY + 1)
            link = reply.headers.get("Link")
    except urllib.error.HTTPError as exc:
        raise OutputError(f"GitHub API: cannot {doing}: {_refusal(exc)}") from None
    except (urllib.error.URLError, OSError) as exc:
        reason = getattr(exc, "reason", None) or exc
        raise OutputError(
            f"GitHub API: cannot {doing}: {method} {pr.api} failed: {visible(str(reason))}"
        ) from None
    if len(raw) > MAX_REPLY:
        raise OutputError(f"GitHub API: cannot {doing}: reply over {MAX_REPLY:,} bytes")
    try:
        data = json.loads(raw) if raw else None
    except ValueError:
        raise OutputError(f"GitHub API: cannot {doing}: the reply is not JSON") from None
    match = _NEXT.search(link or "")
    return data, match.group(1) if match else None


def _refusal(exc: urllib.error.HTTPError) -> str:
    """``HTTP 403 (Resource not accessible by integration): <what to change>`` in one line."""
    try:
        message = json.loads(exc.read(64 << 10)).get("message")
    except (ValueError, AttributeError, OSError):
        message = None
    said = f" ({visible(str(message))[:200]})" if message else ""
    if 300 <= exc.code < 400:
        hint = "redirects are not followed (the token is sent to GITHUB_API_URL only)"
    else:
        hint = _HINTS.get(exc.code, "")
    return f"HTTP {exc.code}{said}" + (f": {hint}" if hint else "")


def _same_origin(url: str, api: str) -> bool:
    a, b = urllib.parse.urlsplit(url), urllib.parse.urlsplit(api)
    return (a.scheme, a.netloc) == (b.scheme, b.netloc)


def find_comment(pr: PullRequest, marker: str) -> int | None:
    """The id of the pull request's first comment whose body starts with ``marker``."""
    url: str | None = (
        f"{pr.api}/repos/{pr.repository}/issues/{pr.number}/comments?per_page={PER_PAGE}"
    )
    doing = f"list the comments of pull request #{pr.number} in {pr.repository}"
    for _ in range(MAX_PAGES):
        if url is None:
            return None
        comments, url = _call(pr, doing, "GET", url)
        if not isinstance(comments, list):
            raise OutputError(f"GitHub API: cannot {doing}: the reply is not a list of comments")
        for comment in comments:
            body = comment.get("body") if isinstance(comment, dict) else None
            if isinstance(body, str) and body.lstrip().startswith(marker):
                found = comment.get("id")
                if isinstance(found, int) and not isinstance(found, bool):
                    return found
        if url is not None and not _same_origin(url, pr.api):
            raise OutputError(
                f"GitHub API: cannot {doing}: the next page is on another server "
                f"({visible(url)[:200]}); the token is sent to GITHUB_API_URL only"
            )
    raise OutputError(f"GitHub API: cannot {doing}: more than {MAX_PAGES * PER_PAGE:,} comments")


def post_sticky_comment(pr: PullRequest, body: str, marker: str) -> Posted:
    """Edit the comment that starts with ``marker``, or create it; ``body`` must start with the
    marker so that the next run finds it."""
    if not body.lstrip().startswith(marker):
        raise ValueError("the comment body must start with its marker")
    found = find_comment(pr, marker)
    if found is None:
        reply, _ = _call(
            pr,
            f"comment on pull request #{pr.number} in {pr.repository}",
            "POST",
            f"{pr.api}/repos/{pr.repository}/issues/{pr.number}/comments",
            {"body": body},
        )
        action = "created"
    else:
        reply, _ = _call(
            pr,
            f"update comment {found} in {pr.repository}",
            "PATCH",
            f"{pr.api}/repos/{pr.repository}/issues/comments/{found}",
            {"body": body},
        )
        action = "updated"
    reply = reply if isinstance(reply, dict) else {}
    comment_id = reply.get("id", found)
    url = reply.get("html_url")
    return Posted(
        action,
        comment_id if isinstance(comment_id, int) else -1,
        url if isinstance(url, str) else None,
    )
