"""Benchmark: metallibs inside a binary (issue 26), on torch 2.14.1's libtorch_cpu.dylib (386 MB).

Two measurements, each of whole child processes (time and peak RSS from ``os.wait4``):

* ``report DYLIB --format json`` against the sum of ``report`` on its two metallibs cut out
  beforehand (the target: at most 1.3 times), interleaved, medians; and peak RSS of each, which
  should not grow with the binary's size.
* ``--libraries``: the binary-format libraries considered for reading Mach-O (LIEF, macholib as
  it ships, and ``builder.metallib.binary_sections``, macholib on headers only), listing the
  sections and the symbols, checked against ``llvm-objdump --macho --private-headers`` and
  ``llvm-nm --defined-only``. LIEF is not a dependency: ``--lief-path DIR`` names a folder it
  was installed into (``pip install --target DIR lief``).

    python benchmarks/bench_binaries.py --runs 7
    python benchmarks/bench_binaries.py --libraries --lief-path /tmp/lief

It is a script, not a test: timings depend on the machine (docs/performance.md).
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

from _timing import ENV, ROOT

sys.path.insert(0, str(ROOT))
sys.path.insert(0, str(ROOT / "tests"))


def run_child(cmd: list[str], env: dict[str, str] | None = None) -> tuple[float, int, str, float]:
    """(wall seconds, peak RSS in KiB, stdout, CPU seconds): Popen + wait4, so the RSS and CPU
    time are this child's (CPU time holds up on a loaded machine, wall time does not)."""
    start = time.perf_counter()
    with tempfile.TemporaryFile() as out, tempfile.TemporaryFile() as err:
        child = subprocess.Popen(cmd, stdout=out, stderr=err, env=env or ENV)
        _, status, usage = os.wait4(child.pid, 0)
        elapsed = time.perf_counter() - start
        child.returncode = os.waitstatus_to_exitcode(status)
        out.seek(0)
        err.seek(0)
        if child.returncode:
            sys.exit(f"failed ({child.returncode}): {' '.join(cmd)}\n{err.read().decode()}")
        return elapsed, usage.ru_maxrss, out.read().decode(), usage.ru_utime + usage.ru_stime


def torch_dylib() -> tuple[Path, list[tuple[int, int]]]:
    """The cached libtorch_cpu.dylib of torch 2.14.1 (downloaded on first use) and the
    (offset, size) of each metallib in it, as the finder reports them."""
    from builder.inputs.targets import resolve_target

    libs = resolve_target("torch==2.14.1", platform="macosx_14_0_arm64")
    assert libs[0].path is not None
    return libs[0].path, [(lib.window.offset, lib.window.size) for lib in libs if lib.window]


def bench_report(runs: int) -> None:
    dylib, windows = torch_dylib()
    cli = [sys.executable, "-m", "builder", "report", "--format", "json"]
    with tempfile.TemporaryDirectory() as tmp:
        cut = []
        with open(dylib, "rb") as handle:
            for n, (offset, size) in enumerate(windows, 1):
                handle.seek(offset)
                path = Path(tmp) / f"lib{n}.metallib"
                path.write_bytes(handle.read(size))
                cut.append(path)
        cases = {"dylib": [cli + [str(dylib)]], "cut out": [cli + [str(p)] for p in cut]}
        times: dict[str, list[float]] = {k: [] for k in cases}
        cpu: dict[str, list[float]] = {k: [] for k in cases}
        peaks: dict[str, list[int]] = {k: [] for k in cases}
        for label, cmds in cases.items():  # warm-up: page cache, bytecode
            for cmd in cmds:
                run_child(cmd)
        for _ in range(runs):
            for label, cmds in cases.items():
                results = [run_child(cmd) for cmd in cmds]
                times[label].append(sum(r[0] for r in results))
                cpu[label].append(sum(r[3] for r in results))
                peaks[label].append(max(r[1] for r in results))
        print(f"input: {dylib} ({dylib.stat().st_size:,} B), metallibs at {windows}")
        for name, values in (("wall", times), ("CPU", cpu)):
            ours, base = statistics.median(values["dylib"]), statistics.median(values["cut out"])
            print(
                f"{name}: report DYLIB --format json {ours * 1000:.0f} ms; report on the "
                f"{len(cut)} cut-out metallibs, summed, {base * 1000:.0f} ms; ratio "
                f"{ours / base:.2f} (target <= 1.3); medians of {runs} interleaved rounds"
            )
        print(
            f"peak RSS: dylib {statistics.median(peaks['dylib']) / 1024:.0f} MiB, "
            f"largest cut-out {statistics.median(peaks['cut out']) / 1024:.0f} MiB"
        )


_LIEF = """
import json, sys, time
t0 = time.process_time()
import lief
lief.logging.disable()
b = lief.MachO.parse(sys.argv[1]).at(0)
sections = [[s.segment_name, s.name, s.offset, s.size] for s in b.sections]
t1 = time.process_time()
symbols = [(s.name, s.value) for s in b.symbols if s.type == lief.MachO.Symbol.TYPE.SECTION]
t2 = time.process_time()
print(json.dumps({"sections": sections, "symbols": len(symbols), "names": [n for n, _ in symbols],
                  "cpu_sections": t1 - t0, "cpu_symbols": t2 - t1}))
"""
_MACHOLIB = """
import json, sys, time
t0 = time.process_time()
from macholib.MachO import MachO
from macholib.SymbolTable import SymbolTable
m = MachO(sys.argv[1])
h = m.headers[0]
sections = [[s.segname.rstrip(b"\\0").decode(), s.sectname.rstrip(b"\\0").decode(), s.offset,
             s.size] for _, c, d in h.commands if isinstance(d, list) for s in d]
t1 = time.process_time()
out = {"sections": sections, "cpu_sections": t1 - t0}
if sys.argv[2] == "symbols":
    table = SymbolTable(m, h)
    out["names"] = [n.decode() if isinstance(n, bytes) else n for e, n in table.nlists
                    if e.n_type & 0x0E == 0x0E and not e.n_type & 0xE0]
    out["symbols"] = len(out["names"])
    out["cpu_symbols"] = time.process_time() - t1
print(json.dumps(out))
"""
_OURS = """
import json, sys, time
t0 = time.process_time()
from builder.metallib.binary_sections import read_layout
image = read_layout(sys.argv[1]).images[0]
sections = [[s.segment, s.name, s.offset, s.size] for s in image.sections]
t1 = time.process_time()
names = [s.name for s in image.symbols()]
t2 = time.process_time()
image.names_at([int(a) for a in sys.argv[3:]])
t3 = time.process_time()
print(json.dumps({"sections": sections, "symbols": len(names), "names": names,
                  "cpu_sections": t1 - t0, "cpu_symbols": t2 - t1, "cpu_names_at": t3 - t2}))
"""


def bench_libraries(lief_path: str | None, macholib_symbols: bool) -> None:
    from binaries import macho_sections, nm_addresses

    dylib, windows = torch_dylib()
    expected = {(seg, name): where for (_, seg, name), where in macho_sections(dylib).items()}
    nm = nm_addresses(dylib)
    cases = {"builder.metallib.binary_sections (macholib, headers only)": (_OURS, ENV)}
    cases["macholib 1.16 as it ships (MachO, SymbolTable)"] = (_MACHOLIB, ENV)
    if lief_path:
        cases["LIEF"] = (_LIEF, {**ENV, "PYTHONPATH": f"{lief_path}:{ENV['PYTHONPATH']}"})
    print(f"input: {dylib} ({dylib.stat().st_size:,} B); llvm-nm --defined-only: {len(nm):,}")
    for label, (code, env) in cases.items():
        mode = "symbols" if macholib_symbols or "MachO," not in label else "sections"
        at = [str(offset) for offset, _ in windows]
        seconds, rss, out, cpu = run_child([sys.executable, "-c", code, str(dylib), mode, *at], env)
        doc = json.loads(out)
        steps = ", ".join(
            f"{key.removeprefix('cpu_')} {doc[key]:.2f} s" for key in doc if key.startswith("cpu_")
        )
        got = {(seg, name): (off, size) for seg, name, off, size in doc["sections"]}
        zerofill = {k for k, v in got.items() if expected.get(k) != v and v[0] == 0}
        same = all(got[k] == expected[k] for k in expected if k in got and k not in zerofill)
        names = set(doc.get("names", []))
        verdict = (
            "all equal to llvm-objdump" if same and got.keys() == expected.keys() else "DIFFER"
        )
        print(
            f"{label}: {seconds:.2f} s wall, {cpu:.2f} s CPU ({steps}), peak RSS "
            f"{rss / 1024:.0f} MiB; {len(got)} sections "
            f"({verdict}"
            f"{', zero-fill without file offset: ' + str(len(zerofill)) if zerofill else ''})"
            + (
                f"; {doc['symbols']:,} symbols, {len(names):,} names, "
                f"{len(names & nm.keys()):,} of them in llvm-nm"
                if names
                else "; symbols not read"
            )
        )


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--runs", type=int, default=7)
    parser.add_argument("--libraries", action="store_true")
    parser.add_argument("--lief-path", default=None)
    parser.add_argument(
        "--macholib-symbols",
        action="store_true",
        help="also time macholib's SymbolTable (about half a minute)",
    )
    args = parser.parse_args()
    if args.libraries:
        bench_libraries(args.lief_path, args.macholib_symbols)
    else:
        bench_report(args.runs)


if __name__ == "__main__":
    main()
