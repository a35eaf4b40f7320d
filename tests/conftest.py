"""Shared fixtures: real metallibs from mlx-metal macOS wheels, downloaded once and cached.

The wheels are cached outside the repository (see ``builder.inputs.wheels.cache_dir``). When the package
index cannot be reached the tests that need them are skipped with a loud reason.
"""

from __future__ import annotations

import os
import sysconfig
from collections.abc import Callable
from pathlib import Path

import pytest
from mlx_tree import DATA, MLX_PLATFORM, MLX_VERSION, extract_kernel_headers

from builder.inputs import wheels

# (version, platform) pairs the format tests cover: both writer generations under format 2.7
# (0.28-0.31 without a reflection list or UUID; 0.32.0 with both) and format 2.9 (macOS 26).
OLD_GENERATION = ("0.30.0", "macosx_14_0_arm64")
NEW_GENERATION = ("0.32.0", "macosx_14_0_arm64")
FORMAT_29 = ("0.32.0", "macosx_26_0_arm64")

_failures: dict[tuple[str, str], str] = {}

# The README runs the tests as `.venv/bin/python -m pytest` without activating the venv; its
# scripts (metallib-builder, cmake, ninja from the package index) must be on PATH all the same,
# as they would be for a user who activated it.
os.environ["PATH"] = os.pathsep.join([sysconfig.get_path("scripts"), os.environ.get("PATH", "")])


def _fetch(version: str, platform: str) -> Path:
    key = (version, platform)
    if key in _failures:
        pytest.skip(_failures[key])
    try:
        paths = wheels.metallibs_from_spec(f"mlx-metal=={version}", platform)
    except wheels.DownloadError as exc:
        _failures[key] = f"PACKAGE INDEX UNREACHABLE, real-data test skipped: {exc}"
        pytest.skip(_failures[key])
    assert len(paths) == 1, paths
    return paths[0]


@pytest.fixture(scope="session")
def mlx_metallib() -> Callable[[str, str], Path]:
    """Factory: ``mlx_metallib("0.30.0", "macosx_14_0_arm64")`` -> cached path of mlx.metallib."""
    return _fetch


_header_failure: list[str] = []


@pytest.fixture(scope="session")
def mlx_headers() -> Path:
    """The include root (holding ``mlx/backend/metal/kernels/``) of mlx-metal 0.32.0."""
    if _header_failure:
        pytest.skip(_header_failure[0])
    try:
        wheel = wheels.download_wheel("mlx-metal", MLX_VERSION, MLX_PLATFORM)
    except wheels.DownloadError as exc:
        _header_failure.append(f"PACKAGE INDEX UNREACHABLE, real-data test skipped: {exc}")
        pytest.skip(_header_failure[0])
    dest = wheels.cache_dir() / "kernel-headers" / wheel.name.removesuffix(".whl")
    return extract_kernel_headers(wheel, dest)


@pytest.fixture
def mlx_style() -> Path:
    """The MLX-style entry files (tests/data/mlx_style)."""
    return DATA




def pytest_collection_finish(session: pytest.Session) -> None:
    """A whole-suite run must collect every ``test_*.py`` under tests/.

    pytest silently skips folders it thinks are not tests (``build``, ``venv``, ``dist``, dot
    folders: its ``norecursedirs`` default), which once kept 26 tests out of CI unnoticed.
    """
    tests = Path(__file__).resolve().parent
    option = session.config.option
    whole = [Path(a).resolve() for a in session.config.args] == [tests]
    if not whole or option.keyword or option.markexpr or option.deselect:
        return  # a partial run is the user's choice
    found = {Path(str(item.path)).resolve() for item in session.items}
    missed = sorted(p for p in tests.rglob("test_*.py") if p.resolve() not in found)
    if missed:
        names = ", ".join(str(p.relative_to(tests)) for p in missed)
        raise pytest.UsageError(f"test files that pytest did not collect: {names}")
