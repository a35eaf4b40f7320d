"""Round trip, verify and slim on metallibs built by Apple's compiler (mlx-metal macOS wheels)."""

from __future__ import annotations

import hashlib
import os
from collections.abc import Callable
from fnmatch import fnmatchcase
from pathlib import Path

import pytest
from llvm import disassemble

from builder.metallib import Piece, open_metallib, parts_from_library, verify, write_library
from builder.subsets.slim import slim_file

pytestmark = pytest.mark.realdata

# Both writer generations under format 2.7 (0.28-0.31 old, 0.32.0 new) and format 2.9.
LIBRARIES = [
    ("0.28.0", "macosx_14_0_arm64"),
    ("0.29.0", "macosx_14_0_arm64"),
    ("0.30.0", "macosx_14_0_arm64"),
    ("0.31.0", "macosx_14_0_arm64"),
    ("0.32.0", "macosx_14_0_arm64"),
    ("0.32.0", "macosx_26_0_arm64"),
]


def _file_sha256(path: Path) -> str:
    digest = hashlib.sha256()
    with path.open("rb") as handle:
        for block in iter(lambda: handle.read(1 << 20), b""):
            digest.update(block)
    return digest.hexdigest()


@pytest.mark.parametrize(("version", "platform"), LIBRARIES)
def test_round_trip_is_byte_identical(
    mlx_metallib: Callable[[str, str], Path], tmp_path: Path, version: str, platform: str
) -> None:
    source = mlx_metallib(version, platform)
    out = tmp_path / "copy.metallib"
    with open_metallib(source) as lib:
        generation_new = version == "0.32.0"
        assert (lib.reflection_list is not None) == generation_new
        assert (lib.uuid is not None) == generation_new
        assert (lib.dynamic_header is not None) == (platform == "macosx_26_0_arm64")
        assert lib.header.format_version_text == (
            "2.9" if platform.startswith("macosx_26") else "2.7"
        )
        assert sum(r.size for r in lib.regions()) == os.path.getsize(source)
        write_library(parts_from_library(lib), out)
    assert _file_sha256(out) == _file_sha256(source)


@pytest.mark.parametrize(("version", "platform"), [LIBRARIES[2], LIBRARIES[5]])
def test_real_library_verifies(
    mlx_metallib: Callable[[str, str], Path], version: str, platform: str
) -> None:
    with open_metallib(mlx_metallib(version, platform)) as lib:
        report = verify(lib)
        assert report.ok, report.problems[:5]
        assert report.function_count == len(lib.functions) > 10_000
        assert report.hashed_bytes == lib.header.bitcode.size


@pytest.mark.parametrize(("version", "platform"), [LIBRARIES[0], LIBRARIES[4], LIBRARIES[5]])
def test_slim_keeps_exactly_the_selection(
    mlx_metallib: Callable[[str, str], Path], tmp_path: Path, version: str, platform: str
) -> None:
    source = mlx_metallib(version, platform)
    out = tmp_path / "slim.metallib"
    result = slim_file(source, out, keep=["*copy*"])
    with open_metallib(source) as full, open_metallib(out) as slim:
        expected = [fn for fn in full.functions if fnmatchcase(fn.name, "*copy*")]
        assert [fn.name for fn in slim.functions] == [fn.name for fn in expected]
        assert result.functions_after == len(expected) > 0
        assert verify(slim).ok
        for old, new in zip(expected, slim.functions):
            for piece in (Piece.MODULE, Piece.PUBLIC_MD, Piece.PRIVATE_MD):
                assert bytes(new.stored(piece)) == bytes(old.stored(piece))
            assert new.hash == old.hash
            old_fb, new_fb = old.table.flatbuffer(old.index), new.table.flatbuffer(new.index)
            assert (old_fb is None) == (new_fb is None)
            if new_fb is not None and old_fb is not None:
                assert bytes(new_fb) == bytes(old_fb)
        if full.uuid is not None:
            assert slim.uuid is not None and slim.uuid != full.uuid
            assert slim.uuid[6] >> 4 == 3 and slim.uuid[8] >> 6 == 2
        if full.dynamic_header is not None:
            assert slim.dynamic_header is not None
            assert bytes(slim.data[slim.dynamic_header.offset : slim.dynamic_header.end]) == bytes(
                full.data[full.dynamic_header.offset : full.dynamic_header.end]
            )
    assert os.path.getsize(out) == result.bytes_after < result.bytes_before


def test_slim_is_deterministic_and_keep_all_is_identity(
    mlx_metallib: Callable[[str, str], Path], tmp_path: Path
) -> None:
    source = mlx_metallib("0.32.0", "macosx_14_0_arm64")
    first, second, everything = (
        tmp_path / "a.metallib",
        tmp_path / "b.metallib",
        tmp_path / "all.metallib",
    )
    slim_file(source, first, drop=["*bfloat16*"])
    slim_file(source, second, drop=["*bfloat16*"])
    assert first.read_bytes() == second.read_bytes()
    slim_file(source, everything, keep=["*"])
    assert _file_sha256(everything) == _file_sha256(source)


@pytest.mark.parametrize(("version", "platform"), [LIBRARIES[0], LIBRARIES[5]])
def test_modules_are_air_bitcode_that_llvm_reads(
    mlx_metallib: Callable[[str, str], Path], tmp_path: Path, version: str, platform: str
) -> None:
    """Each module the reader hands out is a whole LLVM bitcode file named after its function."""
    with open_metallib(mlx_metallib(version, platform)) as lib:
        functions = lib.functions
        for fn in functions[:: len(functions) // 5][:5]:
            module = tmp_path / "module.air"
            module.write_bytes(fn.stored(Piece.MODULE))
            assert f'source_filename = "{fn.name}"' in disassemble(module)
