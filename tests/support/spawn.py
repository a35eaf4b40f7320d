"""``metallib-builder`` in a child process, for the tests that signal or kill it.

Two things made those tests pass or fail by how pytest was started and how busy the machine was
(issue 24, item 16):

- a child inherits ignored signals: under ``nohup pytest`` (or a shell's background job) the CLI
  started with SIGHUP ignored, kept it ignored as it must (``builder.files.temporaries``), and a
  test's SIGHUP did nothing. :func:`start` gives the CLI the default dispositions and an empty
  signal mask, as a user's shell would;
- a signal sent "while the temporary file exists" (polled every millisecond) came too late when
  the write took less than a poll on a loaded machine. ``pause=`` stops the child at a named call
  (``Pause``) until the test signals it or lets it go: the test waits for that line on a pipe,
  never for a time.
"""

from __future__ import annotations

import os
import select
import subprocess
import sys
from typing import Any, NamedTuple

__all__ = ["CLI", "Child", "Pause", "resume", "run_cli_process", "start", "wait_paused"]

CLI = [sys.executable, "-m", "builder"]
"""``metallib-builder`` as a command line of this interpreter."""


def run_cli_process(args: list[str], **kwargs: Any) -> subprocess.CompletedProcess[Any]:
    """``metallib-builder ARGS`` as its own process run to its end (stdin empty, at most
    300 s, any exit code); ``kwargs`` go to ``subprocess.run`` (cwd, env, where output goes)."""
    options: dict[str, Any] = {"stdin": subprocess.DEVNULL, "timeout": 300}
    return subprocess.run([*CLI, *args], check=False, **{**options, **kwargs})


_LAUNCH = r"""
import importlib, os, signal, sys

if os.environ.pop("MB_TEST_DEFAULT_SIGNALS", None):
    for name in ("SIGHUP", "SIGTERM", "SIGINT"):
        signal.signal(getattr(signal, name), signal.SIG_DFL)
    signal.pthread_sigmask(signal.SIG_SETMASK, [])

spec = os.environ.pop("MB_TEST_PAUSE", None)
if spec:
    target, nth, when, fd = spec.split("|")
    module, _, attribute = target.partition(":")
    owner = importlib.import_module(module)
    *path, name = attribute.split(".")
    for part in path:
        owner = getattr(owner, part)
    real, calls = getattr(owner, name), [0]

    def pause():
        os.write(int(fd), b"paused\n")
        os.read(0, 1)  # until the test writes a line, or a signal ends the process

    def paused(*args, **kwargs):
        calls[0] += 1
        hit = calls[0] == int(nth)
        if hit and when == "before":
            pause()
        result = real(*args, **kwargs)
        if hit and when == "after":
            pause()
        return result

    setattr(owner, name, paused)

from builder.cli.group import main

main()
"""


class Pause(NamedTuple):
    """Stop the child at the ``nth`` call of ``target`` (``module:attribute``, e.g.
    ``builder.metallib.writer:write_to``), ``before`` it runs or ``after`` it returns."""

    target: str
    nth: int = 1
    when: str = "before"


class Child(subprocess.Popen[str]):
    """A started CLI; ``paused_fd`` is the pipe on which it says it has paused."""

    paused_fd: int | None = None


def start(
    args: list[str],
    *,
    pause: Pause | None = None,
    default_signals: bool = True,
    prefix: tuple[str, ...] = (),
    stderr: Any = subprocess.PIPE,
) -> Child:
    """``metallib-builder ARGS`` in a new process group (so a kill reaches any helper it runs),
    with default signal dispositions unless ``default_signals`` is False; ``prefix`` runs it
    under another command (``nohup``)."""
    env = {**os.environ, "PYTHONDONTWRITEBYTECODE": "1"}
    if default_signals:
        env["MB_TEST_DEFAULT_SIGNALS"] = "1"
    read_end = write_end = None
    if pause is not None:
        read_end, write_end = os.pipe()
        env["MB_TEST_PAUSE"] = "|".join([pause.target, str(pause.nth), pause.when, str(write_end)])
    try:
        child = Child(
            [*prefix, sys.executable, "-c", _LAUNCH, *args],
            stdin=subprocess.PIPE if pause is not None else None,
            stdout=subprocess.PIPE,
            stderr=stderr,
            text=True,
            start_new_session=True,
            env=env,
            pass_fds=() if write_end is None else (write_end,),
        )
    finally:
        if write_end is not None:
            os.close(write_end)
    child.paused_fd = read_end
    return child


def wait_paused(child: Child, timeout: float = 300) -> None:
    """Return once ``child`` has paused; AssertionError if it ends (or runs ``timeout`` seconds)
    without reaching its pause."""
    assert child.paused_fd is not None, "started without pause="
    ready, _, _ = select.select([child.paused_fd], [], [], timeout)
    line = os.read(child.paused_fd, 64) if ready else b""
    os.close(child.paused_fd)
    child.paused_fd = None
    if line != b"paused\n":
        child.kill()
        _, err = child.communicate()
        raise AssertionError(f"the run never reached its pause (exit {child.returncode}): {err}")


def resume(child: Child) -> None:
    """Let a paused child go on."""
    assert child.stdin is not None
    child.stdin.write("\n")
    child.stdin.flush()
