"""Fixtures for the discovery tests: MLX's real kernel headers (mlx-metal 0.32.0, extracted
once into the tool's cache) and the MLX-style entry files in tests/data/mlx_style."""

from __future__ import annotations

import shutil
from pathlib import Path

import pytest
from kernels.discovery.mlx_tree import DATA, MLX_PLATFORM, MLX_VERSION, extract_kernel_headers

from builder.size import wheels

_failure: list[str] = []


@pytest.fixture(scope="session")
def mlx_headers() -> Path:
    """The include root (holding ``mlx/backend/metal/kernels/``) of mlx-metal 0.32.0."""
    if _failure:
        pytest.skip(_failure[0])
    try:
        wheel = wheels.download_wheel("mlx-metal", MLX_VERSION, MLX_PLATFORM)
    except wheels.DownloadError as exc:
        _failure.append(f"PACKAGE INDEX UNREACHABLE, real-data test skipped: {exc}")
        pytest.skip(_failure[0])
    dest = wheels.cache_dir() / "kernel-headers" / wheel.name.removesuffix(".whl")
    return extract_kernel_headers(wheel, dest)


@pytest.fixture
def mlx_style() -> Path:
    """The MLX-style entry files (tests/data/mlx_style)."""
    return DATA


@pytest.fixture
def tree_copy(tmp_path: Path) -> Path:
    """A writable copy of the MLX-style tree (for metallib.toml and broken-file tests)."""
    target = tmp_path / "tree"
    shutil.copytree(DATA, target)
    return target
