"""Synthetic metallibs built with the project's own writer, and a small real one cut from mlx."""

from __future__ import annotations

import hashlib
from collections.abc import Callable
from pathlib import Path

import pytest
from synthetic import synthetic_parts

from builder.metallib import library_bytes
from builder.subsets.slim import slim_file


@pytest.fixture
def synthetic_bytes() -> Callable[..., bytes]:
    """Factory for the bytes of a synthetic library (see ``synthetic_parts``)."""
    return lambda *args, **kwargs: library_bytes(synthetic_parts(*args, **kwargs))


@pytest.fixture(scope="session")
def small_real_metallib(
    mlx_metallib: Callable[[str, str], Path], tmp_path_factory: pytest.TempPathFactory
) -> bytes:
    """A few dozen real functions of mlx-metal 0.32.0 (reflection list and UUID present), as
    bytes."""
    source = mlx_metallib("0.32.0", "macosx_14_0_arm64")
    out = tmp_path_factory.mktemp("real") / "small.metallib"
    slim_file(source, out, keep=["v_copy*", "vv_Add*"])
    return out.read_bytes()


def sha256(data: bytes | memoryview) -> str:
    return hashlib.sha256(data).hexdigest()
