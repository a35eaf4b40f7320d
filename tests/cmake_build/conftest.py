"""Fixtures for the build tests: private kernel trees, the stand-in Metal compiler, CMake + Ninja.

The stand-in (tests/cmake_build/standin/) records each call in $METAL_STANDIN_LOG;
``StandinBuild`` configures the project's top-level CMakeLists.txt against it and reads that log
back. ``mlx_tree`` is a private copy of the MLX-style entry files (tests/data/mlx_style) whose
include folder is the real MLX headers of an mlx-metal wheel, copied into the tree (a tree's own
metallib.toml names folders inside the tree only: docs/security.md) under a hidden folder, which
discovery does not walk for entry files or headers of its own.
"""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import pytest
from mlx_tree import DATA
from support.shared import shared_folder

from builder.kernels.bounded_run import find_compiler

ROOT = Path(__file__).resolve().parents[2]


def cli_without_metal(
    *args: str, env: dict[str, str] | None = None
) -> subprocess.CompletedProcess[str]:
    """``metallib-builder ARGS`` from the checkout, with no Metal compiler to find (no
    METAL_COMPILER, no xcrun on PATH), so a build takes the path a Linux machine takes."""
    base = {k: v for k, v in os.environ.items() if k != "METAL_COMPILER"}
    base["PATH"] = os.pathsep.join(
        p for p in base.get("PATH", "").split(os.pathsep) if not (Path(p) / "xcrun").exists()
    )
    return subprocess.run(
        [sys.executable, "-m", "builder", *args],
        cwd=ROOT,
        capture_output=True,
        text=True,
        check=False,
        env={**base, "NO_COLOR": "1", **(env or {})},
    )


STANDIN = Path(__file__).resolve().parent / "standin"
METAL = STANDIN / "metal-standin"
XCRUN_DIR = STANDIN / "xcrun-bin"
DEFAULT_FLAGS = ["-Wall", "-Wextra", "-fno-fast-math"]


def cmake_exe() -> str:
    from builder.cmake_build.cmake import find_tool

    return find_tool("cmake")


def ninja_exe() -> str:
    from builder.cmake_build.cmake import find_tool

    return find_tool("ninja")


@pytest.fixture
def kernel_tree(tmp_path: Path) -> Path:
    """A copy of metal_src/ the test may touch or break."""
    dest = tmp_path / "metal_src"
    shutil.copytree(ROOT / "metal_src", dest)
    return dest


TREE_HEADERS = ".mlx_headers"
"""Where ``copy_mlx_tree`` puts the MLX headers, inside the tree."""


def copy_mlx_tree(dest: Path, mlx_style: Path, mlx_headers: Path) -> Path:
    """Copy the MLX-style entry files to ``dest``, the real headers into ``dest/.mlx_headers``,
    with a metallib.toml naming that folder."""
    shutil.copytree(mlx_style, dest, ignore=shutil.ignore_patterns("*.md"))
    shutil.copytree(mlx_headers, dest / TREE_HEADERS)
    (dest / "metallib.toml").write_text(
        f'[kernels]\ninclude-dirs = ["{TREE_HEADERS}"]\n[build]\nlibrary = "mlx"\n'
    )
    return dest


@pytest.fixture
def mlx_tree(tmp_path: Path, mlx_style: Path, mlx_headers: Path) -> Path:
    """A copy of the MLX-style entry files with a metallib.toml naming the real MLX headers."""
    return copy_mlx_tree(tmp_path / "mlx_style", mlx_style, mlx_headers)


@pytest.fixture(scope="session")
def lay_out_mlx_tree(mlx_headers: Path) -> Callable[[Path], Path]:
    """``lay_out_mlx_tree(dest)`` writes what ``mlx_tree`` is, at ``dest``."""
    return lambda dest: copy_mlx_tree(dest, DATA, mlx_headers)


@dataclass
class StandinBuild:
    """One build directory configured against the stand-in compiler."""

    build_dir: Path
    kernel_dir: Path
    log: Path
    defines: dict[str, str] = field(default_factory=dict)
    path: str | None = None
    """PATH for CMake and Ninja (None: the test process's)."""

    @property
    def env(self) -> dict[str, str]:
        env = {**os.environ, "METAL_STANDIN_LOG": str(self.log)}
        if self.path is not None:
            env["PATH"] = self.path
        return env

    def configure(self, check: bool = True) -> subprocess.CompletedProcess[str]:
        compiler = [] if "METALLIB_COMPILER" in self.defines else [f"-DMETALLIB_COMPILER={METAL}"]
        args = [
            cmake_exe(),
            "-S",
            str(ROOT),
            "-B",
            str(self.build_dir),
            "-G",
            "Ninja",
            f"-DCMAKE_MAKE_PROGRAM={ninja_exe()}",
            f"-DPython3_EXECUTABLE={sys.executable}",
            *compiler,
            f"-DMETALLIB_SOURCE_DIR={self.kernel_dir}",
            *(f"-D{k}={v}" for k, v in self.defines.items()),
        ]
        done = subprocess.run(args, env=self.env, capture_output=True, text=True, check=False)
        if check:
            assert done.returncode == 0, done.stdout + done.stderr
        return done

    def ninja(self, *extra: str, check: bool = True) -> subprocess.CompletedProcess[str]:
        done = subprocess.run(
            [ninja_exe(), "-C", str(self.build_dir), *extra],
            env=self.env,
            capture_output=True,
            text=True,
            check=False,
        )
        if check:
            assert done.returncode == 0, done.stdout + done.stderr
        return done

    def calls(self, mode: str | None = None) -> list[dict[str, Any]]:
        """The stand-in's calls since the last reset: ``compile``, ``link`` or all."""
        if not self.log.is_file():
            return []
        rows = [json.loads(line) for line in self.log.read_text().splitlines()]
        return [r for r in rows if mode is None or r["mode"] == mode]

    def reset_log(self) -> None:
        self.log.unlink(missing_ok=True)

    def compiled_sources(self) -> set[str]:
        """Sources compiled since the last reset, relative to the kernel tree or by file name
        (generated ones)."""
        out = set()
        for call in self.calls("compile"):
            src = Path(call["source"])
            try:
                out.add(src.relative_to(self.kernel_dir.resolve()).as_posix())
            except ValueError:
                out.add(src.name)
        return out

    def generated_sources(self) -> list[Path]:
        return sorted((self.build_dir / "metal_gen").glob("*/*.metal"))

    def manifest(self) -> dict[str, Any]:
        data: dict[str, Any] = json.loads((self.build_dir / "manifest.json").read_text())
        return data


SharedStandin = Callable[[str, Callable[[Path], object], dict[str, str]], StandinBuild]


@pytest.fixture(scope="session")
def shared_standin(tmp_path_factory: pytest.TempPathFactory) -> SharedStandin:
    """``shared_standin(name, lay_out, defines)``: a build configured and built once per run (all
    workers), for the tests that only read it (its log, outputs, manifest); ``lay_out(dest)``
    writes the kernel tree it builds."""

    def get(name: str, lay_out: Callable[[Path], object], defines: dict[str, str]) -> StandinBuild:
        def make(folder: Path) -> None:
            lay_out(folder / "tree")
            build = StandinBuild(
                folder / "build", folder / "tree", folder / "standin.log", dict(defines)
            )
            build.configure()
            build.ninja()

        folder = shared_folder(tmp_path_factory, name, make)
        return StandinBuild(
            folder / "build", folder / "tree", folder / "standin.log", dict(defines)
        )

    return get


@pytest.fixture
def standin_build(tmp_path: Path, kernel_tree: Path) -> StandinBuild:
    return StandinBuild(tmp_path / "build", kernel_tree, tmp_path / "standin.log")


@pytest.fixture
def tree_build(tmp_path: Path, mlx_tree: Path) -> StandinBuild:
    """A build of ``mlx_tree`` (not configured yet)."""
    return StandinBuild(tmp_path / "build", mlx_tree, tmp_path / "standin.log")


@pytest.fixture
def standin_tools() -> Path:
    """The stand-in metal driver (it compiles and links)."""
    return METAL


@pytest.fixture
def cxx_available() -> None:
    """The jit-on preset needs a host C++ compiler; scripts/setup.sh installs g++, so a missing one
    fails the test (UsageError naming what was looked for) instead of skipping it."""
    find_compiler()
