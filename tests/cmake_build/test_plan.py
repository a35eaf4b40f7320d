"""The build plan: one Python function decides the units and their modes for the CLI, CMake and the
manifest; CMake's plan.json is that function's output, byte for byte."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest
from kernels.discovery.expected import BY_FILE

from builder.cmake_build.driver import build_plan
from builder.cmake_build.plan import make_plan
from builder.cmake_build.plan_model import BuildPlan, BuildRequest, PlannedPreamble, plan_text
from builder.errors import UsageError
from builder.kernels import load_catalog

from .conftest import METAL, ROOT


def test_catalog_units_are_families_split_by_mode(tmp_path: Path) -> None:
    plan = make_plan(
        BuildRequest().replace(
            kernels=("copy", "unary", "arange"),
            jit=("copy",),
            dtypes=("float32",),
            build_dir=tmp_path,
        )
    )
    assert (plan.kind, plan.library) == ("catalog", "mlx")
    assert plan.aot == ("unary", "arange") and plan.jit == ("copy",)  # catalog order
    assert {c.unit for c in plan.compiles} == {"unary", "arange"}
    # the catalog expands into entry files of a tree in the build folder, one folder per unit;
    # the AOT units' entry files are compiled, and between them hold each AOT kernel once
    assert all(c.source.parent == tmp_path / "metal_gen" / c.unit for c in plan.compiles)
    assert plan.generated is not None and plan.source_root == tmp_path / "metal_gen"
    compiled = {str(c.source) for c in plan.compiles}
    held = sorted(
        i.host_name
        for e in plan.generated.entries
        if str(tmp_path / "metal_gen" / e.path) in compiled
        for i in e.instantiations
    )
    expected = load_catalog().expand(["unary", "arange"], ["float32"])
    assert held == sorted(i.host_name for i in expected)
    assert {e.unit for e in plan.generated.entries} == {"unary", "copy", "arange"}
    every = make_plan(BuildRequest().replace(jit=("*",)))
    assert every.jit == tuple(load_catalog().families) and every.aot == () and not every.compiles


def test_discovered_units_are_entry_files(mlx_tree: Path, tmp_path: Path) -> None:
    toml = mlx_tree / "metallib.toml"
    toml.write_text(toml.read_text() + 'aot-only = ["tiles/*.metal"]\n')
    plan = make_plan(
        BuildRequest().replace(
            source_dir=mlx_tree, jit=("*",), defines=("NDEBUG", "__METAL_VERSION__=320")
        )
    )
    assert [u.name for u in plan.units] == sorted(BY_FILE) and plan.library == "mlx"
    # aot-only names tiles/; plain_kernels.metal writes its kernel template copy_values itself:
    # it is JIT, embedded whole
    assert plan.aot == ("tiles/tile_copy.metal",)
    reasons = {u.name: u.reason for u in plan.units if u.mode == "aot"}
    assert reasons == {"tiles/tile_copy.metal": "named by [build] aot-only in metallib.toml"}
    assert [c.source for c in plan.compiles] == [mlx_tree.resolve() / "tiles" / "tile_copy.metal"]
    unary = next(u for u in plan.units if u.name == "unary_subset.metal")
    assert unary.preambles == ("utils", "unary_ops", "unary") and unary.embedding == "preamble"
    plain = next(u for u in plan.units if u.name == "plain_kernels.metal")
    assert (plain.mode, plain.embedding, plain.preambles) == (
        "jit",
        "whole-file",
        ("plain_kernels",),
    )
    whole = next(p for p in plan.preambles if p.function == "plain_kernels")
    assert whole.headers == (str(mlx_tree.resolve() / "plain_kernels.metal"),)
    # the whole plan read back from its file's text, the embedding included
    written = tmp_path / "plan.json"
    written.write_text(plan_text(plan))
    assert BuildPlan.read(written) == plan
    # what the plan carries beside its file (a discovery to remember) is neither written nor
    # read: a plan.json naming one is read without it
    assert plan.memo is None and "memo" not in json.loads(written.read_text())
    written.write_text(json.dumps({**json.loads(plan_text(plan)), "memo": {"files": 1}}))
    assert BuildPlan.read(written).memo is None
    # the compiler defines Metal's own macros itself; discovery gets every define
    assert plan.defines == ("NDEBUG",) and plan.discovery is not None
    assert plan.discovery.metal_version == 320
    assert plan.std == "metal3.2"  # the version discovery assumes is the one compiled for
    assert make_plan(BuildRequest().replace(source_dir=mlx_tree)).jit == ()


def test_library_defaults_to_the_folder_name(mlx_style: Path, mlx_headers: Path) -> None:
    plan = make_plan(BuildRequest().replace(source_dir=mlx_style, include_dirs=(mlx_headers,)))
    assert plan.library == "mlx_style" and plan.std is None
    ios = make_plan(
        BuildRequest().replace(
            source_dir=mlx_style, include_dirs=(mlx_headers,), std="ios-metal2.4"
        )
    )
    assert ios.discovery is not None and ios.discovery.metal_version == 240


@pytest.mark.parametrize(
    ("request_", "words"),
    [
        ({"kernels": ("unary",)}, "--kernels and --dtypes select catalog families"),
        ({"exclude": ("*",)}, "all 7 entry files are excluded"),
        ({"include_dirs": (Path("/nonexistent"),)}, "include folder /nonexistent"),
        ({"std": "metal3"}, "--std must be a Metal language standard"),
    ],
)
def test_discovered_refusals(mlx_style: Path, request_: dict[str, object], words: str) -> None:
    with pytest.raises(UsageError, match=words):
        make_plan(BuildRequest().replace(source_dir=mlx_style, **request_))


def test_catalog_refusals() -> None:
    with pytest.raises(UsageError, match="-I, -D, --exclude and --config apply only"):
        make_plan(BuildRequest().replace(exclude=("*",)))
    with pytest.raises(UsageError, match="unknown dtype"):
        make_plan(BuildRequest().replace(dtypes=("float128",)))


def test_select_for_metallib_add_jit_library_keeps_the_order_given() -> None:
    run = [
        sys.executable,
        "-m",
        "builder.cmake_build.plan",
        "--select",
        "--source-dir",
        str(ROOT / "metal_src"),
        "--kernels",
    ]
    done = subprocess.run(
        [*run, "unary,softmax,arange,unary"], capture_output=True, text=True, check=False
    )
    assert done.returncode == 0 and done.stdout.strip() == "unary;softmax;arange"
    bad = subprocess.run([*run, "unary,nope"], capture_output=True, text=True, check=False)
    assert bad.returncode == 2 and bad.stderr.startswith("error: unknown catalog family 'nope'")


@pytest.mark.cmake
@pytest.mark.parametrize("tree", ["catalog", "discovered"])
def test_cmake_writes_the_plan_the_cli_computes(tree: str, mlx_tree: Path, tmp_path: Path) -> None:
    """CMake runs the same function: the plan file of a configured build is byte-identical to the
    plan the CLI computes from the same settings (and so is the split the CLI reports)."""
    args = (
        ["--source-dir", str(mlx_tree)]
        if tree == "discovered"
        else ["--kernels", "unary,copy", "--jit", "copy", "--dtypes", "float32"]
    )
    build_dir = tmp_path / "b"
    done = subprocess.run(
        [
            sys.executable,
            "-m",
            "builder",
            "build",
            *args,
            "--build-dir",
            str(build_dir),
            "--metal-compiler",
            str(METAL),
            "--deployment-target",
            "14.0",
        ],
        cwd=ROOT,
        capture_output=True,
        text=True,
        check=False,
    )
    assert done.returncode == 0, done.stderr
    request = BuildRequest().replace(
        build_dir=build_dir.resolve(),
        source_dir=mlx_tree if tree == "discovered" else None,
        kernels=() if tree == "discovered" else ("unary", "copy"),
        jit=() if tree == "discovered" else ("copy",),
        dtypes=() if tree == "discovered" else ("float32",),
        deployment_target="14.0",
    )
    written = (build_dir / "metal_plan" / "plan.json").read_text()
    compiler = json.loads(written)["request"]["metal_compiler"]  # the one the CLI found
    assert Path(compiler).samefile(METAL)
    assert written == plan_text(build_plan(request.replace(metal_compiler=compiler)))
    plan = BuildPlan.read(build_dir / "metal_plan" / "plan.json")
    assert plan_text(plan) == written  # read back typed: nothing lost
    manifest = json.loads((build_dir / "manifest.json").read_text())
    assert [(u.name, u.mode) for u in plan.units] == [
        (f["name"], f["mode"]) for f in manifest["units"]
    ]
    # the units' kind is said once, by the tree; a unit has no kind of its own
    assert manifest["tree"]["kind"] == tree and not any("kind" in f for f in manifest["units"])


def test_run_time_only_kernels_make_a_host_library_even_for_an_aot_build(mlx_tree: Path) -> None:
    plan = make_plan(BuildRequest().replace(source_dir=mlx_tree))
    assert plan.jit == () and plan.cmake_lists()["jit_library"] == "ON"
    assert plan.preambles == (
        PlannedPreamble(
            function="scatter_rows",
            headers=(str((mlx_tree / "indexing/scatter_rows.h").resolve()),),
            entries=(),
            embedding="preamble",
        ),
    )
    assert all(u.reason is None for u in plan.units)  # nothing held back: nothing was asked JIT


def test_a_plan_that_would_lose_kernels_is_refused(tmp_path: Path) -> None:
    """A kernel template reached through a computed include is in no preamble (the inliner
    leaves ``#include NAME`` to the run-time compiler): JIT mode would lose its kernels."""
    from builder.errors import CheckFailed

    (tmp_path / "k.h").write_text("template <typename T>\n[[kernel]] void k(device T* x) { }\n")
    (tmp_path / "macro.metal").write_text(
        '#define KERNELS "k.h"\n#include KERNELS\n'
        'template [[host_name("k_float")]] [[kernel]] decltype(k<float>) k<float>;\n'
    )
    assert make_plan(BuildRequest().replace(source_dir=tmp_path)).aot == (
        "macro.metal",
    )  # AOT: fine
    with pytest.raises(
        CheckFailed,
        match=r"the build \(--jit/--aot\) would lose 1 kernel\(s\).*"
        r"macro\.metal: 1 kernel\(s\), code in k\.h",
    ):
        make_plan(BuildRequest().replace(source_dir=tmp_path, jit=("*",)))


def test_discovery_is_remembered_until_a_file_it_read_changes(
    mlx_tree: Path, tmp_path: Path
) -> None:
    """make_plan writes nothing; write_plan remembers the discovery it made beside plan.json,
    and the next plan reuses it until a file discovery read changes."""
    import os

    from builder.cmake_build.plan import write_plan

    cache = tmp_path / "build" / "metal_plan" / "discovery.json"
    request = BuildRequest().replace(source_dir=mlx_tree, jit=("*",))

    def planned() -> str:
        plan = make_plan(request, cache_file=cache)
        write_plan(plan, cache.parent / "plan.json")
        return plan_text(plan)

    made = make_plan(request, cache_file=cache)
    assert made.memo is not None and not cache.exists()  # nothing written by planning
    first = planned()
    assert cache.is_file() and plan_text(make_plan(request)) == first
    stamp = cache.stat().st_mtime_ns
    again = make_plan(request, cache_file=cache)
    assert again.memo is None and plan_text(again) == first  # reused, not discovered
    assert cache.stat().st_mtime_ns == stamp
    # fft.h (read by fft.metal) now writes its template in fft.metal's place: discovered again
    header = mlx_tree / "fft.h"
    header.write_text(header.read_text().replace("fft_pass", "fft_pass_moved"))
    entry = mlx_tree / "fft.metal"
    entry.write_text(
        "template <typename T, int N>\n[[kernel]] void fft_pass(device T* x) { }\n"
        + entry.read_text()
    )
    os.utime(header, ns=(stamp + 10**9, stamp + 10**9))
    changed = planned()
    assert cache.stat().st_mtime_ns != stamp
    fft = {u.name: u for u in make_plan(request, cache_file=cache).units}["fft.metal"]
    assert (fft.mode, fft.embedding) == ("jit", "whole-file") and changed != first
    assert changed == plan_text(make_plan(request))
    cache.write_text("{not json")  # a broken memory is ignored and replaced
    assert planned() == changed


def test_jit_and_aot_take_unit_globs_for_both_tree_kinds(mlx_tree: Path) -> None:
    """--jit/--aot name units by name or glob, in a catalog tree and in a discovered one, as
    variants --from does; a glob naming no unit is refused naming it."""
    discovered = make_plan(BuildRequest().replace(source_dir=mlx_tree, jit=("u*.metal",)))
    assert discovered.jit == ("unary_subset.metal",)
    held = make_plan(BuildRequest().replace(source_dir=mlx_tree, aot=("fft.metal",)))
    assert "fft.metal" in held.aot and "unary_subset.metal" in held.jit
    assert "plain_kernels.metal" in held.jit  # it writes its own templates: embedded whole
    catalog = make_plan(BuildRequest().replace(kernels=("unary", "copy"), aot=("un*",)))
    assert (catalog.aot, catalog.jit) == (("unary",), ("copy",))
    with pytest.raises(UsageError, match=r"--jit 'x\*\.metal' matches no unit of .*7 units"):
        make_plan(BuildRequest().replace(source_dir=mlx_tree, jit=("x*.metal",)))
    with pytest.raises(UsageError, match="give one of them"):
        make_plan(BuildRequest().replace(jit=("unary",), aot=("copy",)))
