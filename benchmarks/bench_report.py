"""Benchmark: ``report --format json`` and ``list --format json`` (whole processes) vs a \
struct walk.

All sides are measured as separate Python processes in the same run, so interpreter start-up is
paid by each. The baseline is the least work any size tool must do: map the file and walk every
function-list entry's tags with ``struct``, summing MDSZ (``benchmarks/mdsz_walk.py``: no names,
no rows). The target is a ratio of at most 1.5. ``import builder.cli`` and ``python -c pass`` are
timed too, to show what start-up alone costs.

    python benchmarks/bench_report.py                       # mlx-metal 0.32.4 (cached wheel)
    python benchmarks/bench_report.py path/to/mlx.metallib --runs 11

It is a script, not a test: timings depend on the machine. By default the processes may cache
bytecode (in a temporary ``PYTHONPYCACHEPREFIX``, not in the tree), as an installed package would;
``--no-bytecode-cache`` measures with every module compiled from source on each run, which is what
happens under ``PYTHONDONTWRITEBYTECODE=1``.
"""

from __future__ import annotations

import argparse
import statistics
import subprocess
import sys
import time
from pathlib import Path

from _timing import BENCH, ENV, ROOT, default_metallib


def _time_interleaved(
    cases: dict[str, list[str]], runs: int, env: dict[str, str]
) -> dict[str, list[float]]:
    """Run the cases round-robin so that a change in machine load hits all of them alike."""
    times: dict[str, list[float]] = {label: [] for label in cases}
    for _ in range(runs):
        for label, cmd in cases.items():
            start = time.perf_counter()
            subprocess.run(cmd, check=True, stdout=subprocess.DEVNULL, cwd=ROOT, env=env)
            times[label].append(time.perf_counter() - start)
    return times


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("metallib", nargs="?", help="default: mlx.metallib of mlx-metal 0.32.4")
    parser.add_argument("--runs", type=int, default=9)
    parser.add_argument(
        "--no-bytecode-cache", action="store_true", help="compile every module on every run"
    )
    args = parser.parse_args()
    path = Path(args.metallib) if args.metallib else default_metallib()
    py = sys.executable
    cases = {
        "MDSZ walk": [py, str(BENCH / "mdsz_walk.py"), str(path)],
        "report --format json": [py, "-m", "builder", "report", str(path), "--format", "json"],
        "list --format json": [py, "-m", "builder", "list", str(path), "--format", "json"],
        "import builder.cli": [py, "-c", "import builder.cli"],
        "python -c pass": [py, "-c", "pass"],
    }
    env = dict(ENV)
    if args.no_bytecode_cache:
        env["PYTHONDONTWRITEBYTECODE"] = "1"
        env.pop("PYTHONPYCACHEPREFIX")
    for cmd in cases.values():  # warm the page cache and the bytecode cache
        subprocess.run(cmd, check=True, stdout=subprocess.DEVNULL, cwd=ROOT, env=env)
    mode = "no bytecode cache" if args.no_bytecode_cache else "bytecode cached"
    print(f"{path} ({path.stat().st_size:,} bytes), {args.runs} interleaved runs, {mode}")
    times = _time_interleaved(cases, args.runs, env)
    for label, values in times.items():
        print(
            f"  {label:<22} median {statistics.median(values) * 1000:7.1f} ms"
            f"   min {min(values) * 1000:7.1f} ms"
        )
    walk = times["MDSZ walk"]
    for label in ("report --format json", "list --format json"):
        ours = times[label]
        ratio = statistics.median(ours) / statistics.median(walk)
        print(
            f"{label} / MDSZ walk: {ratio:.2f} by medians, "
            f"{min(ours) / min(walk):.2f} by minima (target <= 1.5)"
        )


if __name__ == "__main__":
    main()
