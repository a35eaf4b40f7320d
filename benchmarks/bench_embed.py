"""Benchmark (issue 34 item 12): ``embed`` of ggml's ``ggml-metal.metal`` against a plain Python
inliner that writes the same text.

Input: llama-cpp-python 0.3.2's vendored ``ggml-metal.metal`` (ggml's Metal kernels in one file,
which includes ``ggml-common.h``), from the sdist the real-data tests download and cache
(``tests/support/real_sdists.py``), or any ``--header`` with its ``-I`` folders. Both sides are
whole processes, interleaved, medians of wall and CPU time. The baseline is
``benchmarks/plain_inliner.py`` (no comment scan, no checks, one string literal); the script
checks first that it writes exactly the preamble text ``embed`` embeds. Target: at most 2x.

    python benchmarks/bench_embed.py --runs 11
    python benchmarks/bench_embed.py --header path/to/x.metal -I path/to
    python benchmarks/bench_embed.py --runs 11 --floor

``--floor`` also times, interleaved with both, ``python -c pass``, ``import click`` and the
imports of every ``builder`` module ``embed`` loads (found with ``-X importtime``), then in fresh
processes the command's work (``write_embed``, imports done) and each import ``embed`` makes
after click's, one at a time in its order; it prints where ``embed``'s CPU time goes and the
least a click command can cost: ``import click`` plus the plain inliner's own work (its time
less ``python -c pass``).

It is a script, not a test: timings depend on the machine (docs/performance.md).
"""

from __future__ import annotations

import argparse
import os
import statistics
import subprocess
import sys
import tempfile
from pathlib import Path

from _timing import BENCH, ENV, ROOT, interleaved, print_medians

sys.path.insert(0, str(ROOT))
sys.path.insert(0, str(ROOT / "tests"))

TARGET = 2.0


def ggml_metal() -> tuple[Path, list[Path]]:
    """llama-cpp-python 0.3.2's ggml-metal.metal and its include folder (downloaded once)."""
    from support.real_sdists import ggml_metal_or_skip

    folder = ggml_metal_or_skip("0.3.2")
    return folder / "ggml-metal.metal", [folder.parent]


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--header", type=Path)
    parser.add_argument("-I", dest="include", action="append", type=Path, default=[])
    parser.add_argument("--runs", type=int, default=11)
    parser.add_argument("--floor", action="store_true", help="also time the parts of embed")
    args = parser.parse_args()
    header, include = (args.header, args.include) if args.header else ggml_metal()
    from builder.jit.preamble import inline_preamble

    flags = [a for d in include for a in ("-I", str(d))]
    with tempfile.TemporaryDirectory(prefix="bench-embed-") as tmp:
        cwd = header.parent
        py = sys.executable
        cases = {
            "embed": [py, "-m", "builder", "embed", header.name, *flags, "-o", f"{tmp}/e.cpp"],
            "plain inliner": [
                py,
                str(BENCH / "plain_inliner.py"),
                header.name,
                *flags,
                "-o",
                f"{tmp}/p.cpp",
            ],
        }
        os.chdir(cwd)  # both name files relative to here, as embed's markers do
        expected = inline_preamble([header.name], include).text
        roots: list[str] = []
        if args.floor:
            cases |= floor_cases(cases["embed"], roots)
        results = interleaved(cases, args.runs, cwd=cwd)
        work = embed_work(header.name, include, Path(tmp, "w.cpp"), args.runs) if args.floor else 0
        imports = import_times(roots, args.runs) if args.floor else {}
        written = Path(tmp, "p.cpp").read_text(encoding="utf-8")
        if written != f'const char preamble[] = R"mbjit({expected})mbjit";\n':
            sys.exit("plain_inliner.py does not write embed's text: no baseline for it")
    print(
        f"{header} ({header.stat().st_size:,} bytes; the preamble: {len(expected):,} characters, "
        "the same in both)"
    )
    print_medians(results, args.runs)
    (wall, cpu), (base_wall, base_cpu) = results["embed"], results["plain inliner"]
    print(
        f"embed / plain inliner: {wall / base_wall:.2f} wall, {cpu / base_cpu:.2f} CPU "
        f"(target <= {TARGET:g})"
    )
    if args.floor:
        print_floor({label: cpu for label, (_, cpu) in results.items()}, work)
        print("embed's imports after click's, one at a time in their order (CPU, 1 ms or more):")
        for name, seconds in imports.items():
            if seconds >= 0.001:
                print(f"  {name:<42} {seconds * 1000:6.1f} ms")
    return 0 if wall / base_wall <= TARGET else 1


def floor_cases(embed: list[str], roots: list[str]) -> dict[str, list[str]]:
    """``python -c pass``, ``import click``, and importing every ``builder`` module that
    ``embed`` imports (as ``-X importtime`` lists them; click and the standard library come
    with them), each a whole process. ``roots`` gets the imports not made by another module,
    from the first ``builder`` one on, in their order."""
    traced = subprocess.run(
        [embed[0], "-X", "importtime", *embed[1:]],
        capture_output=True,
        text=True,
        env=ENV,
        check=True,
    )
    listed = [line.rsplit("|", 1)[-1] for line in traced.stderr.splitlines() if "|" in line]
    found = [name.strip() for name in listed]
    modules = [name for name in found if name.startswith("builder.")]
    top = [name.strip() for name in listed if not name.startswith("  ")]  # " name": depth 0
    roots += top[next(i for i, name in enumerate(top) if name.startswith("builder")) :]
    py = embed[0]
    return {
        "python -c pass": [py, "-c", "pass"],
        "import click": [py, "-c", "import click"],
        f"embed's imports ({len(modules)} modules)": [py, "-c", f"import {', '.join(modules)}"],
    }


def embed_work(header: str, include: list[Path], out: Path, runs: int) -> float:
    """Median CPU seconds of ``embed``'s work, each run in a fresh process with the command's
    modules imported first (a process caches the files it parsed): the header inlined, the C++
    source rendered and written (the output removed before, so it is written every time)."""
    code = (
        "import sys, time\n"
        "from pathlib import Path\n"
        "from builder.jit.generate import write_embed\n"
        "start = time.process_time()\n"
        "write_embed([sys.argv[1]], [Path(p) for p in sys.argv[3:]], sys.argv[2])\n"
        "print(time.process_time() - start)\n"
    )
    times = []
    for _ in range(runs):
        out.unlink(missing_ok=True)
        done = subprocess.run(
            [sys.executable, "-c", code, header, str(out), *map(str, include)],
            capture_output=True,
            text=True,
            env=ENV,
            check=True,
        )
        times.append(float(done.stdout))
    return statistics.median(times)


def import_times(roots: list[str], runs: int) -> dict[str, float]:
    """Median CPU seconds of importing each of ``roots`` in its turn, click first, in fresh
    processes: what each import adds to click's."""
    code = (
        "import importlib, sys, time\n"
        "import click\n"
        "for name in sys.argv[1:]:\n"
        "    start = time.process_time()\n"
        "    importlib.import_module(name)\n"
        "    print(time.process_time() - start)\n"
    )
    found: dict[str, list[float]] = {name: [] for name in roots}
    for _ in range(runs):
        done = subprocess.run(
            [sys.executable, "-c", code, *roots],
            capture_output=True,
            text=True,
            env=ENV,
            check=True,
        )
        for name, seconds in zip(roots, done.stdout.split()):
            found[name].append(float(seconds))
    return {name: statistics.median(times) for name, times in found.items()}


def print_floor(cpu: dict[str, float], work: float) -> None:
    """Where ``embed``'s CPU time goes, and the least a click command doing the plain inliner's
    work costs, as a multiple of the plain inliner."""
    python, click = cpu["python -c pass"], cpu["import click"]
    imports = next(value for label, value in cpu.items() if label.startswith("embed's imports"))
    embed, plain = cpu["embed"], cpu["plain inliner"]
    ms = 1000
    print(f"embed's CPU, {embed * ms:.1f} ms:")
    print(f"  the interpreter (python -c pass)           {python * ms:6.1f} ms")
    print(f"  click (import click, less the interpreter) {(click - python) * ms:6.1f} ms")
    print(f"  builder's modules and the rest they import {(imports - click) * ms:6.1f} ms")
    print(f"  the work (write_embed, in a fresh process) {work * ms:6.1f} ms")
    print(f"  the rest (arguments, output, exit)         {(embed - imports - work) * ms:6.1f} ms")
    least = click + plain - python
    print(
        f"a click command doing the plain inliner's work: at least {least * ms:.1f} ms, "
        f"{least / plain:.2f} x the plain inliner ({plain * ms:.1f} ms)"
    )


if __name__ == "__main__":
    raise SystemExit(main())
