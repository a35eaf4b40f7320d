"""Pieces of the build driver that need neither CMake nor Ninja."""

from __future__ import annotations

import json
import stat
import subprocess
from collections import Counter
from pathlib import Path

import pytest

from builder.cmake_build.aot_sources import select_families, write_sources
from builder.cmake_build.cmake import BuildSettings, cmake_args
from builder.cmake_build.driver import project_source_dir
from builder.cmake_build.progress import NinjaOutput, parse_status
from builder.cmake_build.toolchain import (
    MetalToolchain,
    ToolchainMissing,
    find_metal_toolchain,
    require_metal_toolchain,
)
from builder.cmake_build.variants import mixed_jit_families
from builder.errors import BuilderError, UsageError
from builder.kernels import load_catalog
from builder.kernels.compiler import find_compiler
from builder.manifest import build_manifest
from builder.size.host_symbols import OTHER, symbol_sizes

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


def test_cmake_args_are_typed(tmp_path: Path) -> None:
    settings = BuildSettings(source_dir=tmp_path, build_dir=tmp_path / "b", jit=False,
                             kernels=("unary", "copy"), jit_kernels=("copy",), dtypes=("float32",),
                             metal_compiler="/x/metal", chunk_size=64)  # fmt: skip
    args = cmake_args(settings)
    assert "-DMETAL_JIT:BOOL=OFF" in args
    assert "-DMETAL_KERNELS:STRING=unary;copy" in args
    assert "-DMETAL_JIT_KERNELS:STRING=copy" in args
    assert "-DMETAL_AOT_CHUNK_SIZE:STRING=64" in args
    assert "-DMETAL_COMPILER:FILEPATH=/x/metal" in args


def _exe(path: Path) -> Path:
    path.write_text("#!/bin/sh\n")
    path.chmod(path.stat().st_mode | stat.S_IXUSR)
    return path


def test_toolchain_resolution(tmp_path: Path) -> None:
    metal = _exe(tmp_path / "metal")
    found = find_metal_toolchain(env={"METAL_COMPILER": str(metal), "PATH": ""})
    assert isinstance(found, ToolchainMissing) and "no metallib beside" in found.reason
    linker = _exe(tmp_path / "metallib")
    found = find_metal_toolchain(str(metal), env={"PATH": ""})
    assert isinstance(found, MetalToolchain) and found.linker == str(linker)
    assert found.origin == "--metal-compiler"
    missing = find_metal_toolchain(env={"PATH": str(tmp_path / "empty")})
    assert missing == ToolchainMissing("xcrun not found")
    with pytest.raises(UsageError, match="needs macOS with Xcode or the Metal toolchain"):
        require_metal_toolchain(env={"PATH": ""})
    bad = find_metal_toolchain(str(tmp_path / "nope"), env={"PATH": ""})
    assert isinstance(bad, ToolchainMissing) and "not an executable" in bad.reason


def test_sources_rewritten_only_on_change_and_stale_removed(tmp_path: Path) -> None:
    items = load_catalog().expand(["unary"], ["float32"])
    out = tmp_path / "src"
    plan = write_sources(items, out, 30)
    paths = sorted(out.glob("*.metal"))
    assert len(paths) == len(plan[0]["chunks"]) == -(-len(items) // 30)  # type: ignore[arg-type]
    mtimes = [p.stat().st_mtime_ns for p in paths]
    write_sources(items, out, 30)
    assert [p.stat().st_mtime_ns for p in paths] == mtimes
    write_sources(items, out, 1000)
    assert [p.name for p in out.glob("*.metal")] == ["unary_0.metal"]


def test_select_families_catalog_order_and_errors() -> None:
    root = Path(__file__).resolve().parents[2] / "metal_src"
    assert select_families(root, "copy,unary", "unary") == ["unary;copy", "unary"]
    with pytest.raises(UsageError, match="not among the selected"):
        select_families(root, "copy", "unary")
    with pytest.raises(UsageError, match="unknown kernel family"):
        select_families(root, "nope", "")


def test_manifest_from_plan_and_embed(tmp_path: Path) -> None:
    src = tmp_path / "metal_aot" / "src" / "unary_0.metal"
    src.parent.mkdir(parents=True)
    src.write_text("x")
    (tmp_path / "mlx.metallib").write_bytes(b"12345")
    (tmp_path / "libmetal_jit.so").write_bytes(b"123")
    (tmp_path / "metal_jit").mkdir()
    (tmp_path / "metal_jit" / "copy.cpp").write_text("yy")
    plan = {"families": [{"name": "unary", "header": "unary/unary.h",
                          "chunks": [{"source": str(src), "bytes": 1, "host_names": ["u1"]}]}]}  # fmt: skip
    embed = {"compressed": False, "embedded_bytes": 7, "families": [
        {"name": "copy", "headers": ["copy/copy.h"], "host_names": ["c1"], "source_bytes": 9,
         "embedded_bytes": 7}]}  # fmt: skip
    config = {"families": ["unary", "copy"], "options": {"METAL_JIT": False}}
    m = build_manifest(tmp_path, config, plan, str(tmp_path / "mlx.metallib"), embed,
                       tmp_path / "metal_jit" / "embed.json", str(tmp_path / "libmetal_jit.so"))  # fmt: skip
    assert [f["name"] for f in m["families"]] == ["unary", "copy"]
    unary, copy = m["families"]
    assert unary["outputs"] == ["metal_aot/air/unary_0.air", "mlx.metallib"]
    assert unary["generated_sources"] == ["metal_aot/src/unary_0.metal"]
    assert copy["mode"] == "jit" and copy["embedded_bytes"] == 7
    assert copy["outputs"] == ["metal_jit/copy.cpp", "libmetal_jit.so"]
    assert m["files"]["metallib"] == {"path": "mlx.metallib", "bytes": 5}
    assert m["embedded_bytes"] == 7


def test_symbol_sizes_per_translation_unit(tmp_path: Path) -> None:
    (tmp_path / "unary.cpp").write_text(
        "namespace { extern const char a[100]; const char a[100] = {1}; }\n"
        "const char* ua() { return a; }\n"
        "extern const int family_unary[8]; const int family_unary[8] = {1};\n"
    )
    (tmp_path / "other.cpp").write_text("extern const char rt[64]; const char rt[64] = {1};\n")
    lib = tmp_path / "lib.so"
    cxx = find_compiler().path  # g++ from scripts/setup.sh: missing is a failure, not a skip
    subprocess.run([cxx, "-shared", "-fPIC", "-O1", "-o", str(lib), "unary.cpp", "other.cpp"],
                   cwd=tmp_path, check=True)  # fmt: skip
    sizes = symbol_sizes(lib, ["unary", "copy"])
    assert sizes is not None, "pyelftools is a dependency: the symbol table must be read"
    assert sizes.method == "pyelftools .symtab"
    assert sizes.by_family["unary"] >= 100 + 32
    assert sizes.by_family["copy"] == 0
    assert sizes.by_family[OTHER] >= 64


def test_progress_display_bar_and_plain_lines() -> None:
    import io

    from rich.console import Console

    from builder.cmake_build.progress import ProgressDisplay, Status

    for terminal in (True, False):
        buf = io.StringIO()
        console = Console(file=buf, force_terminal=terminal, width=100)
        with ProgressDisplay(console, "Building b") as show:
            show(Status(1, 2, "Compiling Metal unary_0.air"))
            show(Status(2, 2, "Linking mlx.metallib"))
        text = buf.getvalue()
        assert "Linking mlx.metallib" in text
        assert ("[2/2] Linking mlx.metallib" in text) is not terminal


def test_mixed_variant_is_the_mixed_preset_of_the_largest_families() -> None:
    """One statement of the mixed variant: the 'mixed' preset (what `cmake --preset mixed` builds)
    is what `variants` reads, and it names the catalog's largest families by instantiations."""
    presets = json.loads((ROOT / "CMakePresets.json").read_text(encoding="utf-8"))
    (mixed,) = [p for p in presets["configurePresets"] if p["name"] == "mixed"]
    listed = tuple(mixed["cacheVariables"]["METAL_JIT_KERNELS"].split(";"))
    assert mixed_jit_families(project_source_dir()) == listed
    counts = Counter(inst.family for inst in load_catalog().expand())
    assert set(listed) == {name for name, _ in counts.most_common(len(listed))}
    assert mixed["cacheVariables"]["METAL_JIT"] == "OFF" and 0 < len(listed) < len(counts)


def test_mixed_preset_missing_or_malformed_is_one_error(tmp_path: Path) -> None:
    with pytest.raises(BuilderError, match=r"CMakePresets\.json: no readable 'mixed' preset"):
        mixed_jit_families(tmp_path)
    presets = {"configurePresets": [{"name": "jit-on", "cacheVariables": {"METAL_JIT": "ON"}}]}
    (tmp_path / "CMakePresets.json").write_text(json.dumps(presets))
    with pytest.raises(BuilderError, match="no readable 'mixed' preset"):
        mixed_jit_families(tmp_path)
    presets["configurePresets"].append(
        {"name": "mixed", "cacheVariables": {"METAL_JIT_KERNELS": "unary;;copy"}}
    )
    (tmp_path / "CMakePresets.json").write_text(json.dumps(presets))
    assert mixed_jit_families(tmp_path) == ("unary", "copy")
