"""The JIT lexer's comment scan is linear in the text: time per byte at n and 4n bytes.

A scan that searched back from the file's start at every quote (before issue 27) grew with the
square of the text: ggml-metal.metal (499 KB) took 30 s. This script times ``comment_spans`` +
``strip_comments`` on a C-like text of many literals and comments at two sizes, and on any real
files given, and prints the medians and the ratio of the two sizes' times (linear: about 4).
For each FILE it also times the whole ``metallib-builder embed FILE`` process against a baseline
process that reads the same file and writes its bytes (the least an embed can do).

The growth check that was a test (issue 33 item 24: a wall-clock ratio failed under load, 20.4
against its bound of 15): ``comment_spans`` on 200 KB and on 2 MB, interleaved, each against a
least-work baseline (one Python loop over the same characters), medians of ``--runs``. The scan
may grow at most 15x for 10x the text (a quadratic one grows ~100x); the baseline's own growth
is printed beside it, and the load average, since both are noise on a shared machine. Exit 1
when the scan's growth passes the bound. The tests count the characters the scan reads instead
(tests/jit/test_lexing.py), which no load changes.

    python benchmarks/bench_lexing.py [--runs 5] [-I DIR] [FILE ...]
"""

from __future__ import annotations

import argparse
import os
import statistics
import sys
import tempfile
import time
from pathlib import Path

from _timing import ROOT, compare

sys.path.insert(0, str(ROOT))

from builder.jit.literals import comment_spans, strip_comments

LINE = 'x = "a//b"; c = \'/\'; n = 1\'000; // note\n/* b */ s = R"(r)"; t = u8R"d(x)d";\n'


def median_seconds(text: str, runs: int) -> float:
    times = []
    for _ in range(runs):
        start = time.perf_counter()
        comment_spans(text)
        strip_comments(text)
        times.append(time.perf_counter() - start)
    return statistics.median(times)


GROWTH_BOUND = 15.0
"""10x the text may cost at most this many times the time (linear: ~10, quadratic: ~100)."""


def _least_work(text: str) -> int:
    """One pass over the characters in Python: the least a character scan can do."""
    count = 0
    for c in text:
        count += c == "/"
    return count


def growth(runs: int) -> tuple[float, float, float, float]:
    """Medians of interleaved runs on 200 KB and 2 MB: (scan small, scan large, baseline small,
    baseline large) in seconds."""
    small = LINE * (200_000 // len(LINE) + 1)
    large = small * 10
    times: dict[tuple[str, int], list[float]] = {}
    for _ in range(runs):
        for size, text in ((0, small), (1, large)):
            for name, work in (("scan", comment_spans), ("base", _least_work)):
                start = time.perf_counter()
                work(text)
                times.setdefault((name, size), []).append(time.perf_counter() - start)
    med = {k: statistics.median(v) for k, v in times.items()}
    return med["scan", 0], med["scan", 1], med["base", 0], med["base", 1]


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--runs", type=int, default=5)
    parser.add_argument("-I", dest="include_dirs", action="append", default=[], type=Path)
    parser.add_argument("files", nargs="*", type=Path)
    args = parser.parse_args()
    small = LINE * 2_000
    large = small * 4
    t_small, t_large = median_seconds(small, args.runs), median_seconds(large, args.runs)
    print(f"synthetic {len(small):,} B: {t_small:.3f} s (median of {args.runs})")
    print(f"synthetic {len(large):,} B: {t_large:.3f} s (median of {args.runs})")
    print(f"ratio 4x bytes: {t_large / t_small:.2f}x time (linear: ~4, quadratic: ~16)")
    scan_s, scan_l, base_s, base_l = growth(args.runs)
    load = ", ".join(f"{x:.1f}" for x in os.getloadavg())
    print(
        f"growth 10x text (200 KB -> 2 MB, medians of {args.runs} interleaved, load {load}): "
        f"scan {scan_s:.3f} -> {scan_l:.3f} s ({scan_l / scan_s:.1f}x), least-work loop "
        f"{base_s:.3f} -> {base_l:.3f} s ({base_l / base_s:.1f}x); bound {GROWTH_BOUND:.0f}x"
    )
    over = scan_l / scan_s > GROWTH_BOUND
    for path in args.files:
        text = path.read_text(encoding="utf-8", errors="surrogateescape")
        print(f"{path.name} {len(text):,} chars: {median_seconds(text, args.runs):.3f} s")
        with tempfile.TemporaryDirectory() as tmp:
            includes = [a for d in args.include_dirs for a in ("-I", str(d))]
            ours = [
                sys.executable,
                "-m",
                "builder",
                "embed",
                str(path),
                *includes,
                "-o",
                tmp + "/e.cpp",
            ]
            copy = f"open({tmp + '/c.cpp'!r}, 'wb').write(open({str(path)!r}, 'rb').read())"
            embed, baseline = compare(ours, [sys.executable, "-c", copy], args.runs)
        print(
            f"  embed process {embed:.3f} s, read+write baseline {baseline:.3f} s "
            f"(medians of {args.runs}, interleaved): {embed / baseline:.2f}x"
        )
    if over:
        sys.exit(
            f"the scan grew {scan_l / scan_s:.1f}x for 10x the text (bound {GROWTH_BOUND:.0f}x)"
        )


if __name__ == "__main__":
    main()
