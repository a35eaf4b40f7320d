"""Benchmark: peak memory and time of inputs whose cost is in their count (issue 33, item 9).

Three inputs are made in a temporary folder, the way the issue's were:

* a saved report JSON of about 30 MB holding 1.3 million one-byte functions
  (``{"name":"k1","bytes":1}``, 24 bytes each: the most functions per byte a report can hold);
* the same shape just under the default ``METALLIB_BUILDER_MAX_JSON_OBJECTS`` (the most a
  report may cost without the variable);
* a wheel that is nothing but a central directory of 3 million empty entries (about 150 MB).

Each command runs as its own process (``python -m builder ...``); its peak resident memory is
the child's ``ru_maxrss`` (``os.wait4``), its time the wall clock and the CPU time it used. The
inputs are written by a separate process, so that the children start from a small parent (a
child's ``ru_maxrss`` counts the pages it shared with its parent before ``exec``).

    python benchmarks/bench_big_inputs.py                   # this checkout
    python benchmarks/bench_big_inputs.py --python ../main/.venv/bin/python  # another one

``--python`` names the interpreter of the environment whose code runs (an editable install
wins over ``PYTHONPATH``, so the environment decides which checkout is measured).

It is a script, not a test: figures depend on the machine and its load.
"""

from __future__ import annotations

import argparse
import json
import os
import struct
import subprocess
import sys
import tempfile
import time
from pathlib import Path

from _timing import ENV

_ENTRY = struct.Struct("<4s4B4HL2L5H2L")


def saved_report(path: Path, functions: int) -> Path:
    """A consistent saved report (schema 2) of ``functions`` one-byte functions."""
    head = {
        "schema": 2,
        "source": {"path": None, "target": "x.metallib", "kind": "metallib"},
        "file_size": functions + 88,
        "format_version": "2.7",
        "function_count": functions,
        "by": "kernel",
        "grouping": "saved",
        "overhead_bytes": 88,
        "overhead": [{"name": "header", "bytes": 88}],
        "jit_units": [],
        "provenance": {},
    }
    body = ",".join(f'{{"name":"k{i}","bytes":1}}' for i in range(functions))
    path.write_text(json.dumps(head, separators=(",", ":"))[:-1] + ',"functions":[' + body + "]}")
    return path


def directory_wheel(path: Path, entries: int) -> Path:
    """A zip of nothing but a central directory of ``entries`` empty entries and its end record
    (65,535 declared: the most the plain record states)."""
    with path.open("wb") as out:
        size = 0
        for start in range(0, entries, 100_000):
            block = b"".join(
                _ENTRY.pack(b"PK\x01\x02", 20, 3, 20, 0, *(0,) * 7, len(n), *(0,) * 6) + n
                for n in (b"pkg/f%d" % i for i in range(start, min(entries, start + 100_000)))
            )
            out.write(block)
            size += len(block)
        stated = min(entries, 0xFFFF)
        out.write(struct.pack("<4s4H2LH", b"PK\x05\x06", 0, 0, stated, stated, size, 0, 0))
    return path


def measure(args: list[str], python: str, cache: Path) -> tuple[int, float, float, int, str]:
    """(exit code, wall seconds, CPU seconds, peak RSS bytes, last stderr line) of one run."""
    env = {k: v for k, v in ENV.items() if k != "PYTHONPATH"}
    env["METALLIB_BUILDER_CACHE"] = str(cache)
    start = time.perf_counter()
    child = subprocess.Popen(
        [python, "-m", "builder", *args],
        stdout=subprocess.DEVNULL,
        stderr=subprocess.PIPE,
        env=env,
        cwd=cache.parent,
    )
    assert child.stderr is not None
    err = child.stderr.read().decode(errors="replace")
    _, status, usage = os.wait4(child.pid, 0)
    child.returncode = os.waitstatus_to_exitcode(status)
    wall = time.perf_counter() - start
    lines = err.strip().splitlines()
    return (
        child.returncode,
        wall,
        usage.ru_utime + usage.ru_stime,
        usage.ru_maxrss * 1024,
        lines[-1] if lines else "",
    )


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--python", default=sys.executable, help="interpreter whose code runs")
    parser.add_argument("--functions", type=int, default=1_300_000)
    parser.add_argument("--entries", type=int, default=3_000_000)
    parser.add_argument("--make", type=Path, help=argparse.SUPPRESS)  # (the writing process)
    args = parser.parse_args()
    names = ("huge.json", "under.json", "pkg-1.0-py3-none-macosx_14_0_arm64.whl")
    if args.make is not None:
        saved_report(args.make / names[0], args.functions)
        saved_report(args.make / names[1], 499_000)
        directory_wheel(args.make / names[2], args.entries)
        return
    with tempfile.TemporaryDirectory(prefix="bench-big-") as tmp:
        folder = Path(tmp)
        subprocess.run([sys.executable, *sys.argv, "--make", tmp], check=True)
        report, under, wheel = (folder / name for name in names)
        cases = [
            (f"report, {report.stat().st_size / 1e6:.1f} MB", ["report", str(report)]),
            (f"report, {under.stat().st_size / 1e6:.1f} MB", ["report", str(under)]),
            ("report --format json, same", ["report", str(under), "--format", "json"]),
            ("compare, same twice", ["compare", str(under), str(under)]),
            (f"list, {args.entries:,} entries", ["list", str(wheel)]),
        ]
        where = subprocess.run(
            [args.python, "-c", "import builder; print(builder.__file__)"],
            capture_output=True,
            text=True,
            check=True,
            env={k: v for k, v in ENV.items() if k != "PYTHONPATH"},
            cwd=tmp,
        )
        print(f"code: {where.stdout.strip()}")
        print(f"{'input':<30} {'exit':>4} {'wall s':>7} {'CPU s':>6} {'peak MB':>8}  message")
        for label, argv in cases:
            code, wall, cpu, peak, line = measure(argv, args.python, folder / "cache")
            print(f"{label:<30} {code:>4} {wall:>7.2f} {cpu:>6.2f} {peak / 1e6:>8.0f}  {line[:90]}")


if __name__ == "__main__":
    main()
