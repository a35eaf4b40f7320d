"""Embedded bytes of the JIT host library with and without shared-header dedup and compression.

Builds the host JIT library for real (cmake/MetalJit.cmake, CMake + Ninja) five times: the
storage modes no-dedup / dedup, each plain / COMPRESS, and dedup + COMPRESS + STRIP_COMMENTS. For
each it reports what embed.json measured (preamble bytes stored, registry strings), the library's
file size and its size after `strip --strip-unneeded`, the full build time and a no-op rebuild time;
then per family the preamble size and what it costs in each mode; and the generator's own time
(every family generated once, `python -m builder.cmake_build.tree_jit`).

    python benchmarks/bench_jit.py [--families unary,binary] [--jobs 2] [--json]

Numbers name their origin: embed.json of each build, the built .so, or a timed process.
"""

from __future__ import annotations

import argparse
import json
import shutil
import subprocess
import sys
import tempfile
import time
from pathlib import Path

from _timing import ENV, ROOT

sys.path.insert(0, str(ROOT))

MODES = {  # name -> metallib_add_jit_library options
    "no-dedup": "NO_DEDUP",
    "dedup": "",
    "no-dedup+zlib": "NO_DEDUP COMPRESS",
    "dedup+zlib": "COMPRESS",
    "dedup+zlib+strip": "COMPRESS STRIP_COMMENTS",
}


def _run(cmd: list[str], cwd: Path | None = None) -> float:
    start = time.perf_counter()
    done = subprocess.run(cmd, cwd=cwd, env=ENV, capture_output=True, text=True, check=False)
    if done.returncode != 0:
        sys.exit(f"failed: {' '.join(cmd)}\n{done.stdout}{done.stderr}")
    return time.perf_counter() - start


def build(root: Path, families: list[str], options: str, jobs: int) -> dict[str, object]:
    """Configure, build (timed), rebuild (timed); facts from embed.json and the .so."""
    src = root / "src"
    src.mkdir(parents=True)
    (src / "CMakeLists.txt").write_text(
        "cmake_minimum_required(VERSION 3.25)\nproject(bench LANGUAGES CXX)\n"
        f'list(APPEND CMAKE_MODULE_PATH "{(ROOT / "cmake").as_posix()}")\ninclude(MetalJit)\n'
        f'metallib_add_jit_library(mbjit SOURCE_DIR "{(ROOT / "metal_src").as_posix()}"\n'
        f'  FAMILIES {" ".join(families)} {options} PYTHON "{sys.executable}")\n',
        encoding="utf-8",
    )
    out = root / "build"
    _run(["cmake", "-S", str(src), "-B", str(out), "-G", "Ninja", "-DCMAKE_BUILD_TYPE=Release"])
    full = _run(["ninja", "-C", str(out), f"-j{jobs}"])
    noop = _run(["ninja", "-C", str(out), f"-j{jobs}"])
    lib = next(out.glob("libmbjit.*"))
    stripped = None
    if shutil.which("strip"):
        copy = root / "stripped.so"
        shutil.copy(lib, copy)
        _run(["strip", "--strip-unneeded", str(copy)])
        stripped = copy.stat().st_size
    facts = json.loads((out / "mbjit" / "embed.json").read_text(encoding="utf-8"))
    return {
        "facts": facts,
        "library_bytes": lib.stat().st_size,
        "stripped_bytes": stripped,
        "build_seconds": round(full, 2),
        "noop_seconds": round(noop, 3),
    }


def generation_seconds(families: list[str]) -> float:
    """Every family's sources generated once by the generator process CMake runs (one
    ``python -m builder.cmake_build.tree_jit`` over the plan that builds them all JIT)."""
    with tempfile.TemporaryDirectory(prefix="bench-jit-gen-") as tmp:
        plan = [sys.executable, "-m", "builder.cmake_build.plan", "--select"]
        plan += ["--source-dir", str(ROOT / "metal_src"), "--kernels", ",".join(families)]
        subprocess.run([*plan, "--build-dir", tmp], check=True, capture_output=True, env=ENV)
        tree_jit = [sys.executable, "-m", "builder.cmake_build.tree_jit", "--out-dir", tmp]
        return _run([*tree_jit, "--plan", f"{tmp}/metal_plan/plan.json"])


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--families", default=None, help="comma-separated (default: all)")
    parser.add_argument("--jobs", type=int, default=2)
    parser.add_argument("--json", action="store_true")
    args = parser.parse_args()
    from builder.kernels import load_catalog

    families = args.families.split(",") if args.families else list(load_catalog().families)
    results = {}
    with tempfile.TemporaryDirectory(prefix="bench-jit-") as tmp:
        for name, options in MODES.items():
            results[name] = build(Path(tmp, name), families, options, args.jobs)
    gen = generation_seconds(families)
    if args.json:
        print(
            json.dumps(
                {"families": families, "generation_seconds": round(gen, 2), "modes": results},
                indent=1,
            )
        )
        return 0

    def preamble_bytes(r: dict) -> int:
        facts = r["facts"]
        return int(facts["embedded_bytes"]) - int(facts["registry_bytes"])

    base = results["no-dedup"]
    print(
        f"JIT host library, {len(families)} families, -j{args.jobs} (origin: embed.json of each"
        " build; sizes of the built .so)\n"
    )
    print(
        "| mode | preamble bytes stored | vs no-dedup | registry strings | all string data |"
        " .so bytes | stripped .so | full build s | no-op s |"
    )
    print("|---|---:|---:|---:|---:|---:|---:|---:|---:|")
    for name, r in results.items():
        emb = preamble_bytes(r)
        facts = r["facts"]
        print(
            f"| {name} | {emb:,} | {emb / preamble_bytes(base):.2f}x |"
            f" {facts['registry_bytes']:,} |"
            f" {facts['embedded_bytes']:,} | {r['library_bytes']:,} |"
            f" {r['stripped_bytes'] or 0:,} | {r['build_seconds']} | {r['noop_seconds']} |"
        )
    total_source = sum(f["source_bytes"] for f in base["facts"]["units"])
    print(f"\nPreamble text of all families (source_bytes): {total_source:,} bytes")
    print(
        "\nPer family, preamble pieces stored (own + shared with other families) and registry"
        " strings (plain / zlib):\n"
    )
    print(
        "| family | kernels | preamble text | "
        + " | ".join(MODES)
        + " | registry plain | registry zlib |"
    )
    print("|---|---:|---:|" + "---:|" * (len(MODES) + 2))
    by_mode = {m: {f["name"]: f for f in r["facts"]["units"]} for m, r in results.items()}

    def cell(f: dict) -> str:
        return f"{f['preamble_bytes']:,}" + (
            f" + {f['shared_bytes']:,}" if f["shared_bytes"] else ""
        )

    for family in families:
        row = [by_mode[m][family] for m in MODES]
        print(
            f"| {family} | {len(row[0]['host_names']):,} | {row[0]['source_bytes']:,} | "
            + " | ".join(cell(f) for f in row)
            + (
                f" | {row[0]['registry_bytes']:,} |"
                f" {by_mode['dedup+zlib'][family]['registry_bytes']:,} |"
            )
        )
    for name, r in results.items():
        shared = sum(s["bytes"] for s in r["facts"]["shared"])
        print(
            f"\n{name}: shared pieces stored once: {len(r['facts']['shared'])} ({shared:,} bytes)",
            end="",
        )
    print(
        f"\n\nGenerator: {len(families)} families generated in {gen:.2f} s"
        " (python -m builder.cmake_build.tree_jit, one process)"
    )
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
