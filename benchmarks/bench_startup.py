"""Benchmark (issue 34 item 13): start-up of the command line against a bare interpreter.

``metallib-builder --version`` and ``metallib-builder --help`` as whole processes against
``python -c pass`` in the same environment (the least any Python tool can do), interleaved,
medians of wall and CPU time. Targets: ``--version`` at most 3x, ``--help`` at most 4x. Also
timed, to show where start-up goes: ``import click`` and ``import builder.cli``.

    python benchmarks/bench_startup.py [--runs 21]

The console script is run through ``python -m builder`` so that both sides start the same
interpreter the same way (the console script's own wrapper adds only its ``import``). It is a
script, not a test: timings depend on the machine (docs/performance.md).
"""

from __future__ import annotations

import argparse
import sys

from _timing import ROOT, interleaved, print_medians

TARGETS = {"--version": 3.0, "--help": 4.0}


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--runs", type=int, default=21)
    args = parser.parse_args()
    py = sys.executable
    cases = {
        "python -c pass": [py, "-c", "pass"],
        "--version": [py, "-m", "builder", "--version"],
        "--help": [py, "-m", "builder", "--help"],
        "import click": [py, "-c", "import click"],
        "import builder.cli": [py, "-c", "import builder.cli"],
    }
    results = interleaved(cases, args.runs, cwd=ROOT)
    print_medians(results, args.runs)
    base_wall, base_cpu = results["python -c pass"]
    failed = False
    for label, target in TARGETS.items():
        wall, cpu = results[label]
        met = wall / base_wall <= target
        failed |= not met
        print(
            f"{label} / python -c pass: {wall / base_wall:.2f} wall, {cpu / base_cpu:.2f} CPU "
            f"(target <= {target:g}: {'met' if met else 'NOT met'})"
        )
    return 1 if failed else 0


if __name__ == "__main__":
    raise SystemExit(main())
