"""Benchmarks for the container commands, each against the least work that does the same job.

  list --format json  vs  benchmarks/mdsz_walk.py (struct walk summing MDSZ)      target <= 1.5x
  verify              vs  benchmarks/hash_bitcode.py (SHA-256 of the bitcode)     target <= 1.2x
  slim --keep '*'     vs  cp                                                      target <= 2x
  references          slim --allow-hash-mismatch (the same work: it still hashes, only lets a
                      mismatch through), benchmarks/copy_hash.py (cp plus the SHA-256 of the
                      bitcode on both cores: the floor for a slim that checks hashes), a Python
                      process running shutil.copyfile (the earlier baseline)
  peak memory         list/verify/slim on a small and a large library: the Python heap peak
                      (tracemalloc) must not grow with the file size (mapped file pages are not
                      copies; they are shown as max RSS for reference)

Every side is a whole process, timed in the same run, interleaved; medians are printed with the
ratio. Default input: mlx-metal 0.32.4 for macOS 14 (147 MB), from the wheel cache.

    python benchmarks/bench_container.py [FILE] [--runs 7]
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import tempfile
from pathlib import Path

from _timing import ENV, ROOT, compare, default_metallib

CLI = [sys.executable, "-m", "builder"]

# Baseline for slim: a Python process that copies the file (shutil uses the kernel's copy).
COPY = "import shutil, sys; shutil.copyfile(sys.argv[1], sys.argv[2])"

MEMORY_PROBE = r"""
import json, sys, tracemalloc
tracemalloc.start()
from builder.cli.group import main
try:
    main(sys.argv[1:])
except SystemExit:
    pass
peak = tracemalloc.get_traced_memory()[1]
rss = next(int(l.split()[1]) * 1024 for l in open("/proc/self/status") if l.startswith("VmHWM"))
sys.stderr.write(json.dumps({"heap_peak": peak, "max_rss": rss}) + "\n")
"""


def memory(args: list[str]) -> dict[str, int]:
    done = subprocess.run(
        [sys.executable, "-c", MEMORY_PROBE, *args],
        env=ENV,
        capture_output=True,
        text=True,
        check=False,
    )
    result: dict[str, int] = json.loads(done.stderr.strip().splitlines()[-1])
    return result


def main() -> None:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("file", nargs="?", type=Path)
    parser.add_argument("--runs", type=int, default=7)
    args = parser.parse_args()
    source = args.file or default_metallib()
    bench = Path(__file__).parent
    with tempfile.TemporaryDirectory() as tmp:
        out = Path(tmp) / "out.metallib"
        slim = [*CLI, "slim", str(source), "-o", str(out), "--keep", "*"]
        cp = ["cp", str(source), str(out)]
        rows = [
            (
                "list --format json",
                [*CLI, "list", str(source), "--format", "json"],
                [sys.executable, str(bench / "mdsz_walk.py"), str(source)],
                1.5,
            ),
            (
                "verify",
                [*CLI, "verify", str(source)],
                [sys.executable, str(bench / "hash_bitcode.py"), str(source)],
                1.2,
            ),
            ("slim --keep '*'", slim, cp, 2.0),
            ("  --allow-hash-mismatch", [*slim, "--allow-hash-mismatch"], cp, None),
            (
                "  (copy_hash.py)",
                [sys.executable, str(bench / "copy_hash.py"), str(source), str(out)],
                cp,
                None,
            ),
            ("  (Python copy)", [sys.executable, "-c", COPY, str(source), str(out)], cp, None),
        ]
        print(
            f"input: {source} ({source.stat().st_size} bytes); "
            f"{args.runs} interleaved runs, medians"
        )
        for label, ours, baseline, target in rows:
            a, b = compare(ours, baseline, args.runs, before=lambda: _fresh(out))
            verdict = "" if target is None else ("ok" if a / b <= target else "OVER TARGET")
            goal = "" if target is None else f"(target <= {target})"
            print(
                f"{label:<24} {a:7.3f} s  baseline {b:7.3f} s  ratio {a / b:5.2f}  {goal} {verdict}"
            )
        print("peak memory: Python heap (tracemalloc); max RSS also counts mapped file pages")
        print(
            "  two synthetic libraries with the same 2,000 functions, modules of 512 B vs 64 KiB:"
        )
        sizes = {}
        for label, module_size in (("small", 512), ("large", 65536)):
            path = Path(tmp) / f"{label}.metallib"
            _synthetic(path, 2000, module_size)
            sizes[label] = path
        for command, extra in (
            ("list", ["--format", "json"]),
            ("verify", []),
            ("slim", ["-o", str(out), "--keep", "*"]),
        ):
            peaks = {}
            for label, path in sizes.items():
                m = memory([command, str(path), *extra])
                peaks[label] = m["heap_peak"]
                print(
                    f"  {command:<7} {path.stat().st_size:>11} B file: "
                    f"heap peak {m['heap_peak']:>10} B, max RSS {m['max_rss']:>10} B"
                )
            print(
                f"  {command:<7} heap peak ratio large/small file: "
                f"{peaks['large'] / peaks['small']:.2f} (target: ~1, no growth)"
            )
        print(f"  on the real file ({source.stat().st_size} B):")
        for command, extra in (
            ("list", ["--format", "json"]),
            ("verify", []),
            ("slim", ["-o", str(out), "--keep", "*"]),
        ):
            m = memory([command, str(source), *extra])
            print(f"  {command:<7} heap peak {m['heap_peak']:>10} B, max RSS {m['max_rss']:>10} B")


def _fresh(out: Path) -> None:
    """Before every run: no output file, and no writeback of the previous one still pending
    (a 160 MB file being flushed slows whichever process runs next)."""
    out.unlink(missing_ok=True)
    os.sync()


def _synthetic(path: Path, count: int, module_size: int) -> None:
    sys.path[:0] = [str(ROOT), str(ROOT / "tests")]  # tests/synthetic.py builds libraries
    from synthetic import new_function, new_library

    from builder.metallib import write_library

    payload = bytes(range(256)) * (module_size // 256)
    functions = [new_function(f"kernel_{i}", payload, reflection=bytes(48)) for i in range(count)]
    write_library(new_library(functions), path)


if __name__ == "__main__":
    main()
