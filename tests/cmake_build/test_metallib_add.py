"""``metallib_add_metallib`` in a project of its own: plain .metal files, no catalog, no Python at
configure time (MetalAot.cmake and MetalToolchain.cmake run none)."""

from __future__ import annotations

import json
import os
import subprocess
from pathlib import Path

import pytest

from builder.metallib import open_metallib
from builder.resources import cmake_dir

from .conftest import METAL, cmake_exe, ninja_exe

pytestmark = pytest.mark.cmake

KERNEL = "kernel void {name}(device float* x [[buffer(0)]]) {{ x[0] = SCALE; }}\n"


def _project(root: Path, call: str) -> Path:
    src = root / "src"
    (src / "shaders" / "sub").mkdir(parents=True)
    (src / "shaders" / "common.h").write_text("#define SCALE 2.0f\n")
    for rel, name in (("blur.metal", "blur"), ("sub/blur.metal", "sub_blur")):
        (src / "shaders" / rel).write_text('#include "common.h"\n' + KERNEL.format(name=name))
    (src / "CMakeLists.txt").write_text(
        "cmake_minimum_required(VERSION 3.25)\nproject(consumer LANGUAGES NONE)\n"
        f'list(APPEND CMAKE_MODULE_PATH "{cmake_dir().as_posix()}")\ninclude(MetalAot)\n{call}\n'
    )
    return src


def _build(root: Path, call: str, *defines: str) -> subprocess.CompletedProcess[str]:
    src = _project(root, call)
    env = {**os.environ, "METAL_STANDIN_LOG": str(root / "log")}
    configure = subprocess.run(
        [
            cmake_exe(),
            "-S",
            str(src),
            "-B",
            str(root / "b"),
            "-G",
            "Ninja",
            f"-DCMAKE_MAKE_PROGRAM={ninja_exe()}",
            f"-DMETALLIB_COMPILER={METAL}",
            *defines,
        ],
        capture_output=True,
        text=True,
        check=False,
        env=env,
    )
    if configure.returncode != 0:
        return configure
    return subprocess.run(
        [ninja_exe(), "-C", str(root / "b")], capture_output=True, text=True, check=False, env=env
    )


def test_a_consumer_compiles_plain_metal_files(tmp_path: Path) -> None:
    call = (
        "metallib_add_metallib(shaders SOURCES shaders/blur.metal shaders/sub/blur.metal\n"
        "  SOURCE_ROOT shaders INCLUDE_DIRECTORIES shaders DEFINES FAST=1 STD metal3.1\n"
        "  DEPLOYMENT_TARGET 14.2)"
    )
    done = _build(tmp_path, call)
    assert done.returncode == 0, done.stdout + done.stderr
    with open_metallib(tmp_path / "b" / "shaders.metallib") as lib:
        assert sorted(fn.name for fn in lib.functions) == ["blur", "sub_blur"]
        assert lib.header.deployment_target == (14, 2)
    calls = [json.loads(line) for line in (tmp_path / "log").read_text().splitlines()]
    compiles = [c for c in calls if c["mode"] == "compile"]
    assert sorted(Path(c["output"]).relative_to(tmp_path / "b").as_posix() for c in compiles) == [
        "shaders.air/blur.air",
        "shaders.air/sub/blur.air",
    ]
    for c in compiles:
        assert c["argv"][:7] == [
            "-x",
            "metal",
            "-Wall",
            "-Wextra",
            "-fno-fast-math",
            "-std=metal3.1",
            "-mmacosx-version-min=14.2",
        ]
        assert "-DFAST=1" in c["argv"] and c["headers"] == [str(tmp_path / "src/shaders/common.h")]


def test_flags_alone_means_none_and_clashing_names_are_refused(tmp_path: Path) -> None:
    done = _build(tmp_path / "a", "metallib_add_metallib(s SOURCES shaders/blur.metal FLAGS)")
    assert done.returncode == 0, done.stdout + done.stderr
    (compile_,) = [
        json.loads(x) for x in (tmp_path / "a" / "log").read_text().splitlines() if '"compile"' in x
    ]
    assert compile_["argv"][:3] == ["-x", "metal", "-c"]
    clash = _build(
        tmp_path / "c",
        "metallib_add_metallib(s SOURCES shaders/blur.metal "
        "shaders/sub/blur.metal SOURCE_ROOT shaders/sub)",
    )
    assert clash.returncode != 0 and "two sources would compile to blur.air" in " ".join(
        (clash.stdout + clash.stderr).split()
    )
