"""Helpers for the size tests: synthetic metallibs written by the project's own writer."""

from __future__ import annotations

import hashlib
import zipfile
from collections.abc import Callable, Sequence
from pathlib import Path

import pytest

from builder.inputs import wheels
from builder.metallib import library_bytes, new_function, new_library

Spec = Sequence[tuple[str, int]]


def synthetic_bytes(
    functions: Spec, *, reflection: bool = True, install_name: str | None = None
) -> bytes:
    """A metallib with one function per (name, bitcode size); contents derived from the name so
    the same spec always gives the same bytes."""
    parts = []
    for name, size in functions:
        seed = hashlib.sha256(name.encode()).digest()
        bitcode = (seed * (size // len(seed) + 1))[:size]
        refl = seed[: 8 + len(name) % 9] if reflection else None
        parts.append(new_function(name, bitcode, reflection=refl))
    return library_bytes(new_library(parts, install_name=install_name))


@pytest.fixture
def write_metallib(tmp_path: Path) -> Callable[..., Path]:
    """Factory: ``write_metallib("a.metallib", [("v_copyfloat32float32", 400), ...])`` -> path."""

    def write(name: str, functions: Spec, **kwargs: object) -> Path:
        path = tmp_path / name
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_bytes(synthetic_bytes(functions, **kwargs))  # type: ignore[arg-type]
        return path

    return write


def mlx_wheel(version: str, platform: str = "macosx_14_0_arm64") -> Path:
    """A cached mlx-metal wheel (downloaded on first use; skipped loudly when unreachable)."""
    try:
        return wheels.download_wheel("mlx-metal", version, platform)
    except wheels.DownloadError as exc:
        pytest.skip(f"PACKAGE INDEX UNREACHABLE, real-data test skipped: {exc}")


def zip_members(wheel: Path) -> dict[str, tuple[int, int]]:
    """Independent of the tool: name -> (size, compressed size), from the zip directory."""
    with zipfile.ZipFile(wheel) as archive:
        return {
            i.filename: (i.file_size, i.compress_size) for i in archive.infolist() if not i.is_dir()
        }


@pytest.fixture(scope="session")
def download_report_28(tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, Path]:
    """(the mlx-metal 0.28.0 wheel, its ``report --download --format json`` saved), run once."""
    from builder.cli import main

    wheel = mlx_wheel("0.28.0")
    out = tmp_path_factory.mktemp("download") / "r28.json"
    assert main(["report", str(wheel), "--download", "--format", "json", "-o", str(out)]) in (
        0,
        None,
    )
    return wheel, out
