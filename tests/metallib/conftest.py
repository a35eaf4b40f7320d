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


@pytest.fixture(scope="session")
def linked_binaries(
    small_real_metallib: bytes, tmp_path_factory: pytest.TempPathFactory
) -> dict[str, Path]:
    """Real binaries linked here with clang and lld (tests/binaries.py): an arm64 dylib with the
    real metallib as the section ``__TEXT,metal_basic`` and a synthetic one in ``__const``
    behind ``_second_metallib``; an x86-64 dylib holding none (``plain``); fat files of the two,
    the metallibs in the second slice and in the first; an x86-64 ELF file with the real one in
    ``.rodata`` behind ``elf_metallib``. Tests copy them before changing a byte."""
    from binaries import link_dylib, link_elf, lipo

    folder = tmp_path_factory.mktemp("linked")
    real = folder / "real.metallib"
    real.write_bytes(small_real_metallib)
    other = folder / "other.metallib"
    other.write_bytes(library_bytes(synthetic_parts(5, seed=4)))
    dylib = link_dylib(
        folder / "libtwo.dylib",
        [("__TEXT,metal_basic", None, real), ("__TEXT,__const", "_second_metallib", other)],
    )
    plain = link_dylib(folder / "libplain.dylib", [], arch="x86_64")
    return {
        "dylib": dylib,
        "plain": plain,
        "fat, second slice": lipo(folder / "libfat2.dylib", [plain, dylib]),
        "fat, first slice": lipo(folder / "libfat1.dylib", [dylib, plain]),
        "elf": link_elf(folder / "libelf.so", [(".rodata", "elf_metallib", real)]),
    }


def sha256(data: bytes | memoryview) -> str:
    return hashlib.sha256(data).hexdigest()
