"""A GitHub API that answers with hostile replies (the stand-in on 127.0.0.1 told to misbehave):
a reply nested 5,000 deep, and a server that sends one byte every half second, in the headers
or in the body. Each ends in one line on stderr and exit 2 naming the request's total deadline,
with bounded memory: the CLI runs as its own process here, so its peak memory is its own (its
VmHWM, written as it exits). That the deadline is total, not per read: the client hangs up
before the end of a reply whose every byte comes well within a per-read timeout, and says the
request exceeded the deadline; a client without it would be killed at the hang guard. How long
the refusal takes is benchmarks/bench_refusals.py's."""

from __future__ import annotations

import os
import subprocess
import sys
import time
from collections.abc import Callable
from http.server import BaseHTTPRequestHandler
from pathlib import Path

import pytest
from clirun import run_cli
from publish.standin_api import REPOSITORY, TOKEN, StandIn
from support.drip import BYTE_EVERY, start_reply

DEADLINE = 2
HANG = 120
"""Seconds after which the CLI counts as never ending: a hang guard, not a bound on speed."""
PEAK_MB = 200


def _deep(status: int) -> Callable[[BaseHTTPRequestHandler], None]:
    def answer(handler: BaseHTTPRequestHandler) -> None:
        body = b"[" * 5000 + b"]" * 5000
        if status >= 400:
            body = b'{"message": ' + body + b"}"
        handler.send_response(status)
        handler.send_header("Content-Type", "application/json")
        handler.send_header("Content-Length", str(len(body)))
        handler.end_headers()
        handler.wfile.write(body)

    return answer


class _Drip:
    """Start a reply, then send the rest one byte per 0.5 s (each read succeeds well within a
    per-read timeout: the whole takes over 8 minutes) until the client hangs up, for at most
    2 x ``HANG`` s; ``left`` counts the bytes of the rest not sent."""

    def __init__(self, where: str) -> None:
        self.where = where
        self.left = 0

    def __call__(self, handler: BaseHTTPRequestHandler) -> None:
        rest = start_reply(handler, self.where)
        self.left = len(rest)
        end = time.monotonic() + 2 * HANG
        try:
            for byte in rest:
                if time.monotonic() > end:
                    return
                handler.wfile.write(bytes([byte]))
                self.left -= 1
                time.sleep(BYTE_EVERY)
        except OSError:  # the client gave up: what the deadline is for
            return


def _drip(where: str) -> _Drip:
    return _Drip(where)


_MEASURED = """\
import atexit, os, runpy, sys
def peak():  # this process's own high-water mark (VmHWM), in kB
    with open("/proc/self/status") as status, open(os.environ["PEAK_FILE"], "w") as out:
        out.write(next(l for l in status if l.startswith("VmHWM:")).split()[1])
atexit.register(peak)
sys.argv[0] = "metallib-builder"
runpy.run_module("builder", run_name="__main__")
"""
"""Runs the CLI and writes its peak memory at exit. ``ru_maxrss`` of a child would not do: Linux
keeps the parent's high-water mark through the exec that follows a vfork, so under a large
pytest worker every child would read as that worker's size."""


def _cli(args: list[str], tmp_path: Path) -> tuple[int, str, float]:
    """``python -m builder ARGS`` with the request deadline set to DEADLINE: exit code, stderr
    and peak memory (MB, the process's own VmHWM); killed at ``HANG`` s if it never ends."""
    peak_file = tmp_path / "peak_kb"
    env = {
        **os.environ,
        "METALLIB_BUILDER_HTTP_DEADLINE": str(DEADLINE),
        "PEAK_FILE": str(peak_file),
    }
    try:
        done = subprocess.run(
            [sys.executable, "-c", _MEASURED, *args],
            cwd=tmp_path,
            env=env,
            stdout=subprocess.DEVNULL,
            stderr=subprocess.PIPE,
            text=True,
            timeout=HANG,
            check=False,
        )
    except subprocess.TimeoutExpired:
        pytest.fail(f"{args[0]} did not end within {HANG} s")
    return done.returncode, done.stderr, int(peak_file.read_text()) / 1024


def _compare(pair: tuple[Path, Path]) -> list[str]:
    return ["compare", *map(str, pair), "--github-comment"]


def _base_artifact(pair: tuple[Path, Path]) -> list[str]:
    return ["base-artifact", "metallib-size-main", "--branch", "main"]


@pytest.mark.parametrize(
    ("command", "answer", "words"),
    [
        (_compare, _deep(200), "the reply is not usable JSON: nested too deeply"),
        (_compare, _deep(403), "HTTP 403: the token may not write comments"),
        (_base_artifact, _deep(200), "the reply is not usable JSON: nested too deeply"),
        (_compare, _drip("headers"), f"the request exceeds {DEADLINE} seconds"),
        (_compare, _drip("body"), f"the request exceeds {DEADLINE} seconds"),
        (_base_artifact, _drip("body"), f"the request exceeds {DEADLINE} seconds"),
    ],
    ids=["deep-comments", "deep-refusal", "deep-artifacts", "drip-headers", "drip-body",
         "drip-artifacts"],
)  # fmt: skip
def test_a_hostile_reply_is_one_line_within_the_deadline(
    command: Callable[[tuple[Path, Path]], list[str]],
    answer: Callable[[BaseHTTPRequestHandler], None],
    words: str,
    pair: tuple[Path, Path],
    github: StandIn,
    tmp_path: Path,
) -> None:
    github.answer = answer
    code, err, peak = _cli(command(pair), tmp_path)
    assert code == 2, (code, err[-2000:])
    assert "Traceback" not in err and len(err.splitlines()) == 1, err[-2000:]
    assert err.startswith("error: GitHub API: cannot ") and words in err, err
    if isinstance(answer, _Drip):  # the client hung up before the reply's end
        assert answer.left > 0
    assert peak < PEAK_MB, peak
    assert TOKEN not in err and REPOSITORY in err


def test_a_bad_deadline_fails_before_anything_is_measured(
    github: StandIn,
    tmp_path: Path,
    monkeypatch: pytest.MonkeyPatch,
    capsys: pytest.CaptureFixture[str],
) -> None:
    monkeypatch.setenv("METALLIB_BUILDER_HTTP_DEADLINE", "soon")
    missing = str(tmp_path / "nothing.metallib")  # measuring would fail on this first
    code, out, err = run_cli(["compare", missing, missing, "--github-comment"], capsys)
    assert (code, out) == (2, "") and github.requests == []
    assert err == (
        "error: METALLIB_BUILDER_HTTP_DEADLINE='soon': expected a positive number of seconds,"
        " at most 1,000,000\n"
    )
