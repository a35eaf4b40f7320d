"""Pieces of the build driver that need neither CMake nor Ninja."""

from __future__ import annotations

import json
import stat
import subprocess
from collections import Counter
from pathlib import Path

import pytest

from builder.cmake_build.cmake import NinjaOutput, parse_status
from builder.cmake_build.driver import (
    MetalToolchain,
    ToolchainMissing,
    find_metal_toolchain,
    missing_message,
    mixed_jit_units,
)
from builder.cmake_build.plan_model import CHUNK_SIZE, JIT, BuildRequest, Unit, project_dir
from builder.errors import BuilderError, UsageError
from builder.files.dataclass_json import dump, load
from builder.kernels import load_catalog
from builder.kernels.bounded_run import find_compiler
from builder.kernels.catalog_tree import generate_tree, write_tree
from builder.records.manifest import Tree, build_manifest
from builder.size.jit_sizes import OTHER, symbol_sizes

ROOT = Path(__file__).resolve().parents[2]


def test_parse_status_and_failure_text() -> None:
    assert parse_status("[3/12] Compiling Metal unary_0.air").done == 3  # type: ignore[union-attr]
    assert parse_status("[3/12] x").total == 12  # type: ignore[union-attr]
    assert parse_status("warning: something") is None
    out = NinjaOutput()
    for line in ["[1/3] a", "FAILED: x.air", "metal -c x.metal", "x.metal:1: error", "ninja: stop"]:
        out.feed(line)
    assert out.edges_run == 1
    assert out.failure_text().splitlines()[0] == "FAILED: x.air"
    assert "x.metal:1: error" in out.failure_text()


def _exe(path: Path) -> Path:
    path.write_text("#!/bin/sh\n")
    path.chmod(path.stat().st_mode | stat.S_IXUSR)
    return path


def test_toolchain_resolution(tmp_path: Path) -> None:
    metal = _exe(tmp_path / "metal")
    found = find_metal_toolchain(env={"METAL_COMPILER": str(metal), "PATH": ""})
    assert found == MetalToolchain(str(metal), "METAL_COMPILER", (str(metal),))
    found = find_metal_toolchain(str(metal), env={"PATH": ""})
    assert isinstance(found, MetalToolchain) and found.origin == "--metal-compiler"
    assert found.explicit == str(metal)  # handed to CMake as METAL_COMPILER
    missing = find_metal_toolchain(env={"PATH": str(tmp_path / "empty")})
    assert missing == ToolchainMissing("xcrun not found")
    nothing = find_metal_toolchain(env={"PATH": ""})
    assert isinstance(nothing, ToolchainMissing)
    said = missing_message(nothing)
    assert "Xcode or the Metal toolchain on macOS and with the Metal Developer Tools" in said
    bad = find_metal_toolchain(str(tmp_path / "nope"), env={"PATH": ""})
    assert isinstance(bad, ToolchainMissing) and "not an executable" in bad.reason


def test_toolchain_through_xcrun_runs_it_with_the_sdk() -> None:
    xcrun_dir = Path(__file__).resolve().parent / "standin" / "xcrun-bin"
    found = find_metal_toolchain(env={"PATH": str(xcrun_dir)}, sdk="iphoneos")
    assert isinstance(found, MetalToolchain) and found.origin == "xcrun"
    assert found.command == (str(xcrun_dir / "xcrun"), "-sdk", "iphoneos", "metal")
    assert found.compiler.endswith("metal-standin") and found.explicit is None


def test_generated_tree_rewritten_only_on_change_and_stale_removed(tmp_path: Path) -> None:
    catalog = load_catalog()
    out = tmp_path / "metal_gen"
    tree = generate_tree(catalog, ["unary"], ["float32"], 30)
    paths = write_tree(tree, out)
    assert (
        sorted(paths) == sorted(out.glob("unary/*.metal")) and len(paths) == len(tree.entries) > 1
    )
    mtimes = [p.stat().st_mtime_ns for p in paths]
    again = generate_tree(catalog, ["unary"], ["float32"], 30)
    assert again == tree  # deterministic: the same inputs, the same entry files
    write_tree(again, out)
    assert [p.stat().st_mtime_ns for p in paths] == mtimes
    one = generate_tree(catalog, ["unary"], ["float32"], 100_000)
    write_tree(one, out)
    assert [p.relative_to(out).as_posix() for p in out.rglob("*.metal")] == [one.entries[0].path]
    # an ordinary tree: each file includes its family header and instantiates, nothing else
    text = (out / one.entries[0].path).read_text()
    assert '#include "unary/unary.h"' in text
    assert text.count("instantiate_kernel(") == len(catalog.expand(["unary"], ["float32"]))


def test_select_families_catalog_order_and_errors() -> None:
    catalog = load_catalog()
    assert catalog.select(["copy", "unary"]) == ("unary", "copy")
    assert catalog.select(["copy", "unary", "copy"], keep_order=True) == (
        "copy",
        "unary",
    )
    with pytest.raises(UsageError, match="unknown catalog family 'nope'; valid: unary, binary"):
        catalog.select(["nope"])


def test_manifest_from_plan_and_embed(tmp_path: Path) -> None:
    src = tmp_path / "metal_aot" / "src" / "unary_v_abs_float32.metal"
    src.parent.mkdir(parents=True)
    src.write_text("x")
    air = tmp_path / "metal_aot.air" / "unary_v_abs_float32.air"
    (tmp_path / "mlx.metallib").write_bytes(b"12345")
    (tmp_path / "libmetal_jit.so").write_bytes(b"123")
    (tmp_path / "metal_jit").mkdir()
    (tmp_path / "metal_jit" / "copy.cpp").write_text("yy")
    units = [Unit("unary", "aot", ("unary/unary.h",)), Unit("copy", "jit", ("copy/copy.h",))]
    embed = {
        "compressed": False,
        "embedded_bytes": 7,
        "units": [
            {
                "name": "copy",
                "headers": ["copy/copy.h"],
                "host_names": ["c1"],
                "source_bytes": 9,
                "embedded_bytes": 7,
            }
        ],
    }
    config = {"options": {"METALLIB_STD": "metal3.1"}, "objects": {str(src): str(air)}}
    built = build_manifest(
        tmp_path,
        config,
        tree=Tree("catalog", "mlx"),
        units=units,
        compiled={"unary": [str(src)]},
        options={"METALLIB_JIT": []},
        kernels={"unary": ["u1"], "copy": ["c1"]},
        metallib=str(tmp_path / "mlx.metallib"),
        embed=embed,
        embed_dir=tmp_path / "metal_jit",
        host_library=str(tmp_path / "libmetal_jit.so"),
    )
    m = dump(built)
    # what the units are is the tree's kind, said once; a unit's record is the plan's unit
    # with what the build made of it
    assert m["tree"]["kind"] == "catalog" and [f["name"] for f in m["units"]] == ["unary", "copy"]
    assert not any("kind" in f for f in m["units"])
    assert load(Unit, m["units"][0]).sources == units[0].sources
    unary, copy = m["units"]
    assert unary["outputs"] == ["metal_aot.air/unary_v_abs_float32.air", "mlx.metallib"]
    assert unary["generated_sources"] == ["metal_aot/src/unary_v_abs_float32.metal"]
    assert unary["host_names"] == ["u1"] and unary["generated_bytes"] == 1
    assert copy["mode"] == "jit" and copy["embedded_bytes"] == 7
    assert copy["outputs"] == ["metal_jit/copy.cpp", "libmetal_jit.so"]
    assert m["files"]["metallib"] == {"path": "mlx.metallib", "bytes": 5}
    assert m["embedded_bytes"] == 7
    assert m["options"] == {"METALLIB_JIT": [], "METALLIB_STD": "metal3.1"}


def test_symbol_sizes_by_the_unit_namespace(tmp_path: Path) -> None:
    """A symbol is a unit's when its name holds the unit's namespace (spelled here as
    builder.jit.literals.unit_namespace documents it) or ``family_<unit>``, whatever file
    defines it; a ``.bss`` object holds no file bytes and counts for nobody."""
    (tmp_path / "unary.cpp").write_text(
        # the anonymous namespace's mangled name ends in a digit (12_GLOBAL__N_1) right
        # before the unit's namespace's length
        "namespace { namespace mbjit_unit_unary { extern const char a[100]; "
        "const char a[100] = {1}; } }\n"
        "const char* ua() { return mbjit_unit_unary::a; }\n"
        "extern const int family_unary[8]; const int family_unary[8] = {1};\n"
        "namespace mbjit_unit_steel2f_x2e_metal { extern const char t[40]; "
        "const char t[40] = {1}; }\n"
        "char zeros[4096];\n"
    )
    # a registry entry in a namespace, as the generator writes them: its name is mangled
    # (_ZN9metal_jit6detail11family_copyE); a longer name that starts the same is not it
    (tmp_path / "other.cpp").write_text(
        "extern const char rt[64]; const char rt[64] = {1};\n"
        "namespace metal_jit { namespace detail {\n"
        "extern const int family_copy[4]; const int family_copy[4] = {1};\n"
        "extern const int family_copy_general[2]; const int family_copy_general[2] = {1};\n"
        "namespace mbjit_unit_unary { extern const char b[10]; const char b[10] = {1}; }\n"
        "} }\n"
    )
    lib = tmp_path / "lib.so"
    cxx = find_compiler().path  # g++ from scripts/setup.sh: missing is a failure, not a skip
    subprocess.run(
        [cxx, "-shared", "-fPIC", "-O1", "-o", str(lib), "unary.cpp", "other.cpp"],
        cwd=tmp_path,
        check=True,
    )
    sizes = symbol_sizes(lib, ["unary", "copy", "steel/x.metal"])
    assert sizes is not None, "pyelftools is a dependency: the symbol table must be read"
    assert sizes.method == "pyelftools .symtab"
    assert sizes.by_unit["unary"] == 100 + 32 + 10
    assert sizes.by_unit["copy"] == 16  # family_copy, not family_copy_general
    assert sizes.by_unit["steel/x.metal"] == 40
    assert 64 + 8 <= sizes.by_unit[OTHER] < 4096  # rt, family_copy_general, ua; not zeros
    assert symbol_sizes(lib, ["softmax"]) is None  # no symbol names a unit


def test_progress_display_bar_and_plain_lines() -> None:
    import io

    from rich.console import Console

    from builder.cmake_build.cmake import Status, progress_display

    for terminal in (True, False):
        buf = io.StringIO()
        console = Console(file=buf, force_terminal=terminal, width=100)
        with progress_display(console, "Building b") as show:
            show(Status(1, 2, "Compiling Metal unary_0.air"))
            show(Status(2, 2, "Linking mlx.metallib"))
        text = buf.getvalue()
        assert "Linking mlx.metallib" in text
        assert ("[2/2] Linking mlx.metallib" in text) is not terminal


def test_mixed_preset_names_the_largest_families() -> None:
    """One statement of the mixed build: the 'mixed' preset (what `cmake --preset mixed` builds)
    is what `variants` reads, and it names the catalog's largest families by instantiations."""
    presets = json.loads((ROOT / "CMakePresets.json").read_text(encoding="utf-8"))
    (mixed,) = [p for p in presets["configurePresets"] if p["name"] == "mixed"]
    listed = tuple(mixed["cacheVariables"]["METALLIB_JIT"].split(";"))
    assert mixed_jit_units(project_dir()) == listed
    counts = Counter(inst.family for inst in load_catalog().expand())
    assert set(listed) == {name for name, _ in counts.most_common(len(listed))}
    assert 0 < len(listed) < len(counts)


def test_mixed_preset_missing_or_malformed_is_one_error(tmp_path: Path) -> None:
    with pytest.raises(BuilderError, match=r"CMakePresets\.json: no readable 'mixed' preset"):
        mixed_jit_units(tmp_path)
    presets = {"configurePresets": [{"name": "jit-on", "cacheVariables": {"METALLIB_JIT": "*"}}]}
    (tmp_path / "CMakePresets.json").write_text(json.dumps(presets))
    with pytest.raises(BuilderError, match="no readable 'mixed' preset"):
        mixed_jit_units(tmp_path)
    presets["configurePresets"].append(
        {"name": "mixed", "cacheVariables": {"METALLIB_JIT": "unary;;copy"}}
    )
    (tmp_path / "CMakePresets.json").write_text(json.dumps(presets))
    assert mixed_jit_units(tmp_path) == ("unary", "copy")


@pytest.mark.cmake
def test_the_request_travels_one_way(tmp_path: Path) -> None:
    """One request, one serialisation: the CLI's values -> plan.json's ``request`` ->
    ``from_json``; and a plain CMake run's cache variables, worded by the generated
    ``metallib_build_request``, read back by the same ``from_json`` to the same request."""
    from builder.cmake_build.cmake import find_tool

    values = {
        "jit": ("unary", "co*"),
        "kernels": "unary,copy",
        "dtypes": "float32",
        "chunk_size": 64,
        "compress": True,
        "metal_flags": ("-Wall -O3", '-DX="a b"'),
        "std": "metal3.1",
        "deployment_target": "14.0",
        "sdk": "iphoneos",
        "include_dirs": (tmp_path / "a b",),
        "defines": ("X=1", "F(a,b)=a"),
        "build_dir": tmp_path / "b",
    }
    request = BuildRequest.from_options(values)
    assert request[JIT] == ("unary", "co*") and request[CHUNK_SIZE] == 64
    assert request.metal_flags == ("-Wall", "-O3", "-DX=a b")
    assert BuildRequest.from_json(request.to_json()) == request
    with pytest.raises(ValueError, match="chunk_size"):
        BuildRequest.from_json({**request.to_json(), "chunk_size": "64"})
    with pytest.raises(ValueError, match="no build option jit_kernels"):
        BuildRequest.from_json({"jit_kernels": []})
    script = tmp_path / "print.cmake"
    script.write_text(
        f'include("{ROOT}/cmake/MetallibBuildOptions.cmake")\n'
        "metallib_build_request(json)\n"
        'message(NOTICE "${json}")\n'
    )
    cache = {
        "METALLIB_JIT": "unary,co*",
        "METALLIB_KERNELS": "unary;copy",
        "METALLIB_DTYPES": "float32",
        "METALLIB_AOT_CHUNK_SIZE": "64",
        "METALLIB_JIT_COMPRESS": "ON",
        "METALLIB_AOT_FLAGS": "-Wall,-O3;-DX=a b",
        "METALLIB_STD": "metal3.1",
        "METALLIB_DEPLOYMENT_TARGET": "14.0",
        "METALLIB_SDK": "iphoneos",
        "METALLIB_SOURCE_DIR": "",
        "METALLIB_INCLUDE_DIRS": str(tmp_path / "a b"),
        "METALLIB_DEFINES": "X=1;F(a,b)=a",
    }
    done = subprocess.run(
        [find_tool("cmake"), *(f"-D{k}={v}" for k, v in cache.items()), "-P", str(script)],
        capture_output=True,
        text=True,
        check=True,
    )
    from_cmake = BuildRequest.from_json(json.loads(done.stderr))
    assert from_cmake.replace(build_dir=tmp_path / "b") == request
