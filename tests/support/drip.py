"""A reply that never quite comes: the start of an HTTP reply, then the rest a byte at a time.

Shared by the test of the request deadline (tests/publish/test_hostile_replies.py) and the
benchmark that times the refusal (benchmarks/bench_refusals.py), so both meet the same server.
Standard library only: the benchmark imports it without the tests' path set-up.
"""

from __future__ import annotations

from http.server import BaseHTTPRequestHandler

__all__ = ["BYTE_EVERY", "start_reply"]

BYTE_EVERY = 0.5
"""Seconds between two bytes of the rest: each read succeeds well within a per-read timeout."""


def start_reply(handler: BaseHTTPRequestHandler, where: str) -> bytes:
    """Write the start of a JSON reply and return the rest, to be sent a byte per
    ``BYTE_EVERY`` s: with ``where`` ``headers`` the status line and part of the headers are
    written (the rest is a 1,000-byte header, then ``[]``); else the whole header block, and the
    rest is its 1,000-byte body."""
    if where == "headers":
        handler.wfile.write(b"HTTP/1.1 200 OK\r\nContent-Type: application/json\r\n")
        return b"X-Slow: " + b"a" * 1000 + b"\r\n\r\n[]"
    handler.send_response(200)
    handler.send_header("Content-Type", "application/json")
    handler.send_header("Content-Length", "1000")
    handler.end_headers()
    return b"[" + b" " * 998 + b"]"
