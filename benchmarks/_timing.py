"""Shared helpers for the benchmark scripts: whole-process timings, interleaved, medians."""

from __future__ import annotations

import os
import statistics
import subprocess
import sys
import tempfile
import time
from collections.abc import Callable, Sequence
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
BENCH = Path(__file__).resolve().parent
# Installed packages run from compiled bytecode; give the benchmarked processes a bytecode cache
# even where the environment sets PYTHONDONTWRITEBYTECODE, so imports are timed as users see them.
_PYCACHE = tempfile.TemporaryDirectory(prefix="bench-pycache-")
ENV = {k: v for k, v in os.environ.items() if k != "PYTHONDONTWRITEBYTECODE"}
ENV.update(PYTHONPATH=str(ROOT), PYTHONPYCACHEPREFIX=_PYCACHE.name)


def run_once(cmd: Sequence[str]) -> float:
    """Wall time of one run of ``cmd`` (output discarded); fails loudly if the command fails."""
    start = time.perf_counter()
    done = subprocess.run(
        cmd, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, env=ENV, check=False
    )
    elapsed = time.perf_counter() - start
    if done.returncode != 0:
        sys.exit(
            f"benchmark command failed ({done.returncode}): {' '.join(cmd)}\n{done.stderr.decode()}"
        )
    return elapsed


def compare(
    ours: Sequence[str],
    baseline: Sequence[str],
    runs: int,
    before: Callable[[], None] = lambda: None,
) -> tuple[float, float]:
    """Medians of ``runs`` interleaved runs of both commands (after one warm-up run of each).

    ``before`` runs untimed before every run (e.g. to delete the previous output)."""
    before()
    run_once(ours)
    before()
    run_once(baseline)
    a, b = [], []
    for _ in range(runs):
        before()
        a.append(run_once(ours))
        before()
        b.append(run_once(baseline))
    return statistics.median(a), statistics.median(b)


def default_metallib(version: str = "0.32.4", platform: str = "macosx_14_0_arm64") -> Path:
    """The cached mlx.metallib of an mlx-metal wheel (downloaded on first use)."""
    sys.path.insert(0, str(ROOT))
    from builder.inputs.wheels import metallibs_from_spec

    return metallibs_from_spec(f"mlx-metal=={version}", platform)[0]
