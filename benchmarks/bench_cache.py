"""Benchmark: what checking the wheel cache costs (issue 33, item 10).

A wheel's members are extracted once; every later run reuses them. Reuse now checks each member
against the SHA-256 recorded when it was written: by its file stamp (one ``stat``) while that is
unchanged, by hashing it again when not. This script measures, on one wheel in a cache folder of
its own (so the shared cache is never written):

* SHA-256 of the wheel's largest member and one ``os.stat`` of it (the two ways to check);
* ``extract_metallibs`` on the warm cache, in-process, for each interpreter given: the whole
  reuse path (digest record, member checks, the size-limit walk);
* the same after ``touch``-ing every member (the stamps no longer match: each is hashed again);
* the first, cold extraction (members hashed while they are copied).

    python benchmarks/bench_cache.py                      # torch's wheel if cached, else mlx-metal
    python benchmarks/bench_cache.py WHEEL --runs 7 --python ../main/.venv/bin/python

``--python`` adds an interpreter (its environment decides which checkout runs: an editable
install wins over ``PYTHONPATH``); this one always runs. A script, not a test: figures depend on
the machine and its load, so CPU time is shown beside the wall clock.
"""

from __future__ import annotations

import argparse
import hashlib
import os
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

from _timing import ENV

_SNIPPET = """
import os, sys, time
from pathlib import Path
from builder.inputs.wheel_extract import extract_metallibs
wheel, touch = Path(sys.argv[1]), sys.argv[2] == "touch"
if touch:
    for p in Path(os.environ["METALLIB_BUILDER_CACHE"], "metallibs").rglob("*"):
        if p.is_file() and not p.name.startswith("."):
            os.utime(p)
wall, cpu = time.perf_counter(), time.process_time()
extract_metallibs(wheel)
print(time.perf_counter() - wall, time.process_time() - cpu)
"""


def _default_wheel() -> Path:
    from builder.inputs import wheel_cache

    wheels = wheel_cache.cache_dir() / "wheels"
    for pattern in ("torch-*.whl", "mlx_metal-0.32.4-*macosx_14_0*.whl", "*.whl"):
        found = sorted(wheels.glob(pattern))
        if found:
            return found[0]
    sys.exit(f"no wheel in {wheels}: give one")


def _run(python: str, wheel: Path, cache: Path, mode: str) -> tuple[float, float]:
    env = {k: v for k, v in ENV.items() if k != "PYTHONPATH"}
    env["METALLIB_BUILDER_CACHE"] = str(cache)
    done = subprocess.run(
        [python, "-c", _SNIPPET, str(wheel), mode],
        capture_output=True,
        text=True,
        env=env,
        cwd=cache.parent,
        check=False,
    )
    if done.returncode != 0:
        sys.exit(f"{python} failed:\n{done.stderr}")
    wall, cpu = done.stdout.split()
    return float(wall), float(cpu)


def _hash_and_stat(cache: Path) -> None:
    members = [p for p in (cache / "metallibs").rglob("*") if p.is_file()]
    largest = max(members, key=lambda p: p.stat().st_size)
    wall, cpu = time.perf_counter(), time.process_time()
    sha = hashlib.sha256()
    with largest.open("rb") as handle:
        while block := handle.read(1 << 20):
            sha.update(block)
    wall, cpu = time.perf_counter() - wall, time.process_time() - cpu
    start = time.perf_counter()
    for _ in range(10_000):
        os.stat(largest)
    each = (time.perf_counter() - start) / 10_000
    size = largest.stat().st_size
    print(f"largest member: {largest.name}, {size:,} bytes")
    print(f"  SHA-256: {wall:.2f} s wall, {cpu:.2f} s CPU ({size / cpu / 1e9:.2f} GB/s of CPU)")
    print(f"  os.stat: {each * 1e6:.1f} µs")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("wheel", nargs="?", type=Path)
    parser.add_argument("--runs", type=int, default=5)
    parser.add_argument("--python", action="append", default=[], help="another interpreter")
    args = parser.parse_args()
    wheel = (args.wheel or _default_wheel()).resolve()
    print(f"wheel: {wheel.name} ({wheel.stat().st_size:,} bytes)")
    for python in [sys.executable, *args.python]:
        with tempfile.TemporaryDirectory(prefix="bench-cache-") as tmp:
            cache = Path(tmp) / "cache"
            cold = _run(python, wheel, cache, "cold")
            if python == sys.executable:
                _hash_and_stat(cache)
            print(f"{python}:")
            print(f"  cold extraction: {cold[0]:.2f} s wall, {cold[1]:.2f} s CPU")
            for mode in ("warm", "touch"):
                runs = [_run(python, wheel, cache, mode) for _ in range(args.runs)]
                wall = statistics.median(r[0] for r in runs)
                cpu = statistics.median(r[1] for r in runs)
                label = "reuse" if mode == "warm" else "reuse, every member touched"
                print(f"  {label}: {wall * 1000:.1f} ms wall, {cpu * 1000:.1f} ms CPU (median)")


if __name__ == "__main__":
    main()
