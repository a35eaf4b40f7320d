"""A reader that closes the pipe (``compare ... 2>&1 | head``) changes nothing but what is read:
the rest of the output is dropped, the gates are still decided, the comment still posted, and
the exit code is the run's verdict (0 pass, 1 a failed gate, 2 unusable input), never a 1 made
by the closed pipe. The CLI runs as its own process here, its stdout and stderr one pipe."""

from __future__ import annotations

import os
import subprocess
from pathlib import Path

import pytest
from publish.standin_api import StandIn
from support.spawn import CLI, run_cli_process

from builder.render.pr_comment import MARKER


def _into_closed_pipe(args: list[str], cwd: Path) -> int:
    """``metallib-builder ARGS 2>&1`` into a pipe whose reader is gone before the first byte:
    every write finds EPIPE, whenever it comes. The exit code."""
    read, write = os.pipe()
    os.close(read)
    try:
        done = run_cli_process(args, cwd=cwd, stdout=write, stderr=write)
    finally:
        os.close(write)
    return done.returncode


def _first_line_then_close(args: list[str], cwd: Path) -> tuple[bytes, int]:
    """``metallib-builder ARGS 2>&1 | head -1``: the first line and the tool's exit code."""
    proc = subprocess.Popen(
        [*CLI, *args],
        cwd=cwd,
        stdin=subprocess.DEVNULL,
        stdout=subprocess.PIPE,
        stderr=subprocess.STDOUT,
    )
    assert proc.stdout is not None
    line = proc.stdout.readline()
    proc.stdout.close()
    return line, proc.wait(timeout=300)


@pytest.mark.parametrize(
    ("gate", "verdict"),
    [("--max-growth=50%", 0), ("--max-growth=1%", 1), ("--max-size=1GB", 0), ("--max-size=1", 1)],
)
def test_a_closed_pipe_leaves_the_verdict(
    gate: str, verdict: int, pair: tuple[Path, Path], tmp_path: Path
) -> None:
    base, head = map(str, pair)
    # the verdict with a reader: the reference the closed pipe must not change
    done = run_cli_process(
        ["compare", base, head, gate], cwd=tmp_path, capture_output=True, text=True
    )
    assert done.returncode == verdict, done.stderr
    assert ("size gates passed" if verdict == 0 else "FAIL") in done.stdout + done.stderr
    assert _into_closed_pipe(["compare", base, head, gate], tmp_path) == verdict
    line, code = _first_line_then_close(["compare", base, head, gate], tmp_path)
    assert line and code == verdict


def test_unusable_input_into_a_closed_pipe_is_still_2(tmp_path: Path) -> None:
    missing = str(tmp_path / "missing.metallib")
    assert _into_closed_pipe(["compare", missing, missing], tmp_path) == 2
    assert _into_closed_pipe(["compare", "--no-such-option"], tmp_path) == 2


def test_the_comment_is_posted_although_the_pipe_closed(
    pair: tuple[Path, Path], github: StandIn, tmp_path: Path
) -> None:
    """The comment goes out after the output is written: a closed pipe must not stop it."""
    args = ["compare", *map(str, pair), "--max-growth=50%", "--github-comment"]
    assert _into_closed_pipe(args, tmp_path) == 0
    (comment,) = github.comments
    assert str(comment["body"]).startswith(MARKER)
    assert "✅ pass: --max-growth 50%" in str(comment["body"])
