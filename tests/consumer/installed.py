"""The installed package's CMake folder, as a user gets it (``metallib-builder --cmake-dir``), and
what a configured consumer's cache holds; building one."""

from __future__ import annotations

import re
import shutil
import subprocess
import sys
from pathlib import Path

__all__ = ["cache_entries", "cmake_dir", "configure_command", "run_ninja"]


def cmake_dir() -> Path:
    """What the console script installed beside this interpreter prints for ``--cmake-dir``."""
    script = shutil.which("metallib-builder", path=str(Path(sys.executable).parent))
    assert script, f"no metallib-builder script beside {sys.executable}: is the package installed?"
    done = subprocess.run([script, "--cmake-dir"], capture_output=True, text=True, check=False)
    assert done.returncode == 0, done.stderr
    return Path(done.stdout.strip())


_ENTRY = re.compile(r"^([^#/][^:=]*):[A-Z]+=(.*)$")


def cache_entries(build: Path) -> dict[str, str]:
    """Every entry of ``build/CMakeCache.txt`` (INTERNAL ones too), name to value."""
    text = (build / "CMakeCache.txt").read_text(encoding="utf-8")
    return {m[1]: m[2] for m in map(_ENTRY.match, text.splitlines()) if m}


def configure_command(src: Path, build: Path) -> list[str]:
    """``cmake -S src -B build`` for Ninja, with the venv's CMake and Ninja (add the -D's)."""
    from builder.cmake_build.cmake import find_tool

    ninja = find_tool("ninja")
    return [find_tool("cmake"), "-S", str(src), "-B", str(build), "-G", "Ninja",
            f"-DCMAKE_MAKE_PROGRAM={ninja}"]  # fmt: skip


def run_ninja(build: Path, env: dict[str, str]) -> str:
    """Build ``build`` with the venv's Ninja; fail the test on a build error. Ninja's output."""
    from builder.cmake_build.cmake import find_tool

    done = subprocess.run(
        [find_tool("ninja"), "-C", str(build)], capture_output=True, text=True, check=False, env=env
    )
    assert done.returncode == 0, done.stdout + done.stderr
    return done.stdout
