"""Fixtures for the discovery tests (``mlx_headers`` and ``mlx_style`` are in tests/conftest.py)."""

from __future__ import annotations

import shutil
from pathlib import Path

import pytest
from mlx_tree import DATA


@pytest.fixture
def tree_copy(tmp_path: Path) -> Path:
    """A writable copy of the MLX-style tree (for metallib.toml and broken-file tests)."""
    target = tmp_path / "tree"
    shutil.copytree(DATA, target)
    return target
