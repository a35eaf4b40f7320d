"""One GitHub REST API request, bounded: the only module that talks to ``GITHUB_API_URL``.

The sticky comment and the base-artifact look-up (``github.py``) send their requests through
``call``, so each of them gets the same guarantees:

* the token goes to ``GITHUB_API_URL`` only: redirects are not followed, and a next page on
  another origin is refused;
* a reply is at most ``MAX_REPLY`` bytes and is parsed by ``files.bounds.parse_json`` (a reply
  nested 5,000 deep is one line, not a RecursionError);
* a request has a total deadline (``METALLIB_BUILDER_HTTP_DEADLINE``, 30 s): connecting, the
  headers and the body together. A socket timeout alone is per read, so a server that sends a
  byte every 2 s would hold the job for ever; here a timer shuts the connection down when the
  deadline passes, whatever the request is waiting for.

Every failure is an ``OutputError`` (or ``UsageError`` for the environment) of one line naming
what was being done; the token is never printed.
"""

from __future__ import annotations

import http.client
import json
import re
import socket
import threading
import time
import urllib.error
import urllib.parse
import urllib.request
from collections.abc import Callable, Iterator, Mapping, Sequence
from contextlib import suppress
from dataclasses import dataclass, field
from typing import Any

from builder.errors import OutputError, UsageError
from builder.files.bounds import HTTP_DEADLINE, parse_json
from builder.render.text import visible

__all__ = ["ENVIRONMENT", "MAX_REPLY", "Api", "api_from_env", "call", "pages", "same_origin"]

ENVIRONMENT = ("GITHUB_TOKEN", "GITHUB_REPOSITORY", "GITHUB_API_URL")
MAX_REPLY = 16 << 20
_REPOSITORY = re.compile(r"^[A-Za-z0-9_.-]+/[A-Za-z0-9_.-]+$")
_NEXT = re.compile(r'<([^>]*)>\s*;\s*rel="?next"?')


@dataclass(frozen=True)
class Api:
    """Where requests go and the token they carry (never shown)."""

    url: str
    """``GITHUB_API_URL`` without a trailing slash, e.g. ``https://api.github.com``."""
    repository: str
    """``owner/name``."""
    token: str = field(repr=False)

    def repo_url(self, path: str) -> str:
        """``{url}/repos/{owner}/{name}/{path}`` (``path`` without a leading slash)."""
        return f"{self.url}/repos/{self.repository}" + (f"/{path}" if path else "")

    @property
    def graphql_url(self) -> str:
        """The GraphQL endpoint on the same server: ``https://api.github.com/graphql`` for
        ``https://api.github.com``, ``https://HOST/api/graphql`` for a GitHub Enterprise Server's
        ``https://HOST/api/v3`` (GitHub's own layout; the token stays on ``GITHUB_API_URL``'s
        server)."""
        if self.url.endswith("/api/v3"):
            return self.url.removesuffix("/v3") + "/graphql"
        return f"{self.url}/graphql"


def api_from_env(
    environ: Mapping[str, str], needed_by: str, also: Sequence[str] = (), where: str = ""
) -> Api:
    """The API of the running workflow; UsageError (exit 2) naming every variable missing for
    ``needed_by`` (``ENVIRONMENT`` and ``also``). ``where``: the kind of workflow that sets them
    (``" in a pull_request workflow"``)."""
    missing = [name for name in (*ENVIRONMENT, *also) if not environ.get(name)]
    if missing:
        raise UsageError(
            f"{needed_by} needs {', '.join(missing)} in the environment (GitHub Actions sets "
            f"all but GITHUB_TOKEN{where}; pass it with "
            "'env: GITHUB_TOKEN: ${{ github.token }}')"
        )
    repository, url = environ["GITHUB_REPOSITORY"], environ["GITHUB_API_URL"].rstrip("/")
    if not _REPOSITORY.match(repository):
        raise UsageError(f"GITHUB_REPOSITORY {visible(repository)!r} is not OWNER/NAME")
    if urllib.parse.urlsplit(url).scheme not in ("http", "https"):
        raise UsageError(f"GITHUB_API_URL {visible(url)!r} is not an http(s) URL")
    HTTP_DEADLINE.value(environ)  # a bad deadline fails here, before anything is measured
    return Api(url, repository, environ["GITHUB_TOKEN"])


class _Deadline:
    """The end of one request: a timer that shuts its connections down when it passes.

    Shutting a socket down wakes a read blocked on it in the requesting thread (it sees the end
    of the stream or an error), so the request ends at the deadline wherever it was waiting."""

    def __init__(self, seconds: int) -> None:
        self.seconds = seconds
        self.expired = False
        self._sockets: list[socket.socket] = []
        self._lock = threading.Lock()
        self._timer = threading.Timer(seconds, self._expire)
        self._timer.daemon = True
        self._timer.start()

    def watch(self, sock: socket.socket) -> socket.socket:
        """Track ``sock`` (a copy of its descriptor: TLS may wrap and detach the original)."""
        with self._lock:
            copy = sock.dup()
            self._sockets.append(copy)
        if self.expired:
            self._expire()
        return sock

    def _expire(self) -> None:
        with self._lock:
            self.expired = True
            for sock in self._sockets:
                with suppress(OSError):  # already closed by the other side
                    sock.shutdown(socket.SHUT_RDWR)

    def close(self) -> None:
        self._timer.cancel()
        with self._lock:
            for sock in self._sockets:
                sock.close()


def _opener(deadline: _Deadline) -> urllib.request.OpenerDirector:
    """urllib with redirects refused and every connection watched by ``deadline``: each socket
    http.client opens (to the server, or to a proxy; the TLS handshake runs on it too) goes
    through ``_create_connection``, http.client's hook for this."""

    def connect(address: tuple[str, int], timeout: float, source: Any) -> socket.socket:
        return deadline.watch(socket.create_connection(address, timeout, source))

    def watched(kind: type[http.client.HTTPConnection]) -> Callable[..., Any]:
        def connection(host: str, **kwargs: Any) -> http.client.HTTPConnection:
            made = kind(host, **kwargs)
            made._create_connection = connect  # type: ignore[attr-defined]
            return made

        return connection

    class Http(urllib.request.HTTPHandler):
        def http_open(self, req: urllib.request.Request) -> http.client.HTTPResponse:
            return self.do_open(watched(http.client.HTTPConnection), req)

    class Https(urllib.request.HTTPSHandler):
        def https_open(self, req: urllib.request.Request) -> http.client.HTTPResponse:
            return self.do_open(watched(http.client.HTTPSConnection), req)

    class NoRedirect(urllib.request.HTTPRedirectHandler):
        def redirect_request(self, *args: Any, **kwargs: Any) -> None:
            return None

    return urllib.request.build_opener(Http, Https, NoRedirect)


def call(
    api: Api,
    doing: str,
    method: str,
    url: str,
    body: dict[str, Any] | None = None,
    hints: Mapping[int, str] | None = None,
) -> tuple[Any, str | None]:
    """One request to ``url`` (on ``api.url``); the decoded JSON reply and the next page's URL
    (``Link: rel="next"``). OutputError naming ``doing`` when it is refused (``hints``: what to
    change, by HTTP status), fails, takes longer than the deadline, or its reply is too large,
    too deep or not JSON."""
    if not same_origin(url, api.url):
        raise OutputError(
            f"GitHub API: cannot {doing}: {visible(url)[:200]} is on another server than "
            "GITHUB_API_URL; the token is sent to GITHUB_API_URL only"
        )
    request = urllib.request.Request(
        url,
        method=method,
        data=None if body is None else json.dumps(body).encode("utf-8"),
        headers={
            "Accept": "application/vnd.github+json",
            "Authorization": f"Bearer {api.token}",
            "X-GitHub-Api-Version": "2022-11-28",
            "User-Agent": "metallib-builder",
            **({} if body is None else {"Content-Type": "application/json"}),
        },
    )
    seconds = HTTP_DEADLINE.value()
    deadline = _Deadline(seconds)
    started = time.monotonic()
    try:
        raw, link, refused = _exchange(_opener(deadline), request, seconds)
    except (urllib.error.URLError, OSError, http.client.HTTPException) as exc:
        if deadline.expired or time.monotonic() - started >= seconds:
            raise OutputError(
                f"GitHub API: cannot {doing}: {HTTP_DEADLINE.exceeded(seconds)}"
            ) from None
        reason = str(getattr(exc, "reason", None) or exc) or type(exc).__name__
        raise OutputError(
            f"GitHub API: cannot {doing}: {method} {api.url} failed: {visible(reason)}"
        ) from None
    finally:
        deadline.close()
    if deadline.expired:  # what was read may be cut short: never use it
        raise OutputError(f"GitHub API: cannot {doing}: {HTTP_DEADLINE.exceeded(seconds)}")
    if refused is not None:
        raise OutputError(f"GitHub API: cannot {doing}: {_refusal(refused, raw, hints or {})}")
    if len(raw) > MAX_REPLY:
        raise OutputError(f"GitHub API: cannot {doing}: the reply is over {MAX_REPLY:,} bytes")
    try:
        data = parse_json(raw) if raw else None
    except ValueError as exc:
        raise OutputError(
            f"GitHub API: cannot {doing}: the reply is not usable JSON: {exc}"
        ) from None
    match = _NEXT.search(link or "")
    return data, match.group(1) if match else None


def _exchange(
    opener: urllib.request.OpenerDirector, request: urllib.request.Request, seconds: int
) -> tuple[bytes, str | None, urllib.error.HTTPError | None]:
    """The reply's body (at most ``MAX_REPLY`` + 1 bytes), its ``Link`` header, and the HTTP
    error when the server refused (its body is then the error's, at most 64 KiB)."""
    try:
        with opener.open(request, timeout=seconds) as reply:
            return reply.read(MAX_REPLY + 1), reply.headers.get("Link"), None
    except urllib.error.HTTPError as exc:
        with exc:
            return exc.read(64 << 10), None, exc


def _refusal(exc: urllib.error.HTTPError, raw: bytes, hints: Mapping[int, str]) -> str:
    """``HTTP 403 (Resource not accessible by integration): <what to change>`` in one line."""
    try:
        reply = parse_json(raw)
        message = reply.get("message") if isinstance(reply, dict) else None
    except ValueError:
        message = None
    said = f" ({visible(str(message))[:200]})" if message else ""
    if 300 <= exc.code < 400:
        hint = "redirects are not followed (the token is sent to GITHUB_API_URL only)"
    else:
        hint = {**_HINTS, **hints}.get(exc.code, "")
    return f"HTTP {exc.code}{said}" + (f": {hint}" if hint else "")


_HINTS = {401: "the token was not accepted (pass GITHUB_TOKEN: ${{ github.token }} to the step)"}


def same_origin(url: str, api: str) -> bool:
    """Whether ``url`` is on the server (scheme, host and port) of ``api``."""
    a, b = urllib.parse.urlsplit(url), urllib.parse.urlsplit(api)
    return (a.scheme, a.netloc) == (b.scheme, b.netloc)


def pages(
    api: Api, doing: str, url: str, max_pages: int, hints: Mapping[int, str] | None = None
) -> Iterator[Any]:
    """Each page's reply, following ``rel="next"`` links on ``api.url`` only, at most
    ``max_pages``; OutputError when there are more."""
    next_url: str | None = url
    for _ in range(max_pages):
        if next_url is None:
            return
        data, next_url = call(api, doing, "GET", next_url, hints=hints)
        yield data
        if next_url is not None and not same_origin(next_url, api.url):
            raise OutputError(
                f"GitHub API: cannot {doing}: the next page is on another server "
                f"({visible(next_url)[:200]}); the token is sent to GITHUB_API_URL only"
            )
    if next_url is not None:
        raise OutputError(f"GitHub API: cannot {doing}: more than {max_pages:,} pages")
