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


def load_average() -> str:
    """The 1-, 5- and 15-minute load averages, to print beside every timing (the machine is
    shared: a ratio measured at load 8 says less than one at load 1)."""
    return ", ".join(f"{x:.2f}" for x in os.getloadavg())


def run_timed(
    cmd: Sequence[str], cwd: Path | None = None, env: dict[str, str] | None = None
) -> tuple[float, float]:
    """(wall seconds, CPU seconds: user + system of the child and its children) of one run of
    ``cmd``, output discarded; fails loudly if the command fails. CPU time comes from
    ``os.wait4`` and holds up on a loaded machine better than wall time."""
    start = time.perf_counter()
    with tempfile.TemporaryFile() as err:
        child = subprocess.Popen(
            cmd, stdout=subprocess.DEVNULL, stderr=err, cwd=cwd, env=env or ENV
        )
        _, status, usage = os.wait4(child.pid, 0)
        elapsed = time.perf_counter() - start
        if os.waitstatus_to_exitcode(status) != 0:
            err.seek(0)
            sys.exit(f"benchmark command failed: {' '.join(cmd)}\n{err.read().decode()}")
    return elapsed, usage.ru_utime + usage.ru_stime


def interleaved(
    cases: dict[str, Sequence[str]],
    runs: int,
    cwd: Path | None = None,
    env: dict[str, str] | None = None,
) -> dict[str, tuple[float, float]]:
    """Medians of ``runs`` rounds, each running every case once in turn (after one untimed
    warm-up round: page cache, bytecode cache), as {label: (wall, CPU)} in seconds; a change
    in load hits every case alike."""
    for cmd in cases.values():
        run_timed(cmd, cwd, env)
    walls: dict[str, list[float]] = {label: [] for label in cases}
    cpus: dict[str, list[float]] = {label: [] for label in cases}
    for _ in range(runs):
        for label, cmd in cases.items():
            wall, cpu = run_timed(cmd, cwd, env)
            walls[label].append(wall)
            cpus[label].append(cpu)
    return {
        label: (statistics.median(walls[label]), statistics.median(cpus[label])) for label in cases
    }


def print_medians(results: dict[str, tuple[float, float]], runs: int) -> None:
    """One line per case: median wall and CPU in milliseconds, with the load average."""
    print(f"medians of {runs} interleaved rounds, load average {load_average()}")
    for label, (wall, cpu) in results.items():
        print(f"  {label:<34} wall {wall * 1000:8.1f} ms   CPU {cpu * 1000:8.1f} ms")
