"""A kernel tree without a catalog built through CMake with the stand-in compiler: the MLX-style
entry files of tests/data/mlx_style over the real MLX headers of an mlx-metal wheel.

Ground truth is independent of the build: the kernels each entry file emits are the hand-written
expectations of tests/kernels/discovery/expected.py, and the headers each entry file reaches are
what ``g++ -M`` says with the Metal header stand-ins.
"""

from __future__ import annotations

import json
import os
import re
import subprocess
from pathlib import Path

import pytest
from cmake_build.conftest import TREE_HEADERS, StandinBuild, copy_mlx_tree
from kernels.discovery.expected import BY_FILE
from mlx_tree import DATA

from builder.jit.preamble import inline_preamble
from builder.kernels.preprocess import PRELUDE, STANDIN_DIR
from builder.metallib import open_metallib
from builder.records.manifest import read_manifest

pytestmark = pytest.mark.cmake

DEFAULT_FLAGS = ["-Wall", "-Wextra", "-fno-fast-math"]
AOT_ONLY = ("plain_kernels.metal", "tiles/*.metal")


def _library(build) -> list[str]:  # type: ignore[no-untyped-def]
    with open_metallib(build.build_dir / "mlx.metallib") as lib:
        return [fn.name for fn in lib.functions]


def _reached(tree: Path, entry: str, include: Path) -> set[Path]:
    """The files ``entry`` reaches, per ``g++ -M`` (Apple's headers: the discovery stand-ins)."""
    done = subprocess.run(
        [
            "g++",
            "-M",
            "-x",
            "c++",
            "-std=gnu++14",
            "-nostdinc",
            "-nostdinc++",
            "-undef",
            "-include",
            str(PRELUDE),
            "-D__METAL_VERSION__=310",
            "-D__METAL__=1",
            "-D__METAL_MACOS__=1",
            "-D__HAVE_BFLOAT__=1",
            "-I",
            str(include),
            "-I",
            str(tree),
            "-idirafter",
            str(STANDIN_DIR),
            entry,
        ],
        cwd=tree,
        capture_output=True,
        text=True,
        check=True,
    )
    words = done.stdout.replace("\\\n", " ").partition(":")[2].split()
    return {Path(os.path.abspath(tree / w)).resolve() for w in words}


@pytest.fixture
def aot_built(tree_build, cxx_available: None):  # type: ignore[no-untyped-def]
    """A build of the test's own (a test that touches it). The tree has run-time-only kernels:
    their header goes into a host library (C++)."""
    tree_build.configure()
    tree_build.ninja()
    return tree_build


@pytest.fixture(scope="session")
def built_once(shared_standin, lay_out_mlx_tree):  # type: ignore[no-untyped-def]
    """The same build, made once per run, for the tests that only read it."""
    return shared_standin("aot-mlx-style", lay_out_mlx_tree, {})


def test_every_entry_file_compiled_once_with_the_default_flags(built_once) -> None:  # type: ignore[no-untyped-def]
    compiles = built_once.calls("compile")
    assert sorted(built_once.compiled_sources()) == sorted(BY_FILE)
    assert len(compiles) == len(BY_FILE)  # each exactly once
    for call in compiles:
        argv = call["argv"]
        assert argv[:5] == ["-x", "metal", *DEFAULT_FLAGS], argv
        assert argv[argv.index("-c") + 1] == call["source"]  # the entry file itself, not a copy
        assert "-MMD" in argv and argv[argv.index("-MF") + 1].endswith(".d")
    (link,) = built_once.calls("link")
    assert sorted(link["inputs"]) == sorted(c["output"] for c in compiles)


def test_the_library_holds_exactly_the_discovered_kernels(built_once) -> None:  # type: ignore[no-untyped-def]
    names = _library(built_once)
    assert len(names) == len(set(names))
    assert set(names) == set().union(*BY_FILE.values())
    manifest = read_manifest(built_once.build_dir / "manifest.json")
    # each kernel is recorded with its entry file: --by source needs nothing else
    assert manifest.source_of() == {n: f for f, names in BY_FILE.items() for n in names}
    raw = built_once.manifest()
    assert raw["tree"] == {"kind": "discovered", "library": "mlx"}
    assert [f["name"] for f in raw["units"]] == sorted(BY_FILE)
    # one word for what the units are: the tree's kind, not a kind per unit
    assert not any("kind" in f for f in raw["units"])
    # run-time-only kernels (indexing/scatter_rows.h: no entry file instantiates them) are in
    # no metallib: even an AOT build embeds their header in the host library
    assert raw["host_library"] and raw["embedded_bytes"] > 0
    shared = (built_once.build_dir / "metal_jit" / "_shared_preambles.cpp").read_text()
    assert "const std::string& scatter_rows() {" in shared
    assert "[[kernel]] void fill_rows(" in shared


def test_report_by_source_of_the_build_dir(built_once) -> None:  # type: ignore[no-untyped-def]
    done = subprocess.run(
        [
            "metallib-builder",
            "report",
            str(built_once.build_dir),
            "--by",
            "source",
            "--format",
            "json",
        ],
        capture_output=True,
        text=True,
        check=False,
    )
    assert done.returncode == 0, done.stderr
    report = json.loads(done.stdout)
    groups = {g["name"]: g["function_count"] for g in report["groups"]}
    assert groups == {f: len(n) for f, n in BY_FILE.items()}
    assert (
        sum(f["bytes"] for f in report["functions"]) + report["overhead_bytes"]
        == (report["file_size"])
    )


def test_touching_a_header_rebuilds_exactly_the_entry_files_that_reach_it(
    tmp_path: Path, mlx_headers: Path, cxx_available: None
) -> None:
    # the headers are the tree's own copy: touching the shared ones would make other tests
    # (other workers) rebuild what they did not change
    tree = copy_mlx_tree(tmp_path / "tree", DATA, mlx_headers)
    mlx_headers = tree / TREE_HEADERS
    aot_built = StandinBuild(tmp_path / "build", tree, tmp_path / "standin.log")
    aot_built.configure()
    aot_built.ninja()
    reached = {entry: _reached(tree, entry, mlx_headers) for entry in BY_FILE}
    kernels = mlx_headers / "mlx" / "backend" / "metal" / "kernels"
    headers = [kernels / h for h in ("unary_ops.h", "binary.h", "erf.h", "bf16.h", "utils.h")]
    headers.append(tree / "tiles" / "tile_copy.metal")
    seen_sets = set()
    for header in headers:
        expected = {e for e, files in reached.items() if header.resolve() in files}
        assert expected, f"{header} reaches no entry file: a useless case"
        seen_sets.add(frozenset(expected))
        aot_built.reset_log()
        os.utime(header)
        aot_built.ninja()
        assert aot_built.compiled_sources() == expected, header.name
        assert len(aot_built.calls("link")) == 1
    assert len(seen_sets) >= 4  # the cases differ: few, several and all entry files
    aot_built.reset_log()
    assert "no work to do" in aot_built.ninja("-n").stdout


def test_jit_mode_keeps_aot_only_entry_files_and_embeds_the_rest(
    tree_build: StandinBuild, mlx_headers: Path, cxx_available: None
) -> None:
    toml = tree_build.kernel_dir / "metallib.toml"
    toml.write_text(toml.read_text() + f"aot-only = {json.dumps(list(AOT_ONLY))}\n")
    tree_build.defines = {"METALLIB_JIT": "*"}
    tree_build.configure()
    tree_build.ninja()
    aot = {"plain_kernels.metal", "tiles/tile_copy.metal"}
    assert tree_build.compiled_sources() == aot  # the JIT entry files are not compiled
    assert set(_library(tree_build)) == set().union(*(BY_FILE[e] for e in aot))
    manifest = tree_build.manifest()
    modes = {f["name"]: f["mode"] for f in manifest["units"]}
    assert modes == {e: "aot" if e in aot else "jit" for e in BY_FILE}
    jit = {f["name"]: f for f in manifest["units"] if f["mode"] == "jit"}
    for entry, fam in jit.items():
        assert set(fam["host_names"]) == BY_FILE[entry] and fam["sources"] == [entry]
    # versioned.metal (every kernel its own at MSL 3.1) is embedded whole, and inlines the
    # headers unary_subset's preambles are: their text is stored once, in the shared source
    assert jit["versioned.metal"]["embedding"] == "whole-file"
    assert jit["versioned.metal"]["preambles"] == ["versioned"]
    assert jit["unary_subset.metal"]["embedding"] == "preamble"
    assert jit["unary_subset.metal"]["preambles"] == ["utils", "unary_ops", "unary"]
    assert jit["unary_subset.metal"]["embedded_bytes"] == 0
    assert jit["binary_subset.metal"]["embedded_bytes"] > 0
    # the one record of the build: the JIT library's facts are the manifest's, each stored byte
    # counted once (every unit's own, then the shared ones), and no other record is left
    facts = json.loads((tree_build.build_dir / "metal_jit" / "embed.json").read_text())
    keys = ("embedded_bytes", "shared_bytes", "storage", "shared")
    assert {k: manifest[k] for k in keys} == {k: facts[k] for k in keys}
    assert {n: u["headers"] for n, u in jit.items()} == {
        u["name"]: u["headers"] for u in facts["units"]
    }
    alone = sum(u["embedded_bytes"] for u in jit.values())
    assert manifest["embedded_bytes"] == alone + manifest["shared_bytes"] > alone
    assert not (tree_build.build_dir / "build-config.json").exists()
    # each preamble function returns its header with the quoted includes inlined; the
    # functions are the shared source's, an entry file's own source holds its text only
    kernels = mlx_headers / "mlx" / "backend" / "metal" / "kernels"
    shared = (tree_build.build_dir / "metal_jit" / "_shared_preambles.cpp").read_text()
    unary = (tree_build.build_dir / "metal_jit" / "unary_subset.metal.cpp").read_text()
    assert "const std::string& unary_ops() {" in shared
    text = inline_preamble([kernels / "unary_ops.h"], [mlx_headers]).text
    assert text.splitlines()[1] in shared and text.splitlines()[1] not in unary
    own = (tree_build.build_dir / "metal_jit" / "binary_subset.metal.cpp").read_text()
    assert "const std::string& binary_ops() {" in shared
    assert "struct FloorDivide {" in (kernels / "binary_ops.h").read_text()  # its own text
    assert "struct FloorDivide {" in own and "struct FloorDivide {" not in shared
    for unit in (unary, own):  # data only: no header before its namespace, no function
        assert "\n#include" not in unit.split("\nnamespace ")[0] and "() {" not in unit
    assert "namespace mbjit_unit_binary5f_subset2e_metal {" in own
    # report shows the JIT entry files with their kernels, measured in the host library
    done = subprocess.run(
        ["metallib-builder", "report", str(tree_build.build_dir), "--format", "json"],
        capture_output=True,
        text=True,
        check=False,
    )
    assert done.returncode == 0, done.stderr
    rows = {r["name"]: r for r in json.loads(done.stdout)["jit_units"]}
    assert {n: r["kernel_count"] for n, r in rows.items()} == {e: len(BY_FILE[e]) for e in jit}
    # an entry file's symbols are its arrays: its host bytes are the bytes it stores
    assert {n: r["host_bytes"] for n, r in rows.items()} == {
        n: j["embedded_bytes"] for n, j in jit.items()
    }


def test_a_header_edit_regenerates_the_preambles_and_the_kernels(
    tree_build: StandinBuild, mlx_headers: Path, tmp_path: Path, cxx_available: None
) -> None:
    # a header of our own, reached by a JIT entry file: editing it must reach the manifest
    tree = tree_build.kernel_dir
    (tree / "extra.h").write_text('#define EXTRA_NAME "fft_pass_extra"\n')
    entry = tree / "fft.metal"
    entry.write_text(
        '#include "extra.h"\n'
        + entry.read_text()
        + ("instantiate_kernel(EXTRA_NAME, fft_pass, float, 2)\n")
    )
    tree_build.defines = {"METALLIB_JIT": "*"}
    tree_build.configure()
    tree_build.ninja()
    fam = next(f for f in tree_build.manifest()["units"] if f["name"] == "fft.metal")
    assert "fft_pass_extra" in fam["host_names"] and fam["mode"] == "jit"
    (tree / "extra.h").write_text('#define EXTRA_NAME "fft_pass_renamed"\n')
    tree_build.ninja()
    fam = next(f for f in tree_build.manifest()["units"] if f["name"] == "fft.metal")
    assert "fft_pass_renamed" in fam["host_names"] and "fft_pass_extra" not in fam["host_names"]
    generated = (tree_build.build_dir / "metal_jit" / "fft.metal.cpp").read_text()
    assert re.search(r"fft_pass_renamed", generated)
