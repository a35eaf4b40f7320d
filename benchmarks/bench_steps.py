"""Where the container commands spend their time, in one process, with and without the C extension.

Runs itself twice, with METALLIB_BUILDER_NATIVE=1 and =0, and prints per step the median of
``--runs`` repetitions: parsing the function list, hashing every module (as verify does), verify's
structural screen (after the hashing, as verify runs it), slim keeping every function split into
planning (parts, layout, function list, reflection list) and the kernel copy, and that write with
the modules hashed beside it, as slim does.

    python benchmarks/bench_steps.py [FILE] [--runs 5]
"""

from __future__ import annotations

import argparse
import importlib
import json
import os
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

from _timing import ENV, ROOT, default_metallib

STEPS = ("parse", "hash", "screen", "slim-plan", "slim-copy", "slim-and-hash")


def measure(source: Path, runs: int) -> dict[str, float]:
    sys.path.insert(0, str(ROOT))
    from builder.metallib import open_metallib, parts_from_library, write_library
    from builder.metallib.native import SpanHashes, hash_spans

    verify = importlib.import_module("builder.metallib.verify")
    sink = importlib.import_module("builder.metallib.writer")
    times: dict[str, list[float]] = {step: [] for step in STEPS}
    copying = [0.0]
    kernel_copy = sink._kernel_copy  # internal steps, timed alone: the benchmark wraps them

    def timed_copy(*args: object) -> bool:
        start = time.perf_counter()
        done: bool = kernel_copy(*args)
        copying[0] += time.perf_counter() - start
        return done

    sink._kernel_copy = timed_copy
    with tempfile.TemporaryDirectory(dir=ROOT) as tmp:
        out = Path(tmp) / "out.metallib"
        for _ in range(runs):
            with open_metallib(source) as lib:
                start = time.perf_counter()
                table = lib.columns()
                times["parse"].append(time.perf_counter() - start)
                start = time.perf_counter()
                hash_spans(lib.data, table.module_offsets, table.module_bytes, fd=lib.fileno())
                times["hash"].append(time.perf_counter() - start)
                start = time.perf_counter()
                verify._suspects(lib, table)
                times["screen"].append(time.perf_counter() - start)
                out.unlink(missing_ok=True)
                os.sync()
                copying[0] = 0.0
                start = time.perf_counter()
                write_library(parts_from_library(lib), out)
                total = time.perf_counter() - start
                times["slim-plan"].append(total - copying[0])
                times["slim-copy"].append(copying[0])
                out.unlink()
                os.sync()
                start = time.perf_counter()
                parts = parts_from_library(lib)
                hashes = SpanHashes(
                    lib.data, table.module_offsets, table.module_bytes, fd=lib.fileno()
                )
                write_library(parts, out)
                hashes.digests()
                times["slim-and-hash"].append(time.perf_counter() - start)
    return {step: statistics.median(values) for step, values in times.items()}


def main() -> None:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("file", nargs="?", type=Path)
    parser.add_argument("--runs", type=int, default=5)
    parser.add_argument("--child", action="store_true", help=argparse.SUPPRESS)
    args = parser.parse_args()
    source = args.file or default_metallib()
    if args.child:
        print(json.dumps(measure(source, args.runs)))
        return
    results = {}
    for flag in ("1", "0"):
        done = subprocess.run(
            [sys.executable, __file__, str(source), "--runs", str(args.runs), "--child"],
            env={**ENV, "METALLIB_BUILDER_NATIVE": flag},
            capture_output=True,
            text=True,
            check=True,
        )
        results[flag] = json.loads(done.stdout)
    print(
        f"input: {source} ({source.stat().st_size} bytes); "
        f"medians of {args.runs} runs in one process"
    )
    print(f"{'step':<12} {'C extension':>12} {'pure Python':>12}")
    for step in STEPS:
        print(
            f"{step:<12} {results['1'][step] * 1000:>9.1f} ms {results['0'][step] * 1000:>9.1f} ms"
        )


if __name__ == "__main__":
    main()
