"""Wheels that would fill the cache, or that no file system can hold.

A deflate bomb declares its true size (nothing lies, so no size check catches it): 8 MB of one
byte repeated compress to a few kB. Extraction counts the bytes it actually writes and stops at
METALLIB_BUILDER_MAX_EXTRACT (1 GiB by default; 1 MB here, so the test writes little), then
removes what it wrote. A wheel holding both ``a.metallib`` and ``a.metallib/b.metallib`` is
refused for its layout, not reported as a cache write failure.
"""

from __future__ import annotations

import zipfile
from pathlib import Path

import pytest
from support.hostile import Cli, assert_one_error_line

from builder.files.bounds import MAX_EXTRACT

WHEEL = "pkg-1.0-py3-none-macosx_14_0_arm64.whl"


@pytest.fixture
def cache(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    folder = tmp_path / "cache"
    monkeypatch.setenv("METALLIB_BUILDER_CACHE", str(folder))
    return folder


def _wheel(path: Path, members: dict[str, bytes]) -> Path:
    with zipfile.ZipFile(path, "w", zipfile.ZIP_DEFLATED, compresslevel=9) as archive:
        for name, data in members.items():
            archive.writestr(name, data)
    return path


def _extracted(cache: Path) -> list[Path]:
    """Every file extraction left under the cache (metallibs and temp files alike)."""
    return [p for p in (cache / "metallibs").rglob("*") if p.is_file()]


@pytest.mark.parametrize("members", [1, 3])
def test_a_deflate_bomb_stops_at_the_cap_and_leaves_nothing(
    members: int, tmp_path: Path, cache: Path, cli: Cli, monkeypatch: pytest.MonkeyPatch
) -> None:
    bomb = bytes(8_000_000)
    wheel = _wheel(tmp_path / WHEEL, {f"pkg/lib{i}.metallib": bomb for i in range(members)})
    with zipfile.ZipFile(wheel) as archive:  # honest sizes, a huge ratio
        assert all(i.file_size == len(bomb) for i in archive.infolist())
    assert wheel.stat().st_size < 10_000 * members
    monkeypatch.setenv("METALLIB_BUILDER_MAX_EXTRACT", "1MB")
    code, out, err = cli("report", wheel)
    assert_one_error_line(
        code, err, str(wheel), "exceeds 1,000,000 bytes", "METALLIB_BUILDER_MAX_EXTRACT"
    )
    assert out == "" and _extracted(cache) == []
    assert [p for p in (cache / "metallibs").rglob("*")] == []  # no empty folders either


def test_the_cap_counts_every_member_together(
    tmp_path: Path, cache: Path, cli: Cli, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Three members of 400 kB each fit a 1 MB cap one by one, not together: the first ones,
    already renamed into place, go too."""
    wheel = _wheel(tmp_path / WHEEL, {f"pkg/lib{i}.metallib": bytes(400_000) for i in range(3)})
    monkeypatch.setenv("METALLIB_BUILDER_MAX_EXTRACT", "1MB")
    code, _, err = cli("report", wheel)
    assert_one_error_line(code, err, "METALLIB_BUILDER_MAX_EXTRACT")
    assert _extracted(cache) == []


def test_the_default_cap_is_documented() -> None:
    docs = Path(__file__).resolve().parents[2] / "docs" / "security.md"
    assert MAX_EXTRACT.default == 1024**3
    assert "METALLIB_BUILDER_MAX_EXTRACT" in docs.read_text() and "1 GiB" in docs.read_text()


def test_a_file_that_is_also_a_folder_is_a_layout_error(
    tmp_path: Path, cache: Path, cli: Cli
) -> None:
    wheel = _wheel(tmp_path / WHEEL, {"a.metallib": b"x" * 100, "a.metallib/b.metallib": b"y"})
    code, out, err = cli("report", wheel)
    assert_one_error_line(
        code, err, "'a.metallib'", "'a.metallib/b.metallib'", "needs a folder of that name"
    )
    assert "cannot write" not in err and out == ""
    assert not (cache / "metallibs").exists() or _extracted(cache) == []
