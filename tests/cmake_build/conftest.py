"""Fixtures for the build tests: a private kernel tree, the stand-in Metal tools, CMake + Ninja.

The stand-ins (tests/cmake_build/standin/) record each call in $METAL_STANDIN_LOG; ``StandinBuild``
configures the project's top-level CMakeLists.txt against them and reads that log back.
"""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import pytest

from builder.kernels.compiler import find_compiler

ROOT = Path(__file__).resolve().parents[2]
STANDIN = Path(__file__).resolve().parent / "standin"
METAL = STANDIN / "metal-standin"
METALLIB = STANDIN / "metallib-standin"


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


@dataclass
class StandinBuild:
    """One build directory configured against the stand-in compiler and linker."""

    build_dir: Path
    kernel_dir: Path
    log: Path
    defines: dict[str, str] = field(default_factory=dict)

    @property
    def env(self) -> dict[str, str]:
        return {**os.environ, "METAL_STANDIN_LOG": str(self.log)}

    def configure(self) -> subprocess.CompletedProcess[str]:
        args = [
            cmake_exe(), "-S", str(ROOT), "-B", str(self.build_dir), "-G", "Ninja",
            f"-DCMAKE_MAKE_PROGRAM={ninja_exe()}", f"-DPython3_EXECUTABLE={sys.executable}",
            f"-DMETAL_COMPILER={METAL}", f"-DMETALLIB_LINKER={METALLIB}",
            f"-DMETAL_SOURCE_DIR={self.kernel_dir}",
            *(f"-D{k}={v}" for k, v in self.defines.items()),
        ]  # fmt: skip
        done = subprocess.run(args, env=self.env, capture_output=True, text=True, check=False)
        assert done.returncode == 0, done.stdout + done.stderr
        return done

    def ninja(self, *extra: str, check: bool = True) -> subprocess.CompletedProcess[str]:
        done = subprocess.run(
            [ninja_exe(), "-C", str(self.build_dir), *extra],
            env=self.env, capture_output=True, text=True, check=False,
        )  # fmt: skip
        if check:
            assert done.returncode == 0, done.stdout + done.stderr
        return done

    def calls(self, tool: str | None = None) -> list[dict[str, Any]]:
        if not self.log.is_file():
            return []
        rows = [json.loads(line) for line in self.log.read_text().splitlines()]
        return [r for r in rows if tool is None or r["tool"] == tool]

    def reset_log(self) -> None:
        self.log.unlink(missing_ok=True)

    def compiled_sources(self) -> set[str]:
        return {Path(c["source"]).name for c in self.calls("metal")}

    def generated_sources(self) -> list[Path]:
        return sorted((self.build_dir / "metal_aot" / "src").glob("*.metal"))

    def manifest(self) -> dict[str, Any]:
        data: dict[str, Any] = json.loads((self.build_dir / "manifest.json").read_text())
        return data


@pytest.fixture
def standin_build(tmp_path: Path, kernel_tree: Path) -> StandinBuild:
    return StandinBuild(tmp_path / "build", kernel_tree, tmp_path / "standin.log")


@pytest.fixture
def standin_tools() -> tuple[Path, Path]:
    """(stand-in metal, stand-in metallib)."""
    return METAL, METALLIB


@pytest.fixture
def cxx_available() -> None:
    """The JIT variant needs a host C++ compiler; scripts/setup.sh installs g++, so a missing one
    fails the test (UsageError naming what was looked for) instead of skipping it."""
    find_compiler()
