"""Build timings: the JIT variant's full build and its no-op rebuild, on N cores (default 2).

Targets (issue 5): full build <= 60 s and no-op rebuild <= 1 s on 2 cores. Each measurement is the
wall time of a whole `metallib-builder build` process (configure + Ninja + size summary), and, for
the no-op case, of plain `ninja -C DIR` too, so the CLI's own start-up cost is visible. The AOT
variant is timed with the stand-in compiler when --aot is given (it measures the build machinery,
not Apple's compiler).

    python benchmarks/bench_build.py [--jobs 2] [--runs 3] [--aot]
"""

from __future__ import annotations

import argparse
import shutil
import statistics
import sys
import tempfile
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
from _timing import ROOT, run_once

STANDIN = ROOT / "tests" / "build" / "standin"


def _measure(label: str, args: list[str], jobs: int, runs: int, target: float | None) -> None:
    sys.path.insert(0, str(ROOT))
    from builder.cmake_build.cmake import find_tool

    ninja = find_tool("ninja")
    full, noop_cli, noop_ninja = [], [], []
    with tempfile.TemporaryDirectory(prefix="bench-build-") as tmp:
        build_dir = Path(tmp) / "b"
        cmd = [sys.executable, "-m", "builder", "build", *args, "-j", str(jobs),
               "--build-dir", str(build_dir)]  # fmt: skip
        for _ in range(runs):
            shutil.rmtree(build_dir, ignore_errors=True)
            full.append(run_once(cmd))
            noop_cli.append(run_once(cmd))
            noop_ninja.append(run_once([ninja, "-C", str(build_dir)]))
    med = statistics.median
    verdict = "" if target is None else (" OK" if med(full) <= target else f" OVER {target:.0f} s")
    print(f"{label}: full build {med(full):.2f} s (min {min(full):.2f}){verdict}")
    print(f"{label}: no-op rebuild, metallib-builder build {med(noop_cli):.2f} s"
          f"{' OK' if med(noop_cli) <= 1.0 else ' OVER 1 s'}; plain ninja {med(noop_ninja):.3f} s")  # fmt: skip


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--jobs", type=int, default=2)
    parser.add_argument("--runs", type=int, default=3)
    parser.add_argument("--aot", action="store_true", help="also time AOT with the stand-in")
    args = parser.parse_args()
    print(f"{args.runs} runs each, -j {args.jobs}, medians")
    _measure("jit-on (all families)", ["--jit"], args.jobs, args.runs, 60.0)
    if args.aot:
        tools = ["--metal-compiler", str(STANDIN / "metal-standin"),
                 "--metallib-linker", str(STANDIN / "metallib-standin")]  # fmt: skip
        _measure("jit-off (stand-in compiler)", ["--no-jit", *tools], args.jobs, args.runs, None)


if __name__ == "__main__":
    main()
