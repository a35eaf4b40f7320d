"""Fixtures for publishing: a synthetic library pair, and the GitHub REST API stand-in
(``standin_api.py``, imported as ``publish.standin_api``: tests/ is on ``sys.path``) serving on
127.0.0.1 with the environment of a pull_request workflow pointing at it."""

from __future__ import annotations

import json
import threading
from collections.abc import Iterator
from http.server import ThreadingHTTPServer
from pathlib import Path

import pytest
from publish.standin_api import BASE, HEAD, PR, REPOSITORY, TOKEN, StandIn, handler, library


@pytest.fixture
def pair(tmp_path: Path) -> tuple[Path, Path]:
    """Base and head metallibs (head: one kernel grew, one removed, one new group)."""
    base, head = tmp_path / "base.metallib", tmp_path / "head.metallib"
    base.write_bytes(library(BASE))
    head.write_bytes(library(HEAD))
    return base, head


@pytest.fixture
def github(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Iterator[StandIn]:
    """The stand-in API, running, with the environment of a pull_request workflow pointing at it."""
    state = StandIn()
    server = ThreadingHTTPServer(("127.0.0.1", 0), handler(state))
    state.url = f"http://127.0.0.1:{server.server_address[1]}"
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    event = tmp_path / "event.json"
    event.write_text(
        json.dumps({"action": "synchronize", "number": PR, "pull_request": {"number": PR}})
    )
    for name in ("http_proxy", "https_proxy", "HTTP_PROXY", "HTTPS_PROXY", "GITHUB_STEP_SUMMARY"):
        monkeypatch.delenv(name, raising=False)
    monkeypatch.setenv("GITHUB_TOKEN", TOKEN)
    monkeypatch.setenv("GITHUB_REPOSITORY", REPOSITORY)
    monkeypatch.setenv("GITHUB_API_URL", state.url)
    monkeypatch.setenv("GITHUB_EVENT_PATH", str(event))
    try:
        yield state
    finally:
        server.shutdown()
        server.server_close()
        thread.join(timeout=10)
