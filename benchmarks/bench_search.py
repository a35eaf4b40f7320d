"""Benchmark: the search for metallibs in a binary against ``MTLB`` candidates (issue 33 item 8).

Inputs, made here: a small arm64 dylib (clang + ld64.lld, as tests/binaries.py makes them) holding
one synthetic metallib of 2,859 bytes, and the same dylib with candidates added in its
``__TEXT,__const`` after the library, 1 MB and 8 MB of each kind:

* ``random``: the magic, then 4 to 39 random bytes (about 40,000 candidates per MB);
* ``dense``: ``MTLB`` back to back (262,144 per MB), the most magics a file can hold;
* ``headers``: the library's own 88-byte header (its size fits the file), then random bytes to
  that size: candidates that pass every header check and fail only the whole parse (367 per MB).

Each input is given to ``list`` (a whole process: time from ``os.wait4``, CPU = user + system),
with the C extension and without it (``METALLIB_BUILDER_NATIVE=0``); the baseline, the least
possible work, is ``list`` on the dylib without candidates. ``--before DIR`` runs the same
commands on another checkout (its ``.venv``, its code), e.g. main before this change. Rounds are
interleaved (every command once per round), medians are printed. ``list`` ends with exit 0
(the library listed) or 2 (refused after ``METALLIB_BUILDER_MAX_BAD_HEADERS`` headers that do
not parse); any other exit stops the script. A run longer than ``--timeout`` is killed and
shown as ``>T``.

    python benchmarks/bench_search.py --runs 3 --before /work/main

It is a script, not a test: timings depend on the machine (docs/performance.md).
"""

from __future__ import annotations

import argparse
import os
import random
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

from _timing import ENV, ROOT

sys.path.insert(0, str(ROOT))
sys.path.insert(0, str(ROOT / "tests"))

SIZES = {"1MB": 1 << 20, "8MB": 8 << 20}


def candidates(kind: str, size: int, library: bytes, rng: random.Random) -> bytes:
    """``size`` bytes of candidates of one kind (see the module's docstring)."""
    if kind == "dense":
        return b"MTLB" * (size // 4)
    pieces, total = [], 0
    while total < size:
        if kind == "random":
            piece = b"MTLB" + rng.randbytes(rng.randrange(4, 40))
        else:
            piece = library[:88] + rng.randbytes(len(library) - 88)
        pieces.append(piece)
        total += len(piece)
    return b"".join(pieces)[:size]


def make_inputs(folder: Path) -> dict[str, Path]:
    """The plain dylib and one per (kind, size)."""
    from binaries import link_dylib
    from synthetic import synthetic_parts

    from builder.metallib import library_bytes

    library = library_bytes(synthetic_parts(7, seed=2))
    lib = folder / "small.metallib"
    lib.write_bytes(library)
    made = {"plain": link_dylib(folder / "plain.dylib", [("__TEXT,__const", "_lib", lib)])}
    rng = random.Random(33)
    for kind in ("random", "dense", "headers"):
        for label, size in SIZES.items():
            blob = folder / f"{kind}{label}.bin"
            blob.write_bytes(candidates(kind, size, library, rng))
            made[f"{kind} {label}"] = link_dylib(
                folder / f"{kind}{label}.dylib",
                [("__TEXT,__const", "_lib", lib), ("__TEXT,__const", "_noise", blob)],
            )
    return made


def run(cmd: list[str], env: dict[str, str], timeout: float) -> tuple[float, float, int]:
    """(wall seconds, CPU seconds, exit code) of one child; CPU and wall are ``inf`` when it
    ran past ``timeout`` (killed)."""
    start = time.perf_counter()
    with tempfile.TemporaryFile() as err:
        child = subprocess.Popen(cmd, stdout=subprocess.DEVNULL, stderr=err, env=env)
        deadline = start + timeout
        while True:
            pid, status, usage = os.wait4(child.pid, os.WNOHANG)
            if pid:
                break
            if time.perf_counter() > deadline:
                child.kill()
                os.wait4(child.pid, 0)
                return float("inf"), float("inf"), -1
            time.sleep(0.005)
        wall = time.perf_counter() - start
        code = os.waitstatus_to_exitcode(status)
        if code not in (0, 2):
            err.seek(0)
            sys.exit(f"failed ({code}): {' '.join(cmd)}\n{err.read().decode()}")
        return wall, usage.ru_utime + usage.ru_stime, code


def shown(seconds: float, timeout: float) -> str:
    return f">{timeout:.0f} s" if seconds == float("inf") else f"{seconds:.2f} s"


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--runs", type=int, default=3)
    parser.add_argument("--before", type=Path, default=None, help="another checkout to compare")
    parser.add_argument("--timeout", type=float, default=300.0)
    parser.add_argument("--only", default=None, help="inputs whose name holds this text")
    args = parser.parse_args()
    sides = {"after": (sys.executable, ROOT)}
    if args.before is not None:
        sides["before"] = (str(args.before / ".venv" / "bin" / "python"), args.before.resolve())
    with tempfile.TemporaryDirectory(prefix="bench-search-") as tmp:
        inputs = make_inputs(Path(tmp))
        chosen = {k: v for k, v in inputs.items() if args.only is None or args.only in k}
        chosen.setdefault("plain", inputs["plain"])
        cases: dict[tuple[str, str, str], tuple[list[str], dict[str, str]]] = {}
        for side, (python, root) in sides.items():
            for code in ("native", "python"):
                env = {**ENV, "PYTHONPATH": str(root)}
                if code == "python":
                    env["METALLIB_BUILDER_NATIVE"] = "0"
                for name, path in chosen.items():
                    cmd = [python, "-m", "builder", "list", str(path), "--member", "#1"]
                    cases[(side, code, name)] = (cmd, env)
        for cmd, env in cases.values():  # warm-up: page cache, bytecode
            run(cmd, env, args.timeout)
        wall: dict[tuple[str, str, str], list[float]] = {k: [] for k in cases}
        cpu: dict[tuple[str, str, str], list[float]] = {k: [] for k in cases}
        exits: dict[tuple[str, str, str], int] = {}
        for _ in range(args.runs):
            for key, (cmd, env) in cases.items():
                if wall[key] and wall[key][-1] == float("inf"):
                    continue  # timed out once: not again
                seconds, used, status = run(cmd, env, args.timeout)
                wall[key].append(seconds)
                cpu[key].append(used)
                exits[key] = status
        load = os.getloadavg()[0]
        print(
            f"list BINARY --member '#1', medians of {args.runs} interleaved rounds; load "
            f"average {load:.1f}; inputs: a {inputs['plain'].stat().st_size:,}-byte dylib "
            "holding one 2,859-byte library, plus candidates"
        )
        print("| side | container code | input | wall | CPU | exit | CPU over the baseline |")
        print("|---|---|---|---:|---:|---:|---:|")
        for side, code, name in cases:
            key = (side, code, name)
            base = statistics.median(cpu[(side, code, "plain")])
            spent = statistics.median(cpu[key])
            extra = "baseline" if name == "plain" else f"{spent - base:+.2f} s"
            print(
                f"| {side} | {code} | {name} | {shown(statistics.median(wall[key]), args.timeout)}"
                f" | {shown(spent, args.timeout)} | {exits.get(key, '-')} | {extra} |"
            )


if __name__ == "__main__":
    main()
