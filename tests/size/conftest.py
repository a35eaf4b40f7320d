"""Helpers for the size tests: the mlx-metal wheels, their zip directories, a saved download
report."""

from __future__ import annotations

import zipfile
from pathlib import Path

import pytest

from builder.inputs import wheel_cache, wheels


def mlx_wheel(version: str, platform: str = "macosx_14_0_arm64") -> Path:
    """A cached mlx-metal wheel (downloaded on first use; skipped loudly when unreachable)."""
    try:
        return wheels.download_wheel("mlx-metal", version, platform)
    except wheel_cache.DownloadError as exc:
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
    from builder.cli.group import main

    wheel = mlx_wheel("0.28.0")
    out = tmp_path_factory.mktemp("download") / "r28.json"
    assert main(["report", str(wheel), "--download", "--format", "json", "-o", str(out)]) in (
        0,
        None,
    )
    return wheel, out
