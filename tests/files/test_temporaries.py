"""Temporary files of a stopped run (issue 18: killed ``slim`` runs left ``.NAME.XXXX.tmp`` files of
up to 106 MB): SIGTERM and SIGHUP remove them before the process dies of the signal; after kill
-9 the next run writing the same output removes them, but never another live run's (it holds an
flock on its file) and never a file whose name is not exactly ours.

Each signal lands while the temporary file is half written, whatever the machine's load: the
run is paused there (``support.spawn.Pause``, after the header and function list, before the first
section is copied) and the test waits for it to say so on a pipe (issue 24, item 16).
"""

from __future__ import annotations

import os
import signal
import subprocess
import sys
from pathlib import Path

import pytest
from support.spawn import Child, Pause, resume, start, wait_paused
from synthetic import synthetic_parts

from builder.metallib import library_bytes, open_metallib

HOLD_LOCK = """
import fcntl, os, sys, time
fd = os.open(sys.argv[1], os.O_RDONLY)
fcntl.flock(fd, fcntl.LOCK_EX)
print("locked", flush=True)
time.sleep(120)
"""
"""A live writer of a temporary file, as far as the lock shows: it holds the file's flock."""
HALF_WRITTEN = Pause("builder.metallib.writer:OutputSink._flush_run", when="after")
"""After the first run of the input is copied: the temporary file holds the output's start."""


@pytest.fixture
def library(tmp_path: Path) -> Path:
    path = tmp_path / "in" / "lib.metallib"
    path.parent.mkdir()
    path.write_bytes(library_bytes(synthetic_parts(40, seed=9)))
    return path


def _temporaries(folder: Path) -> list[str]:
    """Temporary files of any name form (older versions named theirs differently)."""
    return [n for n in os.listdir(folder) if n.startswith(".") and n.endswith(".tmp")]


def _paused_slim(library: Path, out: Path, *, under: tuple[str, ...] = ()) -> Child:
    """``slim LIBRARY -o OUT --keep '*'``, paused with its temporary file half written;
    ``under``: a command to run it under (``nohup``: then SIGHUP stays as that makes it)."""
    args = ["slim", str(library), "-o", str(out), "--keep", "*"]
    proc = start(args, pause=HALF_WRITTEN, prefix=under, default_signals=not under)
    wait_paused(proc)
    try:
        [name] = _temporaries(out.parent)
        assert 0 < (out.parent / name).stat().st_size < library.stat().st_size
    except BaseException:
        proc.kill()
        proc.communicate()
        raise
    return proc


@pytest.mark.parametrize("signum", [signal.SIGTERM, signal.SIGHUP])
def test_a_signal_during_slim_removes_its_temporary_file(
    library: Path, tmp_path: Path, signum: int
) -> None:
    proc = _paused_slim(library, tmp_path / "out.metallib")
    os.kill(proc.pid, signum)
    _, err = proc.communicate(timeout=60)
    assert proc.returncode == -signum, err  # died of the signal, as without a handler
    assert sorted(os.listdir(tmp_path)) == ["in"]


def test_a_signal_ignored_at_start_stays_ignored(library: Path, tmp_path: Path) -> None:
    """``nohup metallib-builder slim ...``: SIGHUP must not stop it."""
    out = tmp_path / "out.metallib"
    proc = _paused_slim(library, out, under=("nohup",))
    os.kill(proc.pid, signal.SIGHUP)
    resume(proc)
    _, err = proc.communicate(timeout=60)
    assert proc.returncode == 0, err
    assert out.read_bytes() == library.read_bytes()
    assert sorted(os.listdir(tmp_path)) == ["in", "out.metallib"]


def test_kill_9_leaves_a_temporary_file_the_next_run_removes(library: Path, tmp_path: Path) -> None:
    out = tmp_path / "out.metallib"
    proc = _paused_slim(library, out)
    os.kill(proc.pid, signal.SIGKILL)
    proc.communicate(timeout=60)
    assert proc.returncode == -signal.SIGKILL
    left = [n for n in os.listdir(tmp_path) if n.startswith(".out.metallib.")]
    assert len(left) == 1 and not out.exists()  # what issue 18 found
    done = start(["slim", str(library), "-o", str(out), "--keep", "kernel_1*"])
    _, err = done.communicate(timeout=120)
    assert done.returncode == 0, err
    assert sorted(os.listdir(tmp_path)) == ["in", "out.metallib"]
    with open_metallib(out) as lib:
        assert lib.columns().names and all(n.startswith("kernel_1") for n in lib.columns().names)


def test_only_dead_temporaries_of_exactly_our_names_are_removed(tmp_path: Path) -> None:
    """A live run's temporary file (another process holds its flock) stays; so do look-alike
    names and a link; a dead one of our form goes. Every ``report -o``, ``slim -o``... write
    (``builder.files.atomic.atomic_write``) cleans up this way."""
    library = tmp_path / "lib.metallib"
    library.write_bytes(library_bytes(synthetic_parts(6, seed=3)))
    folder = tmp_path / "out"
    folder.mkdir()
    dead = folder / ".small.metallib.0123456789ab.tmp"
    dead.write_bytes(b"left by kill -9")
    live = folder / ".small.metallib.ba9876543210.tmp"
    live.write_bytes(b"being written")
    alike = [
        ".small.metallib.tmp",
        ".small.metallib.0123456789AB.tmp",
        ".small.metallib.01234.tmp",
        ".small.metallib.0123456789ab.tmp~",
        "small.metallib.0123456789ab.tmp",
        ".small.metallib.0123456789ab.old",
        ".other.metallib.0123456789ab.tmp",
    ]
    for name in alike:
        (folder / name).write_text("not ours, or not a temporary file")
    (folder / ".small.metallib.cccccccccccc.tmp").symlink_to(library)
    holder = subprocess.Popen(
        [sys.executable, "-c", HOLD_LOCK, str(live)],
        stdout=subprocess.PIPE,
        text=True,
    )
    try:
        assert holder.stdout is not None and holder.stdout.readline() == "locked\n"
        done = subprocess.run(
            [
                sys.executable,
                "-m",
                "builder",
                "slim",
                str(library),
                "-o",
                str(folder / "small.metallib"),
                "--keep",
                "kernel_1*",
            ],
            capture_output=True,
            text=True,
            check=False,
        )
        assert done.returncode == 0, done.stderr
    finally:
        holder.kill()
        holder.communicate()
    left = sorted(os.listdir(folder))
    assert left == sorted(["small.metallib", live.name, *alike, ".small.metallib.cccccccccccc.tmp"])
    assert live.read_bytes() == b"being written" and library.is_file()
