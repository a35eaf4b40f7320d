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
import os
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent

BARE_WALK = r"""
import mmap, struct, sys
U32 = struct.Struct("<I"); U16 = struct.Struct("<H"); U64 = struct.Struct("<Q")
with open(sys.argv[1], "rb") as f:
    data = mmap.mmap(f.fileno(), 0, access=mmap.ACCESS_READ)
fl_off = U64.unpack_from(data, 24)[0]
count = U32.unpack_from(data, fl_off)[0]
pos = fl_off + 4
rows = []
for _ in range(count):
    size = U32.unpack_from(data, pos)[0]
    p, end = pos + 4, pos + size - 4
    name = None; mdsz = 0; offt = None
    while p < end:
        code = data[p:p + 4]
        if code in (b"RBUF", b"SARC", b"SBUF"):
            length = U32.unpack_from(data, p + 4)[0]; payload = p + 8
        else:
            length = U16.unpack_from(data, p + 4)[0]; payload = p + 6
        if code == b"NAME":
            name = data[payload:payload + length - 1].decode()
        elif code == b"MDSZ":
            mdsz = U64.unpack_from(data, payload)[0]
        elif code == b"OFFT":
            offt = struct.unpack_from("<QQQ", data, payload)
        p = payload + length
    rows.append((name, mdsz, offt))
    pos += size
print(len(rows), sum(r[1] for r in rows))
"""


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
        from builder.wheels import metallibs_from_spec

        path = metallibs_from_spec("mlx-metal==0.30.0")[0]
    py = sys.executable
    cases = {
        "bare struct walk": [py, "-c", BARE_WALK, str(path)],
        "report --format json": [py, "-m", "builder", "report", str(path), "--format", "json"],
        "import builder.cli": [py, "-c", "import builder.cli"],
        "python -c pass": [py, "-c", "pass"],
    }
    env = dict(os.environ, PYTHONPATH=str(ROOT))
    cache = tempfile.TemporaryDirectory(prefix="bench-pycache-")
    if args.no_bytecode_cache:
        env["PYTHONDONTWRITEBYTECODE"] = "1"
    else:
        env.pop("PYTHONDONTWRITEBYTECODE", None)
        env["PYTHONPYCACHEPREFIX"] = cache.name
    for cmd in cases.values():  # warm the page cache and the bytecode cache
        subprocess.run(cmd, check=True, stdout=subprocess.DEVNULL, cwd=ROOT, env=env)
    mode = "no bytecode cache" if args.no_bytecode_cache else "bytecode cached"
    print(f"{path} ({path.stat().st_size:,} bytes), {args.runs} interleaved runs, {mode}")
    times = _time_interleaved(cases, args.runs, env)
    cache.cleanup()
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
