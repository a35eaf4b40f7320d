"""Build timings: full builds and no-op rebuilds through the CLI, on N cores (default 2).

Targets: the jit-on preset's full build <= 60 s on 2 cores (issue 5); a no-op `metallib-builder
build` <= 0.3 s (issue 13), whatever the tree. Each measurement is the wall time of a whole
`python -m builder build` process (plan, configure if needed, Ninja, size summary); for the no-op
case plain `ninja -C DIR` is timed too, so the CLI's own cost is visible. The AOT cases use the
stand-in compiler (they measure the build machinery, not Apple's compiler); --tree adds a tree of
.metal entry files (e.g. MLX's kernels with -I).

    python benchmarks/bench_build.py [--jobs 2] [--runs 5] [--aot] [--tree DIR [-I DIR]...]
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

STANDIN = ROOT / "tests" / "cmake_build" / "standin" / "metal-standin"
NOOP_TARGET = 0.3


def _measure(label: str, args: list[str], jobs: int, runs: int, target: float | None) -> None:
    sys.path.insert(0, str(ROOT))
    from builder.cmake_build.cmake import find_tool

    ninja = find_tool("ninja")
    full, noop_cli, noop_ninja = [], [], []
    with tempfile.TemporaryDirectory(prefix="bench-build-") as tmp:
        build_dir = Path(tmp) / "b"
        cmd = [
            sys.executable,
            "-m",
            "builder",
            "build",
            *args,
            "-j",
            str(jobs),
            "--build-dir",
            str(build_dir),
        ]
        for _ in range(runs):
            shutil.rmtree(build_dir, ignore_errors=True)
            full.append(run_once(cmd))
            noop_cli.extend(run_once(cmd) for _ in range(3))
            noop_ninja.append(run_once([ninja, "-C", str(build_dir)]))
    med = statistics.median
    verdict = "" if target is None else (" OK" if med(full) <= target else f" OVER {target:.0f} s")
    noop = " OK" if med(noop_cli) <= NOOP_TARGET else f" OVER {NOOP_TARGET} s"
    print(f"{label}: full build {med(full):.2f} s (min {min(full):.2f}){verdict}")
    print(
        f"{label}: no-op rebuild, metallib-builder build {med(noop_cli):.3f} s "
        f"(min {min(noop_cli):.3f}){noop}; plain ninja {med(noop_ninja):.3f} s"
    )


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--jobs", type=int, default=2)
    parser.add_argument("--runs", type=int, default=5)
    parser.add_argument("--aot", action="store_true", help="also time AOT with the stand-in")
    parser.add_argument("--tree", type=Path, help="also time a tree of .metal entry files (AOT)")
    parser.add_argument("-I", dest="include_dirs", action="append", default=[])
    parser.add_argument("--exclude", action="append", default=[])
    args = parser.parse_args()
    print(f"{args.runs} runs each (no-op: 3 per run), -j {args.jobs}, medians")
    _measure("jit-on (all families)", ["--jit"], args.jobs, args.runs, 60.0)
    tools = ["--metal-compiler", str(STANDIN)]
    if args.aot:
        _measure("jit-off (stand-in compiler)", ["--no-jit", *tools], args.jobs, args.runs, None)
    if args.tree:
        tree = [
            "--source-dir",
            str(args.tree),
            *(a for d in args.include_dirs for a in ("-I", d)),
            *(a for g in args.exclude for a in ("--exclude", g)),
        ]
        _measure(
            f"{args.tree.name} (stand-in compiler)", [*tree, *tools], args.jobs, args.runs, None
        )


if __name__ == "__main__":
    main()
