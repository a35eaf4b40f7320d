"""Seeded fuzzing of the commands that read binaries (issue 33 item 7, docs/security.md).

Every input is a mutation of a valid seed, each seed made here or found in the wheel cache:

* a thin arm64 Mach-O dylib holding two metallibs (one a whole ``__TEXT`` section, one behind a
  symbol in ``__const``), a fat Mach-O (x86_64 + arm64), an x86-64 ELF shared object: clang and
  lld from ``.incbin`` sources, as ``tests/binaries.py`` makes them;
* a host library holding only strings (C++ ``const char* name()`` functions, what ``sources``
  reads);
* real Apple-built binaries when a test or a command has cached their wheels (nothing is
  downloaded): metal-flash-sdpa 0.1.2's ``_C.so`` and metal-linalg 2.2.0's ``_core.so``;
* wheels: a zip holding a mutated binary, or a mutated zip holding a seed.

Mutations (one to three stacked): bytes changed anywhere; a 4- or 8-byte field in the headers and
load commands, the last 4 KiB (ELF section headers, link-edit data) or a metallib's header set
to an edge value (0, 1, 2^31-1, 2^32-1, 2^63, 2^64-1, the file's size and around it); the file
cut (anywhere, or inside a metallib); bytes inserted or deleted; metallib headers copied to other
places; a random tail.

Each input runs, in a child process of its own (forked: ``RLIMIT_AS`` bounds its memory,
``--timeout`` its time), ``list`` and ``verify`` (``--member '#1'``), ``report --format json``,
``sources --format json``, ``slim --member '#1' --keep '*'`` and ``compare SEED INPUT``, in
process, as ``metallib-builder`` would. An input passes when every command ends with exit 0, or
exit 2 and one ``error:`` line, or (``verify`` only) exit 1, a failed check. Anything else is
counted as a traceback: an exception, exit 1 from another command, a message of several lines;
a child past its time is a hang, one past its memory a traceback (MemoryError) or a kill.

Usage: ``python benchmarks/fuzz_binaries.py [--inputs 50000] [--seed 33] [--jobs 2] [--json]
[--keep DIR] [--no-extension] [--no-real]``; exit 1 when any traceback or hang was found.
``--no-extension`` runs the pure-Python container code, ``--no-real`` only the seeds built here.
``tests/inputs/test_fuzz_binaries.py`` runs a few hundred of them.
"""

from __future__ import annotations

import argparse
import io
import json
import os
import random
import resource
import shutil
import sys
import tempfile
import time
import traceback
import zipfile
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Any

from _binary_fields import Field, fields

ROOT = Path(__file__).resolve().parent.parent
for _path in (ROOT, ROOT / "tests"):
    if str(_path) not in sys.path:
        sys.path.insert(0, str(_path))

COMMANDS = ("list", "verify", "report", "sources", "slim", "compare")
EDGES = (0, 1, 2**31 - 1, 2**32 - 1, 2**63, 2**64 - 1)
HOST_SOURCE = """
namespace demo { namespace jit {
const char* alpha() { return "kernel void alpha() {}\\n// alpha"; }
const char* beta() { return "#include <metal_stdlib>\\nusing namespace metal;\\n"; }
}
const char* outside() { return "outside\\nthe namespace"; }
int answer(int x) { return x + 1; }
}
"""


@dataclass
class Seed:
    name: str
    suffix: str  # the mutant's file name ends so: .dylib, .so, .whl
    data: bytes
    libraries: list[int]  # offsets of the metallibs in it (targets of some mutations)
    fields: list[Field] = field(default_factory=list)  # its headers' fields (_binary_fields)


def make_seeds(work: Path, real: bool = True) -> list[Seed]:
    """The seeds, built in ``work`` (clang and lld) and taken from the wheel cache."""
    from binaries import cxx_dylib, link_dylib, link_elf, lipo
    from synthetic import synthetic_parts

    from builder.metallib import library_bytes

    first, second = work / "first.metallib", work / "second.metallib"
    first.write_bytes(library_bytes(synthetic_parts(5, seed=1)))
    second.write_bytes(library_bytes(synthetic_parts(4, seed=2, dynamic=True)))
    blobs = [("__TEXT,metal_basic", None, first), ("__TEXT,__const", "_second_metallib", second)]
    thin = link_dylib(work / "libthin.dylib", blobs)
    x86 = link_dylib(work / "libx86.dylib", [("__TEXT,__const", "_x86", second)], arch="x86_64")
    fat = lipo(work / "libfat.dylib", [x86, thin])
    elf = link_elf(work / "libelf.so", [(".rodata", "elf_metallib", first)])
    (work / "host.cpp").write_text(HOST_SOURCE)
    host = cxx_dylib(work / "libhost.dylib", [work / "host.cpp"])
    paths = {"thin Mach-O": thin, "fat Mach-O": fat, "ELF": elf, "host library": host}
    if real:
        paths.update(_cached_real())
    seeds = []
    for name, path in paths.items():
        data = path.read_bytes()
        libraries = _magics(data)
        inside = [(at + o, 8, "little") for at in libraries for o in range(16, 88, 8)]
        inside += [(at + o, 2, "little") for at in libraries for o in (6, 8)]
        inside += [(at + 88, 4, "little") for at in libraries]  # the function count
        seeds.append(Seed(name, path.suffix or ".so", data, libraries, fields(data) + inside))
    seeds.append(Seed("wheel", ".whl", _wheel({"pkg/libthin.dylib": thin.read_bytes()}), []))
    return seeds


def _cached_real() -> dict[str, Path]:
    """Real Apple-built binaries from the wheel cache, when there (never downloaded here)."""
    from builder.inputs.wheel_cache import cache_dir

    found = {}
    for label, pattern in (
        ("metal-flash-sdpa _C.so", "metal_flash_sdpa-0.1.2-*/metal_flash_sdpa/_C.*.so"),
        ("metal-linalg 2.2.0 _core.so", "metal_linalg-2.2.0-*/metal_linalg/_core.*.so"),
    ):
        hits = sorted((cache_dir() / "metallibs").glob(pattern))
        if hits:
            found[label] = hits[0]
    return found


def _magics(data: bytes) -> list[int]:
    found, at = [], data.find(b"MTLB")
    while at >= 0:
        if data[at + 24 : at + 32] == (88).to_bytes(8, "little"):
            found.append(at)
        at = data.find(b"MTLB", at + 1)
    return found


def _wheel(members: dict[str, bytes]) -> bytes:
    out = io.BytesIO()
    with zipfile.ZipFile(out, "w", zipfile.ZIP_DEFLATED) as archive:
        for name, data in members.items():
            archive.writestr(name, data)
        archive.writestr("pkg-1.0.dist-info/WHEEL", "Wheel-Version: 1.0\n")
    return out.getvalue()


def mutate(rng: random.Random, seed: Seed, seeds: list[Seed]) -> tuple[str, bytes]:
    """One input: (file suffix, bytes)."""
    if seed.suffix == ".whl" and rng.random() < 0.5:  # a wheel holding a mutated binary
        inner = rng.choice([s for s in seeds if s.suffix != ".whl"])
        name = "pkg/lib/" + rng.choice(["libk.dylib", "_C.cpython-312-darwin.so", "x.so.1"])
        return ".whl", _wheel({name: _mutated(rng, inner)})
    return seed.suffix, _mutated(rng, seed)


def _mutated(rng: random.Random, seed: Seed) -> bytes:
    data = bytearray(seed.data)
    for _ in range(rng.choice((1, 1, 2, 3))):
        _one(rng, data, seed)
    return bytes(data)


def _one(rng: random.Random, data: bytearray, seed: Seed) -> None:
    """One mutation of ``data`` (at first a copy of ``seed``'s bytes) in place."""
    size, libraries = len(data), seed.libraries
    kind = rng.randrange(10)
    if kind == 0 or size < 64:  # bytes changed anywhere
        for _ in range(rng.randint(1, 8)):
            if data:
                data[rng.randrange(len(data))] = rng.randrange(256)
    elif kind in (1, 2, 3, 4) and seed.fields:  # a field of the headers
        at, width, order = rng.choice(seed.fields)
        now = int.from_bytes(data[at : at + width], order)
        value = rng.choice(
            (*EDGES, size, size - 1, size + 1, now + 1, now - 1, now * 2, now + 2**31, -1)
            + (rng.getrandbits(8 * width), rng.randrange(0, size + 1))
        )
        data[at : at + width] = (value % (1 << (8 * width))).to_bytes(width, order)
    elif kind in (1, 2, 3, 4):  # an aligned word near either end, or in a metallib's header
        width = rng.choice((4, 8))
        where = rng.random()
        if where < 0.45:
            at = rng.randrange(0, min(size, 4096) - width + 1) & ~(width - 1)
        elif where < 0.7:
            at = (size - rng.randrange(width, min(size, 4096) + 1)) & ~(width - 1)
        elif libraries:
            at = rng.choice(libraries) + rng.choice((16, 24, 32, 40, 48, 56, 64, 72, 80, 88))
        else:
            at = rng.randrange(0, size - width + 1)
        value = rng.choice((*EDGES, size, size - 1, size + 1, rng.getrandbits(width * 8)))
        data[at : at + width] = (value % (1 << (8 * width))).to_bytes(width, "little")
    elif kind == 5:  # cut
        if libraries and rng.random() < 0.5:
            at = rng.choice(libraries) + rng.randrange(0, 4000)
        else:
            at = rng.randrange(0, size)
        del data[at:]
    elif kind == 6:  # bytes inserted or deleted
        at = rng.randrange(0, size)
        if rng.random() < 0.5:
            data[at:at] = rng.randbytes(rng.choice((1, 3, 8, 100, 4096)))
        else:
            del data[at : at + rng.choice((1, 4, 16, 1000))]
    elif kind == 7 and libraries:  # a metallib header copied elsewhere
        start = rng.choice(libraries)
        header = bytes(data[start : start + rng.choice((88, 200, 2000))])
        at = rng.randrange(0, size)
        data[at : at + len(header)] = header
    elif kind == 8:  # a random tail
        data += rng.randbytes(rng.choice((1, 88, 1000, 70000)))
    else:  # a run of one byte
        at, length = rng.randrange(0, size), rng.choice((16, 256, 4096))
        data[at : at + length] = bytes([rng.choice((0, 0xFF))]) * length


@dataclass
class Result:
    inputs: int = 0
    commands: int = 0
    exits: dict[str, int] = field(default_factory=dict)
    tracebacks: int = 0  # inputs with at least one
    failed_runs: int = 0  # command runs that ended so
    causes: dict[str, int] = field(default_factory=dict)  # "Type at file:line" -> inputs
    commands_of: dict[str, list[str]] = field(default_factory=dict)  # cause -> commands
    examples: dict[str, str] = field(default_factory=dict)  # cause -> input id: message
    hangs: list[str] = field(default_factory=list)
    killed: list[str] = field(default_factory=list)
    peak_rss_kib: int = 0
    parent_rss_kib: int = 0  # what each child starts with (the commands imported, seeds held)
    peak_input: str = ""
    per_seed: dict[str, int] = field(default_factory=dict)
    seconds: float = 0.0


def run(
    inputs: int,
    seed: int = 33,
    *,
    jobs: int = 2,
    timeout: float = 60.0,
    memory: int = 4 << 30,
    real: bool = True,
    extension: bool = True,
    keep: Path | None = None,
) -> Result:
    """Fuzz ``inputs`` mutants, round-robin over the seeds, from ``seed``."""
    import builder.cli  # noqa: F401 - imported once, before the children fork

    result = Result()
    start = time.perf_counter()
    with tempfile.TemporaryDirectory(prefix="fuzz-binaries-") as tmp:
        work = Path(tmp)
        seeds = make_seeds(work, real)
        for s in seeds:
            (work / f"seed-{seeds.index(s)}{s.suffix}").write_bytes(s.data)
        _warm_up(work, seeds)
        result.parent_rss_kib = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss
        running: dict[int, tuple[str, float, Path, Seed]] = {}
        number = 0
        while number < inputs or running:
            while number < inputs and len(running) < jobs:
                choice = seeds[number % len(seeds)]
                rng = random.Random(f"{seed}:{number}")
                suffix, data = mutate(rng, choice, seeds)
                ident = f"{seed}:{number}"
                folder = work / f"in{number}"
                folder.mkdir()
                target = folder / f"input{suffix}"
                target.write_bytes(data)
                base = work / f"seed-{seeds.index(choice)}{choice.suffix}"
                pid = _spawn(folder, target, base, memory, extension)
                running[pid] = (ident, time.perf_counter(), folder, choice)
                number += 1
            _reap(running, result, timeout, keep)
    result.seconds = time.perf_counter() - start
    return result


def _warm_up(work: Path, seeds: list[Seed]) -> None:
    """Every command once on every seed, here: the modules the commands import on first use are
    then imported before the children fork (each child would import them again otherwise)."""
    saved = os.environ.get("METALLIB_BUILDER_CACHE")
    os.environ["METALLIB_BUILDER_CACHE"] = str(work / "warm-up-cache")
    try:
        for index, seed in enumerate(seeds):
            path = work / f"seed-{index}{seed.suffix}"
            for args in _commands(path, path, work):
                _command(args, path)
    finally:
        if saved is None:
            os.environ.pop("METALLIB_BUILDER_CACHE")
        else:
            os.environ["METALLIB_BUILDER_CACHE"] = saved


def _spawn(folder: Path, target: Path, base: Path, memory: int, extension: bool) -> int:
    pid = os.fork()
    if pid:
        return pid
    try:  # the child: never returns
        resource.setrlimit(resource.RLIMIT_AS, (memory, memory))
        if not extension:  # the pure-Python container code, as METALLIB_BUILDER_NATIVE=0
            from builder.metallib.native import disabled

            disabled().__enter__()
        os.environ["METALLIB_BUILDER_CACHE"] = str(folder / "cache")
        os.environ.pop("GITHUB_STEP_SUMMARY", None)
        null = os.open(os.devnull, os.O_WRONLY)
        os.dup2(null, 1)
        os.dup2(null, 2)
        found = [_command(args, target) for args in _commands(target, base, folder)]
        (folder / "result.json").write_text(json.dumps(found))
    finally:
        os._exit(0)


def _commands(target: Path, base: Path, folder: Path) -> list[list[str]]:
    t = str(target)
    return [
        ["list", t, "--member", "#1"],
        ["verify", t, "--member", "#1"],
        ["report", t, "--format", "json"],
        ["sources", t, "--format", "json"],
        ["slim", t, "--member", "#1", "--keep", "*", "-o", str(folder / "out.metallib")],
        ["compare", str(base), t, "--format", "json"],
    ]


def _command(args: list[str], target: Path) -> dict[str, Any]:
    """Run one command in this process: its exit code, its stderr, or its traceback."""
    from builder.cli.group import main

    out, err = io.StringIO(), io.StringIO()
    saved = sys.stdout, sys.stderr
    sys.stdout, sys.stderr = out, err
    problem = None
    try:
        code = main(list(args)) or 0
    except SystemExit as exc:
        code = exc.code if isinstance(exc.code, int) else 1
    except BaseException as exc:  # noqa: BLE001 - counting these is the point
        code, problem = -1, _cause(exc)
    finally:
        sys.stdout, sys.stderr = saved
    text = err.getvalue()
    lines = text.splitlines()
    if problem is None and code == 1 and args[0] != "verify":
        problem = f"exit 1 from {args[0]}: {text[:200]!r}"
    if problem is None and code == 2 and (len(lines) != 1 or not lines[0].startswith("error: ")):
        problem = f"exit 2 without one error line: {text[:200]!r}"
    if problem is None and code not in (0, 1, 2):
        problem = f"exit {code}: {text[:200]!r}"
    return {"command": args[0], "code": code, "problem": problem}


def _cause(exc: BaseException) -> str:
    """``Type at file:line`` of the innermost frame in builder/ (or the innermost), and the
    message."""
    frames = traceback.extract_tb(exc.__traceback__)
    ours = [f for f in frames if "/builder/" in f.filename] or frames
    where = f"{Path(ours[-1].filename).relative_to(ROOT)}:{ours[-1].lineno}" if ours else "?"
    kind = type(exc)
    name = kind.__name__ if kind.__module__ == "builtins" else f"{kind.__module__}.{kind.__name__}"
    return f"{name} at {where}: {str(exc)[:160]}"


def _reap(
    running: dict[int, tuple[str, float, Path, Seed]],
    result: Result,
    timeout: float,
    keep: Path | None,
) -> None:
    """Wait for a child to end (or kill the one past its time) and count what it found."""
    while True:
        pid, status, usage = os.wait4(-1, os.WNOHANG)
        if pid:
            break
        now = time.perf_counter()
        for child, (ident, started, _, _) in running.items():
            if now - started > timeout and ident not in result.hangs:
                os.kill(child, 9)
                result.hangs.append(ident)
        time.sleep(0.002)
    ident, _, folder, seed = running.pop(pid)
    result.inputs += 1
    result.per_seed[seed.name] = result.per_seed.get(seed.name, 0) + 1
    if usage.ru_maxrss > result.peak_rss_kib:
        result.peak_rss_kib, result.peak_input = usage.ru_maxrss, ident
    report = folder / "result.json"
    failed = False
    if ident in result.hangs:
        failed = True
    elif not report.exists():
        result.killed.append(f"{ident}: {os.waitstatus_to_exitcode(status)}")
        failed = True
    else:
        found: set[str] = set()
        for done in json.loads(report.read_text()):
            result.commands += 1
            key = f"{done['command']} {done['code']}"
            result.exits[key] = result.exits.get(key, 0) + 1
            if done["problem"]:
                failed = True
                result.failed_runs += 1
                cause = done["problem"].split(": ", 1)[0]
                found.add(cause)
                commands = result.commands_of.setdefault(cause, [])
                if done["command"] not in commands:
                    commands.append(done["command"])
                result.examples.setdefault(cause, f"{ident} ({seed.name}): {done['problem']}")
        for cause in found:
            result.causes[cause] = result.causes.get(cause, 0) + 1
    if failed and ident not in result.hangs:
        result.tracebacks += 1
    if failed and keep is not None:
        keep.mkdir(parents=True, exist_ok=True)
        for path in folder.glob("input*"):
            shutil.copy(path, keep / f"{ident.replace(':', '-')}{path.suffix}")
    shutil.rmtree(folder, ignore_errors=True)


def summary(result: Result, command: str) -> str:
    """What a run found, as lines to paste: the command, a markdown table, then the details."""
    runs = result.failed_runs
    peak = f"{result.peak_rss_kib / 1024:.0f} MiB"
    lines = [
        f"command: {command}",
        "",
        "| inputs | command runs | tracebacks | hangs | killed | peak memory | wall |",
        "|---:|---:|---:|---:|---:|---:|---:|",
        (
            f"| {result.inputs:,} | {result.commands:,} | {result.tracebacks:,} | "
            f"{len(result.hangs):,} | {len(result.killed):,} | {peak} | {result.seconds:,.0f} s |"
        ),
        "",
        "seeds: " + ", ".join(f"{k} {v:,}" for k, v in result.per_seed.items()),
        (
            f"peak memory: ru_maxrss of one input's process ({result.peak_input}); the parent, "
            f"which each starts from, {result.parent_rss_kib / 1024:.0f} MiB"
        ),
        "exits: " + ", ".join(f"{k}: {v:,}" for k, v in sorted(result.exits.items())),
        (
            f"tracebacks: {result.tracebacks:,} inputs, {runs:,} command runs, "
            f"{len(result.causes)} causes"
        ),
    ]
    for cause, count in sorted(result.causes.items(), key=lambda kv: -kv[1]):
        commands = ", ".join(result.commands_of[cause])
        lines.append(f"  {count:6,} inputs  {cause} ({commands})")
        lines.append(f"          e.g. {result.examples[cause]}")
    lines += [f"  hang: {ident}" for ident in result.hangs]
    lines += [f"  killed: {what}" for what in result.killed]
    return "\n".join(lines)


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--inputs", type=int, default=50_000)
    parser.add_argument("--seed", type=int, default=33)
    parser.add_argument("--jobs", type=int, default=os.cpu_count() or 1)
    parser.add_argument("--timeout", type=float, default=60.0, help="seconds per input")
    parser.add_argument("--memory", type=int, default=4 << 30, help="RLIMIT_AS per input")
    parser.add_argument("--no-real", action="store_true", help="only the seeds built here")
    parser.add_argument(
        "--no-extension", action="store_true", help="the pure-Python container code in each input"
    )
    parser.add_argument("--keep", type=Path, default=None, help="write failing inputs here")
    parser.add_argument("--json", action="store_true", help="machine output on stdout")
    args = parser.parse_args()
    result = run(
        args.inputs,
        args.seed,
        jobs=args.jobs,
        timeout=args.timeout,
        memory=args.memory,
        real=not args.no_real,
        extension=not args.no_extension,
        keep=args.keep,
    )
    command = " ".join(["python benchmarks/fuzz_binaries.py", *sys.argv[1:]])
    if args.json:
        print(json.dumps({**asdict(result), "command": command}, indent=1))
    else:
        print(summary(result, command))
    return 1 if result.tracebacks or result.hangs or result.killed else 0


if __name__ == "__main__":
    sys.exit(main())
