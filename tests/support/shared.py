"""Something expensive made once per test run, whatever the number of pytest-xdist workers.

Each worker is its own process with its own session fixtures, so a session-scoped CMake build
would run once per worker. ``shared_folder`` makes it once: the first worker to ask takes an
exclusive lock (``flock``) on the run's shared temporary folder, makes the thing there and marks
it complete; the others wait on the lock and reuse it. A failed attempt leaves no mark, so the
next worker that asks tries again (and fails the same way, in its own tests). Only for things the
tests read and never change: a test that edits a build needs a build of its own.
"""

from __future__ import annotations

import fcntl
import os
import shutil
from collections.abc import Callable
from pathlib import Path

import pytest

__all__ = ["shared_folder"]

_COMPLETE = ".complete"


def run_root(factory: pytest.TempPathFactory) -> Path:
    """The temporary folder of the whole run: under xdist each worker's base folder
    (``popen-gw0``...) sits in it."""
    base = factory.getbasetemp()
    return base.parent if os.environ.get("PYTEST_XDIST_WORKER") else base


def shared_folder(
    factory: pytest.TempPathFactory, name: str, make: Callable[[Path], object]
) -> Path:
    """The folder ``name`` of this run, filled by ``make(folder)`` once for all workers
    (what ``make`` returns is not kept: the fixture reads the folder)."""
    root = run_root(factory) / "shared"
    root.mkdir(exist_ok=True)
    folder = root / name
    with open(root / f"{name}.lock", "w") as lock:
        fcntl.flock(lock, fcntl.LOCK_EX)  # released when the file is closed
        if not (folder / _COMPLETE).is_file():
            shutil.rmtree(folder, ignore_errors=True)  # a failed attempt's leftovers
            folder.mkdir()
            make(folder)
            (folder / _COMPLETE).write_text(name, encoding="utf-8")
    return folder
