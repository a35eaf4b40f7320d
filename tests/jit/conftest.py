"""Fixtures for the JIT tests: a small fake kernel tree, and real host-library builds with CMake
and Ninja (the same ``cmake/MetalJit.cmake`` the project build uses) in temporary directories."""

from __future__ import annotations

import shutil
import subprocess
import sys
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from pathlib import Path

import pytest
from support.shared import shared_folder

from builder.cmake_build.cmake import find_tool
from builder.kernels import load_catalog
from builder.resources import cmake_dir, metal_src_dir

# Families built by most library tests: small, and together they share common headers.
FAMILIES = ("unary", "softmax", "arange")
ALL_FAMILIES = tuple(load_catalog().families)


@dataclass(frozen=True)
class JitBuild:
    """A configured and built test project: where things are, and how to build again."""

    build_dir: Path
    target: str

    @property
    def library(self) -> Path:
        suffix = ".dylib" if sys.platform == "darwin" else ".so"
        return self.build_dir / f"lib{self.target}{suffix}"

    @property
    def gen_dir(self) -> Path:
        return self.build_dir / self.target

    def ninja(self, *args: str) -> subprocess.CompletedProcess[str]:
        return subprocess.run(
            [find_tool("ninja"), "-C", str(self.build_dir), *args],
            capture_output=True,
            text=True,
            check=False,
        )


def _project(root: Path, source_dir: Path, families: Sequence[str], options: str) -> Path:
    root.mkdir(parents=True, exist_ok=True)
    fams = " ".join(families)
    (root / "CMakeLists.txt").write_text(
        "cmake_minimum_required(VERSION 3.25)\n"
        "project(jit_test LANGUAGES CXX)\n"
        f'list(APPEND CMAKE_MODULE_PATH "{cmake_dir().as_posix()}")\n'
        "include(MetalJit)\n"
        f'metallib_add_jit_library(mbjit SOURCE_DIR "{source_dir.as_posix()}"\n'
        f'  FAMILIES {fams} {options} PYTHON "{Path(sys.executable).as_posix()}")\n',
        encoding="utf-8",
    )
    return root


def build_jit(
    root: Path,
    families: Sequence[str] = FAMILIES,
    *,
    options: str = "",
    source_dir: Path | None = None,
    check: bool = True,
) -> tuple[JitBuild, subprocess.CompletedProcess[str]]:
    """Configure and build ``<root>/build``; fails the test on a build error unless check=False."""
    project = _project(root / "src", source_dir or metal_src_dir(), families, options)
    build_dir = root / "build"
    configure = subprocess.run(
        [
            find_tool("cmake"),
            "-S",
            str(project),
            "-B",
            str(build_dir),
            "-G",
            "Ninja",
            f"-DCMAKE_MAKE_PROGRAM={find_tool('ninja')}",
            "-DCMAKE_BUILD_TYPE=Release",
        ],
        capture_output=True,
        text=True,
        check=False,
    )
    build = JitBuild(build_dir, "mbjit")
    if not check and configure.returncode != 0:
        return build, configure
    assert configure.returncode == 0, configure.stdout + configure.stderr
    result = build.ninja()
    if check:
        assert result.returncode == 0, result.stdout + result.stderr
    return build, result


def _shared_build(
    factory: pytest.TempPathFactory, name: str, families: Sequence[str], options: str = ""
) -> JitBuild:
    """A build the tests only read, made once per run whatever the number of workers."""
    folder = shared_folder(factory, name, lambda root: build_jit(root, families, options=options))
    return JitBuild(folder / "build", "mbjit")


@pytest.fixture(scope="session")
def jit_build(tmp_path_factory: pytest.TempPathFactory) -> JitBuild:
    """The standard test library: FAMILIES, uncompressed, deduplicated."""
    return _shared_build(tmp_path_factory, "jit-plain", FAMILIES)


@pytest.fixture(scope="session")
def jit_build_compressed(tmp_path_factory: pytest.TempPathFactory) -> JitBuild:
    """Every catalog family, with COMPRESS (the smallest configuration)."""
    return _shared_build(tmp_path_factory, "jit-z", ALL_FAMILIES, "COMPRESS")


@pytest.fixture
def kernel_tree(tmp_path: Path) -> Callable[[dict[str, str]], Path]:
    """``kernel_tree({"rel/path.h": text, ...})`` writes files under a fresh directory."""

    def make(files: dict[str, str]) -> Path:
        root = tmp_path / "tree"
        for rel, text in files.items():
            path = root / rel
            path.parent.mkdir(parents=True, exist_ok=True)
            path.write_text(text, encoding="utf-8")
        return root

    return make


@pytest.fixture
def tree_copy(tmp_path: Path) -> Path:
    """A private copy of the bundled kernel tree, to break or touch."""
    return Path(shutil.copytree(metal_src_dir(), tmp_path / "metal_src"))
