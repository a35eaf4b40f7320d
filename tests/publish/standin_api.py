"""A stand-in for the GitHub REST API, and the synthetic libraries the publishing tests compare.

The stand-in is ``http.server`` on 127.0.0.1 in a thread: it keeps issue comments (each with its
author's login and id, as the REST API lists them), workflow runs and artifacts in memory,
answers GraphQL's ``viewer`` with the token's account (``BOT`` unless told otherwise), pages
lists (``Link: <...>; rel="next"``, at most ``page_size`` per page whatever ``per_page`` asks),
checks the bearer token, records every request, and refuses a method with a chosen status when
told to, or hands a request to a hostile ``answer`` of the test's. No request leaves the machine.
"""

from __future__ import annotations

import json
import re
from collections.abc import Callable
from dataclasses import dataclass, field
from http.server import BaseHTTPRequestHandler
from typing import Any

__all__ = ["BASE", "BOT", "HEAD", "PR", "REPOSITORY", "TOKEN", "StandIn", "handler", "library"]
from urllib.parse import parse_qs, urlencode, urlsplit

from synthetic import new_function, new_library

from builder.metallib import library_bytes

TOKEN = "ghs_standin_token_0123456789"
BOT: dict[str, Any] = {"login": "github-actions[bot]", "databaseId": 41898282}
"""The account a workflow's GITHUB_TOKEN writes comments as (its REST ``user.id`` is the
GraphQL ``databaseId``)."""
REPOSITORY = "octo/metal"
PR = 17
BASE = [
    ("v_copyfloat32float32", 300),
    ("vv_Addfloat32", 500),
    ("vv_Addfloat16", 450),
    ("steel_gemm_fused_nn_float16_float16_bm64_bn64", 2000),
]
HEAD = [
    ("v_copyfloat32float32", 340),
    ("vv_Addfloat32", 500),
    ("steel_gemm_fused_nn_float16_float16_bm64_bn64", 2000),
    ("rope_float32", 700),
]


def library(functions: list[tuple[str, int]]) -> bytes:
    parts = []
    for name, size in functions:
        seed = name.encode() * (size // len(name) + 1)
        parts.append(new_function(name, seed[:size], reflection=seed[:16]))
    return library_bytes(new_library(parts))


@dataclass
class StandIn:
    """What the stand-in API holds and saw."""

    url: str = ""
    comments: list[dict[str, Any]] = field(default_factory=list)
    requests: list[tuple[str, str]] = field(default_factory=list)
    page_size: int = 100
    refuse: dict[str, int] = field(default_factory=dict)
    """HTTP method -> status to answer it with."""
    next_link: Callable[[str], str] | None = None
    """Overrides the next page's URL (to point it elsewhere)."""
    next_id: int = 9000
    answer: Callable[[BaseHTTPRequestHandler], None] | None = None
    """Answers every request instead of the API (a hostile server)."""
    repository_id: int = 4242
    runs: dict[int, dict[str, Any]] = field(default_factory=dict)
    artifacts: list[dict[str, Any]] = field(default_factory=list)
    """Newest first, as the API lists them."""

    viewer: dict[str, Any] = field(default_factory=lambda: dict(BOT))
    """Who the token is: what GraphQL's ``viewer`` answers (a workflow's GITHUB_TOKEN)."""
    users: dict[str, int] = field(default_factory=lambda: {BOT["login"]: BOT["databaseId"]})
    """Login -> user id of every account that wrote a comment."""

    def add(self, body: str, login: str = "someone") -> int:
        """A comment written by ``login`` (a new account, with its own id, unless known)."""
        self.next_id += 1
        user_id = self.users.setdefault(login, 100 + len(self.users))
        user = {"login": login, "id": user_id, "type": "Bot" if "[bot]" in login else "User"}
        self.comments.append({"id": self.next_id, "body": body, "user": user})
        return self.next_id

    def mine(self, body: str) -> int:
        """A comment written by the token's own account (as an earlier run made it)."""
        self.users[self.viewer["login"]] = self.viewer["databaseId"]
        return self.add(body, self.viewer["login"])

    def upload(
        self,
        name: str,
        *,
        event: str = "push",
        branch: str = "main",
        head_repository: int | None = None,
        expired: bool = False,
    ) -> tuple[int, int]:
        """A workflow run of ``event`` on ``branch`` (whose head is ``head_repository``, by
        default this repository: a fork's id otherwise) that uploaded artifact ``name``, listed
        as the newest; returns the run's id and the artifact's."""
        self.next_id += 1
        head = self.repository_id if head_repository is None else head_repository
        run: dict[str, Any] = {
            "id": self.next_id,
            "event": event,
            "head_branch": branch,
            "head_sha": f"{self.next_id:040x}",
            "head_repository": {"id": head, "full_name": f"repo{head}/metal"},
            "repository": {"id": self.repository_id, "full_name": REPOSITORY},
        }
        self.runs[run["id"]] = run
        self.next_id += 1
        self.artifacts.insert(
            0,
            {
                "id": self.next_id,
                "name": name,
                "expired": expired,
                "workflow_run": {
                    "id": run["id"],
                    "repository_id": self.repository_id,
                    "head_repository_id": head,
                    "head_branch": branch,
                    "head_sha": run["head_sha"],
                },
            },
        )
        return run["id"], self.next_id


_LIST = re.compile(rf"^/repos/{REPOSITORY}/issues/(\d+)/comments$")
_EDIT = re.compile(rf"^/repos/{REPOSITORY}/issues/comments/(\d+)$")
_RUN = re.compile(rf"^/repos/{REPOSITORY}/actions/runs/(\d+)$")


def handler(state: StandIn) -> type[BaseHTTPRequestHandler]:
    class Handler(BaseHTTPRequestHandler):
        def log_message(self, *args: Any) -> None:  # keep test output clean
            pass

        def _reply(self, status: int, body: Any, headers: dict[str, str] | None = None) -> None:
            data = json.dumps(body).encode()
            self.send_response(status)
            self.send_header("Content-Type", "application/json")
            self.send_header("Content-Length", str(len(data)))
            for key, value in (headers or {}).items():
                self.send_header(key, value)
            self.end_headers()
            self.wfile.write(data)

        def _page(self, rows: list[Any], wrap: Callable[[list[Any]], Any] = list) -> None:
            url = urlsplit(self.path)
            query = parse_qs(url.query)
            size = min(int(query.get("per_page", ["30"])[0]), state.page_size)
            page = int(query.get("page", ["1"])[0])
            headers = {}
            if page * size < len(rows):
                kept = {k: v[0] for k, v in query.items() if k != "page"}
                nxt = (
                    f"{state.url}{url.path}?{urlencode({**kept, 'per_page': size})}&page={page + 1}"
                )
                nxt = state.next_link(nxt) if state.next_link else nxt
                headers["Link"] = f'<{nxt}>; rel="next", <{state.url}{url.path}>; rel="first"'
            self._reply(200, wrap(rows[(page - 1) * size : page * size]), headers)

        def _handle(self, method: str) -> None:
            url = urlsplit(self.path)
            state.requests.append((method, self.path))
            if state.answer is not None:
                return state.answer(self)
            length = int(self.headers.get("Content-Length") or 0)
            payload: Any = json.loads(self.rfile.read(length)) if length else None
            if self.headers.get("Authorization") != f"Bearer {TOKEN}":
                return self._reply(401, {"message": "Bad credentials"})
            if method in state.refuse:
                return self._reply(
                    state.refuse[method], {"message": "Resource not accessible by integration"}
                )
            listing, edit = _LIST.match(url.path), _EDIT.match(url.path)
            run = _RUN.match(url.path)
            if method == "GET" and listing and int(listing.group(1)) == PR:
                return self._page(state.comments)
            if method == "GET" and url.path == f"/repos/{REPOSITORY}":
                return self._reply(200, {"id": state.repository_id, "full_name": REPOSITORY})
            if method == "GET" and url.path == f"/repos/{REPOSITORY}/actions/artifacts":
                name = parse_qs(url.query).get("name", [None])[0]
                rows = [a for a in state.artifacts if name is None or a["name"] == name]
                return self._page(rows, lambda page: {"total_count": len(rows), "artifacts": page})
            if method == "GET" and run and int(run.group(1)) in state.runs:
                return self._reply(200, state.runs[int(run.group(1))])
            if method == "POST" and url.path == "/graphql":
                if "viewer" not in str(payload.get("query")):
                    return self._reply(200, {"errors": [{"message": "unexpected query"}]})
                return self._reply(200, {"data": {"viewer": state.viewer}})
            if method == "POST" and listing and int(listing.group(1)) == PR:
                new = state.mine(payload["body"])
                return self._reply(
                    201,
                    {
                        "id": new,
                        "body": payload["body"],
                        "html_url": f"https://github.test/{REPOSITORY}/pull/{PR}#issuecomment-{new}",
                    },
                )
            if method == "PATCH" and edit:
                for comment in state.comments:
                    if comment["id"] == int(edit.group(1)):
                        comment["body"] = payload["body"]
                        return self._reply(200, {**comment, "html_url": "https://github.test/c"})
            return self._reply(404, {"message": "Not Found"})

        def do_GET(self) -> None:
            self._handle("GET")

        def do_POST(self) -> None:
            self._handle("POST")

        def do_PATCH(self) -> None:
            self._handle("PATCH")

    return Handler
