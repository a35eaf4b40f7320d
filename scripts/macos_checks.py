"""The macOS checks: what .github/workflows/macos.yml runs, one step per subcommand.

    python scripts/macos_checks.py aot   [--work DIR] [--tree NAME]... [--kernels F,...]
    python scripts/macos_checks.py jit   [--work DIR] [--tree NAME]... [--kernels F,...]
    python scripts/macos_checks.py tests [PYTEST ARGUMENTS...]

The workflow runs it with Apple's compiler; tests/cmake_build/test_macos_checks.py runs the same
subcommands on Linux with the stand-in compiler of tests/cmake_build/standin (its ``xcrun`` first
on PATH), so only the compiler differs. The compiler is the one the tool itself finds
(``METAL_COMPILER``, else ``xcrun -sdk macosx metal``: ``builder.cmake_build.driver``).

* ``aot``: builds each tree AOT (``metallib-builder build``), verifies the metallib (every
  module's SHA-256) and checks that its functions are exactly the host names the build manifest
  records.
* ``jit``: builds each tree JIT (``--jit '*'``). A host program, C++ linked against the built host
  library, asks the library for every run-time source it embeds through its API, as an app does
  before compiling at run time: each preamble or whole entry file a discovered tree's
  build manifest lists, and for a catalog tree each family's preamble followed by the
  instantiation line of every kernel ``source_for`` returns. Each text is its own ``.metal`` file,
  compiled alone with ``metal -c`` and ``-MMD``: its depfile must name no project file (every
  quoted include is inlined). A text that defines kernels (a catalog family, an entry file embedded
  whole) is linked, and its functions must be the host names the manifest records for its unit.
* ``tests``: the test suite (``python -m pytest`` in the checkout).

Trees: ``metal_src`` (the bundled catalog tree) and ``mlx_shaped`` (tests/data/mlx_shaped: MLX's
layout, written here). Each step writes ``<work>/<step>.json`` (what ran, what it found) and prints
one line per check. Exit 0 when every check passed, 1 when one failed, 2 for unusable arguments.
"""

from __future__ import annotations

import argparse
import json
import os
import re
import subprocess
import sys
from collections.abc import Sequence
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[1]
TREES: dict[str, list[str]] = {
    "metal_src": [],
    "mlx_shaped": [
        "--source-dir",
        str(ROOT / "tests/data/mlx_shaped/mlx/backend/metal/kernels"),
        "-I",
        str(ROOT / "tests/data/mlx_shaped"),
    ],
}
"""Each tree's ``build`` arguments; the include root of mlx_shaped is the folder holding mlx/."""
NAMESPACE = "metal_jit"
"""The host library's namespace: ``build`` uses the default of the CMake functions."""
REGISTRY_INCLUDE = ROOT / "metal_src/host/include"


def run(argv: Sequence[str], **kwargs: Any) -> subprocess.CompletedProcess[str]:
    return subprocess.run(list(argv), capture_output=True, text=True, check=False, **kwargs)


def tool(*args: str) -> list[str]:
    """``metallib-builder ARGS`` from this checkout, with this interpreter."""
    return [sys.executable, "-m", "builder", *args]


def find_metal() -> tuple[list[str], str]:
    """The Metal compiler command and its ``--version`` line, or exit 1 saying what is missing."""
    from builder.cmake_build.driver import MetalToolchain, find_metal_toolchain, missing_message

    found = find_metal_toolchain()
    if not isinstance(found, MetalToolchain):
        sys.exit(
            f"error: {missing_message(found, jit_helps=False)} (Xcode 26 and later: "
            "xcodebuild -downloadComponent MetalToolchain)"
        )
    done = run([*found.command, "--version"])
    version = (done.stdout or done.stderr).strip().splitlines()
    return list(found.command), version[0] if version else "(no version printed)"


def build(tree: str, build_dir: Path, extra: Sequence[str]) -> dict[str, Any]:
    """Build ``tree`` into ``build_dir``; its manifest, or exit 1 with the build's own words."""
    done = run(
        tool("build", "--build-dir", str(build_dir), "--format", "json", *TREES[tree], *extra)
    )
    if done.returncode != 0:
        sys.stderr.write(done.stdout + done.stderr)
        sys.exit(f"error: the build of {tree} failed (exit {done.returncode})")
    manifest: dict[str, Any] = json.loads((build_dir / "manifest.json").read_text("utf-8"))
    return manifest


def library_names(path: Path) -> tuple[list[str], list[str]]:
    """A metallib's function names, and what ``verify`` found wrong with it (every hash)."""
    from builder.metallib import open_metallib, verify

    library = open_metallib(path)
    try:
        names = [f.name for f in library.functions]
        report = verify(library)
        return names, [str(p) for p in report.problems]
    finally:
        library.close()


def compare(names: Sequence[str], expected: Sequence[str]) -> list[str]:
    """Findings when ``names`` are not exactly ``expected`` (each once)."""
    findings = []
    missing, extra = sorted(set(expected) - set(names)), sorted(set(names) - set(expected))
    if missing:
        findings.append(f"{len(missing)} recorded kernels missing, e.g. {missing[:3]}")
    if extra:
        findings.append(f"{len(extra)} functions the build did not record, e.g. {extra[:3]}")
    if len(names) != len(set(names)):
        findings.append("a function name appears twice")
    return findings


# -- aot -------------------------------------------------------------------------------------------
def check_aot(tree: str, work: Path, selection: Sequence[str]) -> list[dict[str, Any]]:
    build_dir = work / f"aot-{tree}"
    manifest = build(tree, build_dir, selection)
    expected = [n for u in manifest["units"] if u["mode"] == "aot" for n in u["host_names"]]
    names, problems = library_names(build_dir / manifest["metallib"])
    return [
        {
            "tree": tree,
            "check": "aot",
            "name": manifest["metallib"],
            "metallib": str(build_dir / manifest["metallib"]),
            "toolchain": manifest.get("toolchain"),
            "kernels": len(names),
            "findings": problems + compare(names, expected),
        }
    ]


# -- jit: the host program -----------------------------------------------------------------------
_EMIT = r"""
#include <cstdio>
#include <cstdlib>
#include <string>
#include <string_view>

static std::string out_dir;
static void emit(std::string_view file, std::string_view text) {
  std::string path = out_dir + "/" + std::string(file) + ".metal";
  std::FILE* f = std::fopen(path.c_str(), "wb");
  if (!f || std::fwrite(text.data(), 1, text.size(), f) != text.size() || std::fclose(f) != 0) {
    std::fprintf(stderr, "cannot write %s\n", path.c_str());
    std::exit(1);
  }
}
"""

_CATALOG_MAIN = r"""
#include <map>
#include <metal_jit/registry.h>
namespace mj = METAL_JIT_NAMESPACE;

// Every kernel's source is its family's preamble followed by its instantiation line: one file
// per family holds the preamble once and every line after it.
int main(int argc, char** argv) {
  if (argc != 2) return 2;
  out_dir = argv[1];
  std::map<std::string, std::string> texts;
  for (std::size_t k = 0; k < mj::kernel_count(); ++k) {
    std::string_view name = mj::kernel_name(k), family = mj::family_of(name);
    std::string_view preamble = mj::preamble(family);
    auto source = mj::source_for(name);
    if (!source || source->compare(0, preamble.size(), preamble) != 0) {
      std::fprintf(stderr, "%.*s: its source does not start with its family's preamble\n",
                   int(name.size()), name.data());
      return 1;
    }
    auto [at, fresh] = texts.try_emplace(std::string(family), preamble);
    at->second += source->substr(preamble.size());
    std::printf("%.*s %.*s\n", int(family.size()), family.data(), int(name.size()), name.data());
  }
  for (const auto& [family, text] : texts) emit(family, text);
  return 0;
}
"""


def host_program(manifest: dict[str, Any]) -> str:
    """The C++ host program that writes every run-time source of a host library into argv[1]."""
    from builder.jit.literals import cxx_string

    if manifest["tree"]["kind"] == "catalog":
        return _EMIT + _CATALOG_MAIN
    jit = [u for u in manifest["units"] if u["mode"] == "jit"]
    preambles = [p for u in jit if u["embedding"] != "whole-file" for p in u["preambles"]]
    # the preambles no unit needs (run-time-only kernels): pieces have bytes, preambles not
    preambles += [s["name"] for s in manifest.get("shared", []) if "bytes" not in s]
    whole = {u["name"]: u["preambles"][0] for u in jit if u["embedding"] == "whole-file"}
    functions = list(dict.fromkeys([*preambles, *whole.values()]))
    ns = NAMESPACE
    lines = [
        _EMIT,
        f"namespace {ns} {{",
        *(f"const std::string& {f}();" for f in functions),
        "std::string_view unit_source(std::string_view unit);",
        "}",
        "int main(int argc, char** argv) {",
        "  if (argc != 2) return 2;",
        "  out_dir = argv[1];",
        *(f"  emit({cxx_string(f)}, {ns}::{f}());" for f in dict.fromkeys(preambles)),
    ]
    for unit, function in whole.items():  # the lookup an app calls, checked against the function
        unit_text = f"{ns}::unit_source({cxx_string(unit)})"
        message = cxx_string(f"unit_source({unit}) is not {function}()\n")
        lines += [
            f"  if ({unit_text} != {ns}::{function}()) {{",
            f"    std::fputs({message}, stderr);",
            "    return 1;",
            "  }",
            f"  emit({cxx_string(function)}, {unit_text});",
        ]
    return "\n".join([*lines, "  return 0;", "}", ""])


def host_sources(manifest: dict[str, Any], build_dir: Path, out: Path) -> dict[str, list[str]]:
    """Write every run-time source of the build's host library into ``out`` (emptied first)
    through the host program. Returns the kernels the library names per family (a catalog tree;
    empty otherwise)."""
    import shutil

    from builder.kernels.bounded_run import find_compiler

    library = (build_dir / manifest["host_library"]).resolve()
    shutil.rmtree(out, ignore_errors=True)  # no source of an earlier run is compiled again
    out.mkdir(parents=True)
    source, program = out / "host_program.cpp", out / "host_program"
    source.write_text(host_program(manifest), encoding="utf-8")
    cxx = find_compiler()
    done = run(
        [cxx.path, "-std=c++17", "-I", str(REGISTRY_INCLUDE), str(source), str(library)]
        + [f"-Wl,-rpath,{library.parent}", "-o", str(program)]
    )
    if done.returncode == 0:
        done = run([str(program), str(out)])
    if done.returncode != 0:
        sys.stderr.write(done.stdout + done.stderr)
        sys.exit(f"error: the host program of {build_dir} failed (exit {done.returncode})")
    per_family: dict[str, list[str]] = {}
    for line in done.stdout.splitlines():
        family, name = line.split(" ", 1)
        per_family.setdefault(family, []).append(name)
    return per_family


def project_reads(depfile: Path, source: Path) -> list[str]:
    """The project files (in this checkout) a compile's depfile names besides its source."""
    text = depfile.read_text("utf-8").replace("\\\n", " ")
    words = re.split(r"(?<!\\)\s+", re.split(r":\s", text, maxsplit=1)[-1].strip())
    files = {Path(w.replace("\\ ", " ")).resolve() for w in words if w}
    return sorted(str(f) for f in files - {source.resolve()} if f.is_relative_to(ROOT))


def compile_source(
    metal: Sequence[str], tree: str, path: Path, kind: str, expected: Sequence[str] | None
) -> dict[str, Any]:
    """``metal -c`` one run-time source alone; link it and compare its kernels when expected."""
    air, dep = path.with_suffix(".air"), path.with_suffix(".d")
    result: dict[str, Any] = {"tree": tree, "check": "jit", "name": path.stem, "kind": kind}
    result.update(file=str(path), bytes=path.stat().st_size, findings=[])
    done = run([*metal, "-x", "metal", "-c", str(path), "-o", str(air), "-MMD", "-MF", str(dep)])
    if done.returncode != 0:
        said = "\n".join(done.stderr.strip().splitlines()[:20])  # the first errors say enough
        result["findings"].append(f"metal -c failed (exit {done.returncode}): {said}")
        return result
    result["findings"] += [
        f"reads {f}: a quoted include was left" for f in project_reads(dep, path)
    ]
    if expected is not None:
        library = path.with_suffix(".metallib")
        done = run([*metal, "-o", str(library), str(air)])
        if done.returncode != 0:
            said = "\n".join(done.stderr.strip().splitlines()[:20])
            result["findings"].append(f"metal -o failed (exit {done.returncode}): {said}")
            return result
        names, problems = library_names(library)
        result["kernels"] = len(names)
        result["findings"] += problems + compare(names, expected)
    return result


def check_jit(
    tree: str, work: Path, selection: Sequence[str], metal: Sequence[str], jobs: int
) -> list[dict[str, Any]]:
    build_dir, out = work / f"jit-{tree}", work / f"jit-{tree}-sources"
    manifest = build(tree, build_dir, [*selection, "--jit", "*"])
    units = {u["name"]: u for u in manifest["units"] if u["mode"] == "jit"}
    per_family = host_sources(manifest, build_dir, out)
    # (file, kind, the kernels it must define or None, findings before compiling)
    todo: list[tuple[Path, str, list[str] | None, list[str]]] = []
    if manifest["tree"]["kind"] == "catalog":  # one file per family, kernels as the manifest says
        for family, unit in units.items():
            named = compare(per_family.get(family, []), unit["host_names"])
            todo.append((out / f"{family}.metal", "catalog family", unit["host_names"], named))
    else:
        whole = {u["preambles"][0]: n for n, u in units.items() if u["embedding"] == "whole-file"}
        for path in sorted(out.glob("*.metal")):
            unit = whole.get(path.stem)
            expected = units[unit]["host_names"] if unit else None
            todo.append((path, "whole-file" if unit else "preamble", expected, []))

    def one(item: tuple[Path, str, list[str] | None, list[str]]) -> dict[str, Any]:
        path, kind, expected, before = item
        if not path.is_file():
            missing = ["the host library returned no source for it"]
            found: dict[str, Any] = {"tree": tree, "check": "jit", "name": path.stem, "kind": kind}
            found["findings"] = missing
        else:
            found = compile_source(metal, tree, path, kind, expected)
        found["findings"] = [*before, *found["findings"]]
        return found

    with ThreadPoolExecutor(max_workers=jobs) as pool:
        return list(pool.map(one, todo))


# -- the command line ----------------------------------------------------------------------------
def report(step: str, work: Path, metal: str, results: list[dict[str, Any]]) -> int:
    from builder.files.atomic import write_atomic

    for r in results:
        size = f", {r['kernels']} kernels" if "kernels" in r else ""
        kind = f" ({r['kind']})" if "kind" in r else ""
        verdict = "ok  " if not r["findings"] else "FAIL"
        print(f"{verdict} {step} {r['tree']} {r['name']}{kind}{size}")
        for finding in r["findings"]:
            print(f"       {finding}")
    ok = all(not r["findings"] for r in results)
    document = {"schema": 1, "step": step, "compiler": metal, "ok": ok, "results": results}
    write_atomic(work / f"{step}.json", json.dumps(document, indent=1) + "\n")
    failed = sum(bool(r["findings"]) for r in results)
    print(f"{step}: {len(results)} checks, {failed} failed, with {metal}")
    return 0 if ok else 1


def main(argv: Sequence[str] | None = None) -> int:
    argv = list(sys.argv[1:] if argv is None else argv)
    if argv[:1] == ["tests"]:  # everything after it is pytest's
        done = subprocess.run([sys.executable, "-m", "pytest", *argv[1:]], cwd=ROOT, check=False)
        return done.returncode
    parser = argparse.ArgumentParser(prog="macos_checks.py", description=__doc__.split("\n")[0])
    parser.add_argument("step", choices=["aot", "jit", "tests"])
    parser.add_argument("--work", type=Path, default=ROOT / "build/macos-checks")
    parser.add_argument("--tree", action="append", choices=sorted(TREES), help="default: all")
    parser.add_argument("--kernels", help="metal_src's families to build (default: all)")
    parser.add_argument("--dtypes", help="metal_src's dtypes to build (default: all)")
    parser.add_argument("-j", "--jobs", type=int, default=os.cpu_count() or 1)
    args = parser.parse_args(argv)
    work = args.work.resolve()
    work.mkdir(parents=True, exist_ok=True)
    command, metal = find_metal()
    print(f"{args.step}: Metal compiler {metal}", flush=True)
    results = []
    for tree in args.tree or sorted(TREES):
        selection = []
        if tree == "metal_src":
            selection += ["--kernels", args.kernels] if args.kernels else []
            selection += ["--dtypes", args.dtypes] if args.dtypes else []
        if args.step == "aot":
            results += check_aot(tree, work, selection)
        else:
            results += check_jit(tree, work, selection, command, args.jobs)
    return report(args.step, work, metal, results)


if __name__ == "__main__":
    raise SystemExit(main())
