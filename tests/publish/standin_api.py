"""A stand-in for the GitHub REST API, and the synthetic libraries the publishing tests compare.

The stand-in is ``http.server`` on 127.0.0.1 in a thread: it keeps issue comments in memory,
pages them (``Link: <...>; rel="next"``, at most ``page_size`` per page whatever ``per_page``
asks), checks the bearer token, records every request, and refuses a method with a chosen status
when told to. No request leaves the machine.
"""

from __future__ import annotations

import json
import re
from collections.abc import Callable
from dataclasses import dataclass, field
from http.server import BaseHTTPRequestHandler
from typing import Any

__all__ = ["BASE", "HEAD", "PR", "REPOSITORY", "TOKEN", "StandIn", "handler", "library"]
from urllib.parse import parse_qs, urlsplit

from builder.metallib import library_bytes, new_function, new_library

TOKEN = "ghs_standin_token_0123456789"
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

    def add(self, body: str, login: str = "someone") -> int:
        self.next_id += 1
        self.comments.append({"id": self.next_id, "body": body, "user": {"login": login}})
        return self.next_id


_LIST = re.compile(rf"^/repos/{REPOSITORY}/issues/(\d+)/comments$")
_EDIT = re.compile(rf"^/repos/{REPOSITORY}/issues/comments/(\d+)$")


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

        def _handle(self, method: str) -> None:
            url = urlsplit(self.path)
            state.requests.append((method, self.path))
            length = int(self.headers.get("Content-Length") or 0)
            payload = json.loads(self.rfile.read(length)) if length else None
            if self.headers.get("Authorization") != f"Bearer {TOKEN}":
                return self._reply(401, {"message": "Bad credentials"})
            if method in state.refuse:
                return self._reply(
                    state.refuse[method], {"message": "Resource not accessible by integration"}
                )
            listing, edit = _LIST.match(url.path), _EDIT.match(url.path)
            if method == "GET" and listing and int(listing.group(1)) == PR:
                query = parse_qs(url.query)
                size = min(int(query.get("per_page", ["30"])[0]), state.page_size)
                page = int(query.get("page", ["1"])[0])
                rows = state.comments[(page - 1) * size : page * size]
                headers = {}
                if page * size < len(state.comments):
                    nxt = f"{state.url}{url.path}?per_page={size}&page={page + 1}"
                    nxt = state.next_link(nxt) if state.next_link else nxt
                    headers["Link"] = f'<{nxt}>; rel="next", <{state.url}{url.path}>; rel="first"'
                return self._reply(200, rows, headers)
            if method == "POST" and listing and int(listing.group(1)) == PR:
                new = state.add(payload["body"], "github-actions[bot]")
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
