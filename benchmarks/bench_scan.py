"""The kernel scanner on unterminated constructs: time at 200 KB and at 2 MB.

An unclosed ``[[kernel``, string or declaration is where a backtracking pattern would go
quadratic or worse. tests/kernels/discovery/test_scan.py checks the scan emits nothing and
returns (under a hang guard); the time it takes was a wall-clock assertion there (under 5 s),
moved here (issue 33 item 24). This script times ``scan_kernels`` (the fast path and the general
parser, as the test runs both) on the test's texts at 1x and 10x, interleaved with a least-work
baseline (one regex pass over the same text that finds every ``[[``), and prints the medians,
each one's growth for 10x the text (linear: ~10, quadratic: ~100) and the load average. Exit 1
when the scan grows more than 15x.

    python benchmarks/bench_scan.py [--runs 5]
"""

from __future__ import annotations

import argparse
import os
import re
import statistics
import sys
import time
from collections.abc import Callable

from _timing import ROOT

sys.path.insert(0, str(ROOT))

from builder.kernels.kernel_scan import scan_kernels

GROWTH_BOUND = 15.0
_BRACKETS = re.compile(r"\[\[")


def texts(scale: int) -> list[str]:
    """The test's unterminated constructs, ``scale`` times as long."""
    return [
        "[[kernel " + "x" * 200_000 * scale + "\nkernel void f(" + '"' + "y" * 200_000 * scale,
        "template [[host_name(" + '"a" ' * 20_000 * scale,
    ]


def _scan(text: str) -> None:
    scan_kernels(text)
    scan_kernels(text, fast=False)


def _least_work(text: str) -> None:
    _BRACKETS.findall(text)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--runs", type=int, default=5)
    args = parser.parse_args()
    work: dict[str, Callable[[str], None]] = {"scan": _scan, "least work": _least_work}
    sizes = {1: texts(1), 10: texts(10)}
    times: dict[tuple[str, int], list[float]] = {}
    for _ in range(args.runs):
        for scale, batch in sizes.items():
            for name, run in work.items():
                start = time.perf_counter()
                for text in batch:
                    run(text)
                times.setdefault((name, scale), []).append(time.perf_counter() - start)
    med = {k: statistics.median(v) for k, v in times.items()}
    load = ", ".join(f"{x:.1f}" for x in os.getloadavg())
    print(f"medians of {args.runs} interleaved runs, load average {load}")
    for name in work:
        small, large = med[name, 1], med[name, 10]
        print(f"  {name:10} {small:.4f} s -> {large:.4f} s for 10x the text: {large / small:.1f}x")
    growth = med["scan", 10] / med["scan", 1]
    if growth > GROWTH_BOUND:
        sys.exit(f"the scan grew {growth:.1f}x for 10x the text (bound {GROWTH_BOUND:.0f}x)")


if __name__ == "__main__":
    main()
