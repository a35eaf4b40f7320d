"""``build`` and ``variants`` end to end: the pre-configure check, progress, sizes, variants."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]


def _cli(*args: str, env: dict[str, str] | None = None) -> subprocess.CompletedProcess[str]:
    base = {k: v for k, v in os.environ.items() if k != "METAL_COMPILER"}
    base["PATH"] = os.pathsep.join(
        p for p in base.get("PATH", "").split(os.pathsep) if not (Path(p) / "xcrun").exists()
    )
    return subprocess.run(
        [sys.executable, "-m", "builder", *args], cwd=ROOT, capture_output=True, text=True, check=False,
        env={**base, "NO_COLOR": "1", **(env or {})},
    )  # fmt: skip


def test_aot_without_compiler_fails_before_configuring(tmp_path: Path) -> None:
    build_dir = tmp_path / "b"
    done = _cli("build", "--no-jit", "--kernels", "arange", "--build-dir", str(build_dir))
    assert done.returncode == 2
    assert done.stderr.count("\n") == 1, done.stderr  # one line
    for part in ("Metal compiler", "xcrun not found", "macOS with Xcode or the Metal toolchain",
                 "METAL_COMPILER=/path", "--metal-compiler", "--jit"):  # fmt: skip
        assert part in done.stderr
    assert not build_dir.exists()


def test_jit_without_compiler_names_the_entry_files_that_stay_aot(
    tmp_path: Path, mlx_tree: Path
) -> None:
    """--jit on a tree whose entry files write kernel templates themselves still needs the
    Metal compiler for those: the one line says which and why."""
    build_dir = tmp_path / "b"
    done = _cli("build", "--jit", "--source-dir", str(mlx_tree), "--build-dir", str(build_dir))
    assert done.returncode == 2 and done.stderr.count("\n") == 1, done.stderr
    assert "Even with --jit, these stay AOT: plain_kernels.metal (it writes its own kernel " \
           "templates (copy_values)" in done.stderr  # fmt: skip
    assert "tiles/tile_copy.metal (it writes its own kernel templates (tile_copy)" in done.stderr
    assert not build_dir.exists()


def test_mixed_without_compiler_fails_too(tmp_path: Path) -> None:
    done = _cli("build", "--kernels", "arange,copy", "--jit-kernels", "copy",
                "--build-dir", str(tmp_path / "b"))  # fmt: skip
    assert done.returncode == 2 and "Metal compiler" in done.stderr


def test_bad_selection_is_exit_2(tmp_path: Path) -> None:
    done = _cli("build", "--jit", "--kernels", "nope", "--build-dir", str(tmp_path / "b"))
    assert done.returncode == 2 and "unknown kernel family 'nope'" in done.stderr
    done = _cli("build", "--kernels", "arange", "--jit-kernels", "copy",
                "--build-dir", str(tmp_path / "b"))  # fmt: skip
    assert done.returncode == 2 and "not among the selected families" in done.stderr
    assert not (tmp_path / "b").exists()


@pytest.mark.cmake
def test_cmake_alone_stops_with_the_same_advice(tmp_path: Path) -> None:
    from builder.cmake_build.cmake import find_tool

    env = {k: v for k, v in os.environ.items() if k != "METAL_COMPILER"}
    done = subprocess.run(
        [find_tool("cmake"), "-S", str(ROOT), "-B", str(tmp_path / "b"), "-G", "Ninja",
         f"-DCMAKE_MAKE_PROGRAM={find_tool('ninja')}", f"-DPython3_EXECUTABLE={sys.executable}",
         "-DMETAL_JIT=OFF", "-DMETAL_KERNELS=arange"],
        capture_output=True, text=True, env=env, check=False,
    )  # fmt: skip
    assert done.returncode != 0
    text = " ".join((done.stdout + done.stderr).split())
    assert "needs macOS with Xcode or the Metal toolchain" in text
    assert "-DMETAL_COMPILER=/path/to/metal" in text


@pytest.mark.cmake
def test_build_aot_with_standin(tmp_path: Path, standin_tools: Path) -> None:
    metal = standin_tools
    build_dir = tmp_path / "b"
    done = _cli("build", "--kernels", "unary,arange", "--dtypes", "float32", "--build-dir",
                str(build_dir), "--metal-compiler", str(metal), "--json", "-j", "2")  # fmt: skip
    assert done.returncode == 0, done.stderr
    assert "[1/" in done.stderr and "Linking mlx.metallib" in done.stderr  # plain progress lines
    sizes = json.loads(done.stdout)
    assert sizes["metallib_bytes"] == (build_dir / "mlx.metallib").stat().st_size
    fams = {f["name"]: f for f in sizes["families"]}
    assert set(fams) == {"unary", "arange"} and all(f["mode"] == "aot" for f in fams.values())
    assert (
        sum(f["metallib_bytes"] for f in fams.values()) + sizes["metallib_overhead_bytes"]
        == sizes["metallib_bytes"]
    )
    # a second run configures nothing and builds nothing
    again = _cli("build", "--kernels", "unary,arange", "--dtypes", "float32", "--build-dir",
                 str(build_dir), "--metal-compiler", str(metal))  # fmt: skip
    assert again.returncode == 0, again.stderr
    assert "Configuring" not in again.stderr and "(0 build steps)" in again.stderr
    assert "metallib: " in again.stdout and "manifest: " in again.stdout


@pytest.mark.cmake
def test_build_failure_shows_the_failing_command(
    tmp_path: Path, kernel_tree: Path, standin_tools: Path
) -> None:
    header = kernel_tree / "arange" / "arange.h"
    header.write_text('#include "common/missing.h"\n' + header.read_text())
    done = _cli("build", "--kernels", "arange", "--source-dir", str(kernel_tree), "--build-dir",
                str(tmp_path / "b"), "--metal-compiler", str(standin_tools))  # fmt: skip
    assert done.returncode == 1
    assert "FAILED:" in done.stderr and "common/missing.h" in done.stderr


@pytest.mark.cmake
@pytest.mark.slow
def test_variants_without_compiler_build_jit_only(tmp_path: Path, cxx_available: None) -> None:
    done = _cli("variants", "--kernels", "arange,softmax", "--build-dir", str(tmp_path / "v"))
    assert done.returncode == 0, done.stderr
    assert "jit-off: not built: no Metal compiler (xcrun not found) — needs macOS with Xcode" in (
        done.stdout
    )
    assert (tmp_path / "v" / "jit-on" / "manifest.json").is_file()
    assert not (tmp_path / "v" / "jit-off").exists()


@pytest.mark.cmake
@pytest.mark.slow
def test_variants_with_standin_side_by_side(
    tmp_path: Path, standin_tools: Path, cxx_available: None
) -> None:
    done = _cli("variants", "--kernels", "arange,copy,softmax", "--dtypes", "float32",
                "--build-dir", str(tmp_path / "v"), "--metal-compiler", str(standin_tools),
                "--json")  # fmt: skip
    assert done.returncode == 0, done.stderr
    data = json.loads(done.stdout)
    built = {v["name"]: v for v in data["variants"]}
    assert set(built) == {"jit-on", "jit-off", "mixed"} and all(v["built"] for v in built.values())
    modes = {f["name"]: f["mode"] for f in built["mixed"]["sizes"]["families"]}
    assert modes == {"arange": "aot", "copy": "jit", "softmax": "aot"}
    assert built["jit-on"]["sizes"]["metallib"] is None
    assert built["jit-off"]["sizes"]["host_library"] is None
