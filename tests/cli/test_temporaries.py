"""Temporary files of a stopped run (issue 18: killed ``slim`` runs left ``.NAME.XXXX.tmp`` files of
up to 106 MB): SIGTERM and SIGHUP remove them before the process dies of the signal; after kill
-9 the next run writing the same output removes them, but never another live run's (it holds an
flock on its file) and never a file whose name is not exactly ours.

The large input is mlx-metal's real library (130 MB): slim copies and hashes it for about half a
second, long enough to signal it while its temporary file is being written.
"""

from __future__ import annotations

import os
import signal
import subprocess
import sys
from collections.abc import Callable
from pathlib import Path

import pytest
from cli.variants_out import start, wait_for
from mlx_tree import MLX_PLATFORM, MLX_VERSION
from synthetic import synthetic_parts

from builder.metallib import library_bytes, open_metallib

SLIM_ALL = ("--keep", "*")
HOLD_LOCK = """
import fcntl, os, sys, time
fd = os.open(sys.argv[1], os.O_RDONLY)
fcntl.flock(fd, fcntl.LOCK_EX)
print("locked", flush=True)
time.sleep(120)
"""
"""A live writer of a temporary file, as far as the lock shows: it holds the file's flock."""


@pytest.fixture(scope="module")
def large(mlx_metallib: Callable[[str, str], Path]) -> Path:
    return mlx_metallib(MLX_VERSION, MLX_PLATFORM)


def _writing(folder: Path) -> Callable[[], bool]:
    """A temporary file of any name form exists (older versions named theirs differently)."""
    return lambda: any(n.startswith(".") and n.endswith(".tmp") for n in os.listdir(folder))


def _signal_while_writing(large: Path, out: Path, signum: int) -> subprocess.Popen[str]:
    """slim ``large`` to ``out`` and send ``signum`` once its temporary file exists. The copy
    takes a tenth of a second: on a busy machine the signal may come too late, so it is tried
    again (up to five times) until it lands while the process runs."""
    for _ in range(5):
        proc = start(["slim", str(large), "-o", str(out), *SLIM_ALL])
        assert wait_for(_writing(out.parent), proc), "slim never started writing"
        os.kill(proc.pid, signum)
        proc.communicate(timeout=60)
        if proc.returncode != 0:
            return proc
        out.unlink()
    raise AssertionError("slim always finished before the signal")


@pytest.mark.realdata
@pytest.mark.parametrize("signum", [signal.SIGTERM, signal.SIGHUP])
def test_a_signal_during_slim_removes_its_temporary_file(
    large: Path, tmp_path: Path, signum: int
) -> None:
    proc = _signal_while_writing(large, tmp_path / "out.metallib", signum)
    assert proc.returncode == -signum  # died of the signal, as without a handler
    assert os.listdir(tmp_path) == []


@pytest.mark.realdata
def test_a_signal_ignored_at_start_stays_ignored(large: Path, tmp_path: Path) -> None:
    """``nohup metallib-builder slim ...``: SIGHUP must not stop it."""
    out = tmp_path / "out.metallib"
    proc = subprocess.Popen(
        ["nohup", sys.executable, "-m", "builder", "slim", str(large), "-o", str(out), *SLIM_ALL],
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
    )
    assert wait_for(_writing(tmp_path), proc)
    os.kill(proc.pid, signal.SIGHUP)
    _, err = proc.communicate(timeout=60)
    assert proc.returncode == 0, err
    assert out.read_bytes() == large.read_bytes() and os.listdir(tmp_path) == ["out.metallib"]


@pytest.mark.realdata
def test_kill_9_leaves_a_temporary_file_the_next_run_removes(large: Path, tmp_path: Path) -> None:
    out = tmp_path / "out.metallib"
    assert _signal_while_writing(large, out, signal.SIGKILL).returncode == -signal.SIGKILL
    left = [n for n in os.listdir(tmp_path) if n.startswith(".out.metallib.")]
    assert len(left) == 1 and not out.exists()  # what issue 18 found
    done = start(["slim", str(large), "-o", str(out), "--keep", "gemv_*float32*"])
    _, err = done.communicate(timeout=120)
    assert done.returncode == 0, err
    assert os.listdir(tmp_path) == ["out.metallib"]
    with open_metallib(out) as lib:
        assert lib.columns().names and all(n.startswith("gemv_") for n in lib.columns().names)


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
