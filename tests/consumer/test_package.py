"""The CMake package as consumers expect one to behave. ``find_package(MetallibBuilder 0.1
REQUIRED)`` defines functions and imported targets and nothing else: no cache variable, no program
run. Using the functions leaves no ``METAL_*`` cache variable. ``CMAKE_OSX_DEPLOYMENT_TARGET``
reaches the compile and link lines, and a user's metallib gets an install rule with a component.
Each project
is written here and finds the installed package (``metallib-builder --cmake-dir``); the Metal
compiler is the stand-in (tests/cmake_build/standin/), which records every call's argv.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest
from cmake_build.conftest import METAL, cmake_exe
from consumer.installed import cache_entries, cmake_dir, configure_command, run_ninja

import builder
from builder.metallib import open_metallib

pytestmark = pytest.mark.cmake

KERNEL = "kernel void {name}(device float* x [[buffer(0)]]) {{ x[0] = 1.0f; }}\n"
CHECK_FOUND = """\
foreach(command metallib_add_metallib metallib_embed_headers)
  if(NOT COMMAND ${command})
    message(FATAL_ERROR "no ${command}")
  endif()
endforeach()
if(NOT TARGET MetallibBuilder::metal_jit)
  message(FATAL_ERROR "no MetallibBuilder::metal_jit")
endif()
"""
FIND = "find_package(MetallibBuilder 0.1 REQUIRED)\n"
# What a config may not do at find time (it may define functions and targets).
RUNS = {"execute_process", "find_package", "find_program", "enable_language", "try_compile"}


class Project:
    """A consumer project written by the test, its build folder and the stand-in's log."""

    def __init__(self, root: Path, body: str, languages: str = "NONE") -> None:
        self.src = root / "src"
        self.build = root / "build"
        self.log = root / "standin.log"
        (self.src / "kernels").mkdir(parents=True)
        for name in ("a", "b"):
            (self.src / "kernels" / f"{name}.metal").write_text(KERNEL.format(name=name))
        (self.src / "include").mkdir()
        (self.src / "include" / "ops.h").write_text(
            "inline float twice(float x) { return 2 * x; }\n"
        )
        (self.src / "CMakeLists.txt").write_text(
            "cmake_minimum_required(VERSION 3.25)\n"
            f"project(consumer LANGUAGES {languages})\n{body}",
            encoding="utf-8",
        )

    def configure(
        self, *args: str, env: dict[str, str] | None = None, ok: bool = True
    ) -> subprocess.CompletedProcess[str]:
        """Configure; with ``ok``, fail the test unless it succeeds."""
        done = subprocess.run(
            [
                *configure_command(self.src, self.build),
                f"-DMetallibBuilder_DIR={cmake_dir()}",
                *args,
            ],
            capture_output=True,
            text=True,
            check=False,
            env=env or self.env(),
        )
        assert done.returncode == 0 or not ok, done.stdout + done.stderr
        return done

    def env(self) -> dict[str, str]:
        return {**os.environ, "METAL_STANDIN_LOG": str(self.log)}

    def ninja(self) -> None:
        run_ninja(self.build, self.env())

    def calls(self, mode: str, output: str) -> list[dict[str, Any]]:
        """The stand-in's calls of one mode whose output ends with ``output``."""
        rows = [json.loads(line) for line in self.log.read_text().splitlines()]
        return [r for r in rows if r["mode"] == mode and r["output"].endswith(output)]


def test_finding_the_package_defines_functions_and_targets_only(tmp_path: Path) -> None:
    """No Python run (a logging python3 first on PATH stays silent), no command that runs or
    finds anything in the package's files, and the same cache as a project that does not look
    for the package, but for MetallibBuilder_DIR."""
    found = Project(tmp_path / "found", FIND + CHECK_FOUND)
    plain = Project(tmp_path / "plain", "")
    bin_dir = tmp_path / "bin"
    bin_dir.mkdir()
    ran = tmp_path / "python-ran.log"
    wrapper = bin_dir / "python3"
    wrapper.write_text(f'#!/bin/sh\necho "$*" >> "{ran}"\nexec "{sys.executable}" "$@"\n')
    wrapper.chmod(0o755)
    env = {k: v for k, v in os.environ.items() if k not in {"VIRTUAL_ENV", "PYTHONPATH"}}
    env["PATH"] = f"{bin_dir}{os.pathsep}{env.get('PATH', '')}"
    trace = tmp_path / "trace.json"
    found.configure(
        "--trace-expand", "--trace-format=json-v1", f"--trace-redirect={trace}", env=env
    )
    plain.configure(env=env)

    assert not ran.exists(), ran.read_text()
    package = str(cmake_dir())
    calls = [json.loads(line) for line in trace.read_text().splitlines()[1:]]
    mine = [c for c in calls if c["file"].startswith(package)]
    assert {Path(c["file"]).name for c in mine} >= {
        "MetallibBuilderConfig.cmake",
        "MetalAot.cmake",
        "MetallibEmbed.cmake",
        "MetallibBuilderTargets.cmake",
    }
    assert not RUNS & {c["cmd"] for c in mine}
    assert not [c for c in mine if "CACHE" in c.get("args", [])]
    added = set(cache_entries(found.build)) - set(cache_entries(plain.build))
    assert added == set()  # MetallibBuilder_DIR is the -D both got


def test_another_major_version_is_refused_cleanly(tmp_path: Path) -> None:
    project = Project(tmp_path, "find_package(MetallibBuilder 1.0 REQUIRED)\n")
    done = project.configure(ok=False)
    said = " ".join(done.stderr.split())
    assert done.returncode != 0
    assert 'compatible with requested version "1.0"' in said, said
    config = cmake_dir() / "MetallibBuilderConfig.cmake"
    assert f"{config}, version: {builder.__version__}" in said, said


def test_the_functions_write_no_metal_cache_variable(tmp_path: Path) -> None:
    """After metallib_add_metallib and metallib_embed_headers: the cache holds what the user gave
    (-DMETALLIB_COMPILER) and FindPython3's entries (the first embed call looks for Python),
    nothing named METAL_*, and none of the package's own."""
    body = (
        FIND + "metallib_add_metallib(kernels SOURCES kernels/a.metal kernels/b.metal)\n"
        "add_library(preambles STATIC)\n"
        "metallib_embed_headers(preambles NAMESPACE app HEADERS include/ops.h\n"
        "  INCLUDE_DIRECTORIES include)\n"
    )
    used = Project(tmp_path / "used", body, languages="CXX")
    plain = Project(tmp_path / "plain", "", languages="CXX")
    used.configure(f"-DMETALLIB_COMPILER={METAL}")
    plain.configure()
    used.ninja()

    cache = cache_entries(used.build)
    assert [name for name in cache if name.startswith("METAL_")] == []
    added = set(cache) - set(cache_entries(plain.build)) - {"MetallibBuilder_DIR"}
    assert "METALLIB_COMPILER" in added  # the user's -D
    rest = added - {"METALLIB_COMPILER"}
    assert rest and all("Python3" in name for name in rest), sorted(rest)
    with open_metallib(used.build / "kernels.metallib") as lib:
        assert {fn.name for fn in lib.functions} == {"a", "b"}


def test_cmake_osx_deployment_target_reaches_compile_and_link(tmp_path: Path) -> None:
    """Without DEPLOYMENT_TARGET the caller's CMAKE_OSX_DEPLOYMENT_TARGET is the version flag of
    every compile and of the link (and so the library's); DEPLOYMENT_TARGET wins over it."""
    body = (
        FIND + "metallib_add_metallib(follows SOURCES kernels/a.metal)\n"
        "metallib_add_metallib(pinned SOURCES kernels/b.metal DEPLOYMENT_TARGET 14.0)\n"
    )
    project = Project(tmp_path / "set", body)
    project.configure(f"-DMETALLIB_COMPILER={METAL}", "-DCMAKE_OSX_DEPLOYMENT_TARGET=13.3")
    project.ninja()
    for name, air, version in (
        ("follows", "kernels/a.air", "13.3"),
        ("pinned", "kernels/b.air", "14.0"),
    ):
        (compile_,) = project.calls("compile", f"{name}.air/{air}")
        (link,) = project.calls("link", f"{name}.metallib")
        flags = [a for a in compile_["argv"] + link["argv"] if "version-min" in a]
        assert flags == [f"-mmacosx-version-min={version}"] * 2, (name, flags)
        with open_metallib(project.build / f"{name}.metallib") as lib:
            assert lib.header.deployment_target == tuple(map(int, version.split(".")))

    unset = Project(tmp_path / "unset", body)
    unset.configure(f"-DMETALLIB_COMPILER={METAL}")
    unset.ninja()
    (compile_,) = unset.calls("compile", "follows.air/kernels/a.air")
    assert not [a for a in compile_["argv"] if "version-min" in a]


def test_a_users_metallib_installs_as_its_component(tmp_path: Path) -> None:
    body = (
        FIND + "metallib_add_metallib(app SOURCES kernels/a.metal\n"
        "  INSTALL DESTINATION share/app COMPONENT kernels)\n"
        "metallib_add_metallib(extra SOURCES kernels/b.metal\n"
        "  INSTALL DESTINATION share/extra COMPONENT extras)\n"
    )
    project = Project(tmp_path, body)
    project.configure(f"-DMETALLIB_COMPILER={METAL}")
    project.ninja()
    prefix = tmp_path / "prefix"
    done = subprocess.run(
        [cmake_exe(), "--install", str(project.build), "--component", "kernels",
         "--prefix", str(prefix)],
        capture_output=True,
        text=True,
        check=False,
    )  # fmt: skip
    assert done.returncode == 0, done.stdout + done.stderr
    installed = sorted(p.relative_to(prefix).as_posix() for p in prefix.rglob("*") if p.is_file())
    assert installed == ["share/app/app.metallib"]
    assert (prefix / "share/app/app.metallib").read_bytes() == (
        project.build / "app.metallib"
    ).read_bytes()


def test_install_without_a_destination_is_one_message(tmp_path: Path) -> None:
    project = Project(
        tmp_path,
        FIND + "metallib_add_metallib(app SOURCES kernels/a.metal INSTALL COMPONENT kernels)\n",
    )
    done = project.configure(f"-DMETALLIB_COMPILER={METAL}", ok=False)
    said = " ".join(done.stderr.split())
    assert done.returncode != 0
    assert "metallib_add_metallib(app): INSTALL takes DESTINATION <dir> [COMPONENT" in said, said
