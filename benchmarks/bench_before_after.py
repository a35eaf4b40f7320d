"""Benchmark: ``report``, ``list``, ``verify`` and ``compare`` of two checkouts, side by side
(issue 34: these stay no slower while other commands get faster).

Each command runs as a whole process with one interpreter (``--python``: a virtual environment
without this checkout's editable install, so that ``PYTHONPATH`` chooses the code) on each
checkout's ``builder`` (with the C extension copied beside it), interleaved, medians of wall and
CPU time; the load average is printed. Inputs: mlx-metal 0.32.4's macOS 14 ``mlx.metallib`` and,
for ``compare``, 0.32.1's as the base (both cached wheels).

    python benchmarks/bench_before_after.py --before /tmp/old --after /tmp/new \\
        --python /tmp/venv/bin/python --runs 9

Make a checkout: ``git archive COMMIT | tar -x -C DIR`` and copy
``builder/metallib/_native*.so`` from an install into ``DIR/builder/metallib/``; the interpreter:
``python -m venv DIR`` plus a ``.pth`` file naming the site-packages that hold click and rich.
It is a script, not a test: timings depend on the machine (docs/performance.md).
"""

from __future__ import annotations

import argparse
import os
from pathlib import Path

from _timing import ENV, default_metallib, interleaved, load_average


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--before", type=Path, required=True)
    parser.add_argument("--after", type=Path, required=True)
    parser.add_argument("--python", required=True)
    parser.add_argument("--runs", type=int, default=9)
    args = parser.parse_args()
    head, base = default_metallib("0.32.4"), default_metallib("0.32.1")
    commands = {
        "report --format json": ["report", str(head), "--format", "json"],
        "list --format json": ["list", str(head), "--format", "json"],
        "verify": ["verify", str(head)],
        "compare --format json": ["compare", str(base), str(head), "--format", "json"],
    }
    results: dict[str, dict[str, tuple[float, float]]] = {}
    for label, command in commands.items():
        cases = {side: [args.python, "-m", "builder", *command] for side in ("before", "after")}
        envs = {side: {**ENV, "PYTHONPATH": str(getattr(args, side).resolve())} for side in cases}
        # interleaved rounds need one environment per case: run each side through env(1)
        wrapped = {
            side: ["env", f"PYTHONPATH={envs[side]['PYTHONPATH']}", *cmd]
            for side, cmd in cases.items()
        }
        results[label] = interleaved(wrapped, args.runs, cwd=Path(os.getcwd()))
    print(f"{head.name}: medians of {args.runs} interleaved rounds, load average {load_average()}")
    for label, sides in results.items():
        (bw, bc), (aw, ac) = sides["before"], sides["after"]
        print(
            f"  {label:<22} before {bw * 1000:7.1f} ms (CPU {bc * 1000:6.1f})   after "
            f"{aw * 1000:7.1f} ms (CPU {ac * 1000:6.1f})   after/before {aw / bw:.2f} wall, "
            f"{ac / bc:.2f} CPU"
        )
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
