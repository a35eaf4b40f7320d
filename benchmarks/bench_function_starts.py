"""Benchmark: peak memory of ``LC_FUNCTION_STARTS`` on a crafted dylib (issue 33 item 9).

A dylib made here with clang and ld64.lld, whose ``__text`` holds ``--megabytes`` MB of zeros,
gets that many MB of function-start data appended to ``__LINKEDIT``, every byte ``0x01``: one
start per byte of ``__TEXT``, the most the data can claim (issue 33 measured ``sources`` at
1.7 GB on a 42 MB file of this kind, 0.86 GB on 21 MB). Measured in child processes (peak RSS
from the child's own ``VmHWM``, CPU from ``os.wait4``), for this checkout's interpreter and,
with ``--baseline-python``, another one whose installed metallib-builder is the code to compare
with (an editable install takes precedence over ``PYTHONPATH``, so a baseline is its own
virtual environment):

* ``nothing``: the interpreter importing the command line, the floor of the figures below;
* ``starts``: ``read_layout`` and every start counted (``Image.function_starts``);
* ``sources`` (with ``--sources``): the whole ``sources FILE`` command, which
  reads 16 bytes at each start (slow: minutes for 21 MB).

    python benchmarks/bench_function_starts.py --megabytes 21 \\
        --baseline-python /path/to/main/.venv/bin/python

It is a script, not a test: memory depends on the interpreter and the machine
(docs/performance.md).
"""

from __future__ import annotations

import argparse
import os
import shutil
import struct
import subprocess
import sys
import tempfile
import time
from pathlib import Path

from _timing import ROOT

sys.path.insert(0, str(ROOT / "tests"))

# The child's own peak (VmHWM: its memory since exec); ru_maxrss of a child starts at the
# parent's peak, as Linux carries it across fork and exec.
_PEAK = """
import atexit, sys
def _peak():
    with open("/proc/self/status") as status:
        print(next(l for l in status if l.startswith("VmHWM")).split()[1], file=sys.stderr)
atexit.register(_peak)
"""
_COUNT = (
    _PEAK
    + """
from builder.metallib.binary_sections import read_layout
[image] = read_layout(sys.argv[1]).images
print(sum(1 for _ in image.function_starts()))
"""
)
_COMMAND = (
    _PEAK
    + """
from builder.cli.group import main
sys.exit(main(sys.argv[1:]))
"""
)


def crafted(folder: Path, megabytes: int) -> Path:
    """The dylib: ``__text`` of ``megabytes`` MB, and as many MB of 0x01 function starts.
    Written in pieces: a child's peak RSS starts at this process's (fork and exec keep it)."""
    from binaries import link_dylib, load_commands

    blob = folder / "zeros.bin"
    with open(blob, "wb") as out:
        out.writelines(bytes(1 << 20) for _ in range(megabytes))
    dylib = link_dylib(folder / "libstarts.dylib", [("__TEXT,__text", "_big", blob)])
    blob.unlink()
    commands = load_commands(dylib)
    [linkedit] = [c for c in commands if c.segname == "__LINKEDIT"]
    [starts] = [c for c in commands if c.cmd == "LC_FUNCTION_STARTS"]
    size, extra = dylib.stat().st_size, megabytes << 20
    grown = linkedit.fields["filesize"] + extra
    last = commands[-1]
    with open(dylib, "rb") as source:
        head = bytearray(source.read(last.offset + last.fields["cmdsize"]))
        struct.pack_into("<Q", head, linkedit.offset + 32, grown)  # vmsize
        struct.pack_into("<Q", head, linkedit.offset + 48, grown)  # filesize
        struct.pack_into("<II", head, starts.offset + 8, size, extra)  # dataoff, datasize
        out_path = folder / "libcrafted.dylib"
        with open(out_path, "wb") as out:
            out.write(head)
            shutil.copyfileobj(source, out)
            out.writelines(b"\x01" * (1 << 20) for _ in range(megabytes))
    return out_path


def measure(cmd: list[str]) -> tuple[int, float, float, str]:
    """(peak RSS in KiB, CPU seconds, wall seconds, first output line) of one child, which
    prints its peak last on stderr."""
    start = time.perf_counter()
    with tempfile.TemporaryFile() as out, tempfile.TemporaryFile() as err:
        child = subprocess.Popen(cmd, stdout=out, stderr=err)
        _, status, usage = os.wait4(child.pid, 0)
        wall = time.perf_counter() - start
        out.seek(0)
        err.seek(0)
        if os.waitstatus_to_exitcode(status):
            sys.exit(f"failed: {' '.join(cmd)}\n{err.read().decode()[-2000:]}")
        first = out.read(200).decode(errors="replace").split("\n", 1)[0]
        peak = int(err.read().decode().split()[-1])
    return peak, usage.ru_utime + usage.ru_stime, wall, first


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--megabytes", type=int, default=21)
    parser.add_argument("--baseline-python", help="an interpreter with the code to compare")
    parser.add_argument("--sources", action="store_true", help="also the whole sources command")
    args = parser.parse_args()
    pythons = {"this checkout": sys.executable}
    if args.baseline_python:
        pythons["baseline"] = args.baseline_python
    with tempfile.TemporaryDirectory(prefix="bench-starts-") as folder:
        dylib = crafted(Path(folder), args.megabytes)
        print(f"{dylib.stat().st_size:,} bytes, {args.megabytes} MB of function starts")
        for name, python in pythons.items():
            cases = {"nothing": [python, "-c", _PEAK + "import builder.cli"]}  # the floor
            cases["starts"] = [python, "-c", _COUNT, str(dylib)]
            if args.sources:
                cases["sources"] = [python, "-c", _COMMAND, "sources", str(dylib)]
            for case, cmd in cases.items():
                rss, cpu, wall, first = measure(cmd)
                print(
                    f"{name:14} {case:8} peak RSS {rss / 1024:8.1f} MiB  CPU {cpu:6.2f} s  "
                    f"wall {wall:6.2f} s  ({first[:40]})"
                )


if __name__ == "__main__":
    main()
