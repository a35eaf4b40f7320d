"""Benchmark: ``report --format json`` (whole process) vs a bare struct walk of the function list.

Both sides are measured as separate Python processes in the same run, so interpreter start-up is
paid by both. The baseline is the least work any size tool must do: map the file, walk every
function-list entry's tags with ``struct`` and collect name, module size and offsets. The target
in the issue is a ratio of at most 1.5.

    python benchmarks/bench_report.py                       # mlx-metal 0.30.0 (cached wheel)
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

from _timing import BENCH, ENV, ROOT


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
    parser.add_argument("metallib", nargs="?", help="default: mlx.metallib of mlx-metal 0.30.0")
    parser.add_argument("--runs", type=int, default=9)
    parser.add_argument(
        "--no-bytecode-cache", action="store_true", help="compile every module on every run"
    )
    args = parser.parse_args()
    if args.metallib:
        path = Path(args.metallib)
    else:
        sys.path.insert(0, str(ROOT))
        from builder.size.wheels import metallibs_from_spec

        path = metallibs_from_spec("mlx-metal==0.30.0")[0]
    py = sys.executable
    cases = {
        "bare struct walk": [py, str(BENCH / "bare_walk.py"), str(path)],
        "report --format json": [py, "-m", "builder", "report", str(path), "--format", "json"],
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
    report, bare = times["report --format json"], times["bare struct walk"]
    ratio = statistics.median(report) / statistics.median(bare)
    print(
        f"ratio report/bare walk: {ratio:.2f} by medians, {min(report) / min(bare):.2f} by minima"
    )
    print("target: <= 1.5")


if __name__ == "__main__":
    main()
