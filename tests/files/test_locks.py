"""``builder.files.temporaries.exclusive_lock`` between real processes: the holder removes the
lock file as it lets go, so a run waiting on the removed file must lock the path anew, never
hold it alongside the next one. Four processes add 1 to a counter file 40 times each under the
lock, reading, pausing and writing back: any two holding it at once would lose an addition."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

WORKER = """
import sys, time
from pathlib import Path

from builder.files.temporaries import exclusive_lock

lock, counter = Path(sys.argv[1]), Path(sys.argv[2])
for _ in range(40):
    with exclusive_lock(lock, what="the counter"):
        value = int(counter.read_text())
        time.sleep(0.0005)
        counter.write_text(str(value + 1))
"""


def test_no_two_processes_hold_the_lock_at_once(tmp_path: Path) -> None:
    lock, counter = tmp_path / ".counter.lock", tmp_path / "counter"
    counter.write_text("0")
    workers = [
        subprocess.Popen(
            [sys.executable, "-c", WORKER, str(lock), str(counter)],
            stderr=subprocess.PIPE,
            text=True,
        )
        for _ in range(4)
    ]
    for worker in workers:
        _, err = worker.communicate(timeout=120)
        assert worker.returncode == 0, err
    assert counter.read_text() == "160"
    assert os.listdir(tmp_path) == ["counter"]  # the last holder removed the lock file
