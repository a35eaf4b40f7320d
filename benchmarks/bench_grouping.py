"""Benchmark (issue 34 item 14): the cost per name of grouping a library's function names.

``group_names(names, "kernel")`` as ``report`` calls it, in one process, on the names of two real
libraries: mlx-metal 0.32.4's ``mlx.metallib`` (macOS 14: the built-in MLX rules label them) and
torch 2.14.1's ``metal_basic`` library in ``libtorch_cpu.dylib`` (not MLX's: the MLX rules are
tried, then the generic stem). Target: torch's cost per name at most 2x MLX's. Beside them, the
least work a labelling can do, one dictionary look-up per name (``{}.get(name, "other")``), to
show what is left of the Python loop itself. Medians of interleaved runs of CPU time; the load
average is printed. ``--check`` also writes each library's labels to compare across commits:

    python benchmarks/bench_grouping.py --runs 21
    python benchmarks/bench_grouping.py --labels /tmp/labels.json   # then diff two commits' files
    git archive BASE builder/size/grouping.py builder/size/rules | tar -x -C /tmp/base
    python benchmarks/bench_grouping.py --before /tmp/base/builder/size/grouping.py

``--before`` times another commit's ``grouping.py`` beside this one, interleaved (it imports the
rest of ``builder`` from here). The generic stems are made in C when the extension is built
(``generic_stems``, csrc/stems.c); ``METALLIB_BUILDER_NATIVE=0`` times the pure-Python path. The
script prints which is in use.

It is a script, not a test: timings depend on the machine (docs/performance.md).
"""

from __future__ import annotations

import argparse
import importlib.util
import json
import statistics
import sys
import time
from collections.abc import Callable, Sequence
from pathlib import Path

from _timing import ROOT, load_average

sys.path.insert(0, str(ROOT))

from builder.inputs.targets import open_library, resolve_target
from builder.metallib.native import status
from builder.size.grouping import OTHER, Grouping, group_names

LIBRARIES = {
    "mlx-metal 0.32.4 mlx.metallib": ("mlx-metal==0.32.4", "macosx_14_0_arm64", 0),
    "torch 2.14.1 metal_basic": ("torch==2.14.1", "macosx_14_0_arm64", "metal_basic"),
}


def library_names(spec: str, platform: str, which: int | str) -> list[str]:
    """The function names of one library of a real wheel (cached after the first download)."""
    libraries = resolve_target(spec, platform=platform)
    if isinstance(which, str):
        libraries = [lib for lib in libraries if which in lib.member]
    with open_library(libraries[0 if isinstance(which, str) else which]) as lib:
        return list(lib.columns().names)


def _load_before(path: Path) -> Callable[..., Grouping]:
    """``group_names`` of the grouping module at ``path``."""
    spec = importlib.util.spec_from_file_location("grouping_before", path)
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    sys.modules[spec.name] = module  # its dataclasses look their module up
    spec.loader.exec_module(module)
    found: Callable[..., Grouping] = module.group_names
    return found


def per_name(work: Callable[[Sequence[str]], object], names: Sequence[str]) -> float:
    """CPU seconds per name (``time.process_time``: one thread, so the CPU time is the work's;
    wall time on a shared machine counts the other processes' turns too)."""
    start = time.process_time()
    work(names)
    return (time.process_time() - start) / len(names)


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--runs", type=int, default=21)
    parser.add_argument("--labels", type=Path, help="write every library's labels (JSON) here")
    parser.add_argument("--before", type=Path, help="another commit's grouping.py, timed beside")
    args = parser.parse_args()
    names = {label: library_names(*where) for label, where in LIBRARIES.items()}
    if args.labels:
        grouped = {label: group_names(n, "kernel") for label, n in names.items()}
        args.labels.write_text(
            json.dumps({k: [g.method, g.labels] for k, g in grouped.items()}), encoding="utf-8"
        )
    least: dict[str, str] = {}
    cases: dict[str, tuple[Callable[[Sequence[str]], object], Sequence[str]]] = {}
    before = _load_before(args.before) if args.before else None
    for label, some in names.items():
        cases[label] = (lambda n: group_names(n, "kernel"), some)
        if before is not None:
            if before(some, "kernel").labels != group_names(some, "kernel").labels:
                sys.exit(f"--before labels {label} differently")
            cases[f"{label}: before"] = (lambda n: before(n, "kernel"), some)
        cases[f"{label}: one dict look-up"] = (lambda n: [least.get(x, OTHER) for x in n], some)
    times: dict[str, list[float]] = {label: [] for label in cases}
    for _ in range(args.runs):
        for label, (work, some) in cases.items():
            times[label].append(per_name(work, some))
    med = {label: statistics.median(values) for label, values in times.items()}
    print(f"medians of {args.runs} interleaved runs, load average {load_average()}")
    print(f"native code: {status()}")
    for label, value in med.items():
        count = len(cases[label][1])
        print(f"  {label:<48} {value * 1e6:6.2f} us CPU per name ({count:,} names)")
    mlx, torch = (med[label] for label in LIBRARIES)
    print(f"torch / MLX per name: {torch / mlx:.2f} (target <= 2)")
    if before is not None:
        mlx, torch = (med[f"{label}: before"] for label in LIBRARIES)
        print(f"before: torch / MLX per name: {torch / mlx:.2f}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
