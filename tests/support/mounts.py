"""Real file-system failures for the write-safety tests: a mount (a small tmpfs, a read-only bind
mount; root only, else the test is skipped with the reason) and filling a disk to the last byte."""

from __future__ import annotations

import errno
import os
import subprocess
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

import pytest

__all__ = ["fill", "mounted"]


@contextmanager
def mounted(target: Path, *steps: list[str]) -> Iterator[Path]:
    """Run ``mount`` steps on ``target``; skip the test when this machine does not allow it."""
    done_steps = 0
    try:
        for step in steps:
            done = subprocess.run(
                ["mount", *step, str(target)], capture_output=True, text=True, check=False
            )
            if done.returncode != 0:
                pytest.skip(
                    f"cannot mount here ({done.stderr.strip()}): needs root; "
                    "test_file_size_limit_* and the monkeypatched read-only test cover this path"
                )
            done_steps += 1
        yield target
    finally:
        if done_steps:
            subprocess.run(["umount", str(target)], check=True)


def fill(folder: Path, leave: int = 0) -> None:
    """Write ``folder/filler`` until the file system has at most ``leave`` bytes free (0: until
    the kernel says ENOSPC)."""
    fd = os.open(folder / "filler", os.O_WRONLY | os.O_CREAT | os.O_APPEND)
    try:
        if leave:
            stats = os.statvfs(folder)
            os.write(fd, bytes(max(0, stats.f_bavail * stats.f_frsize - leave)))
            return
        for chunk in (4096, 1):
            while True:
                try:
                    os.write(fd, bytes(chunk))
                except OSError as exc:
                    assert exc.errno == errno.ENOSPC
                    break
    finally:
        os.close(fd)
