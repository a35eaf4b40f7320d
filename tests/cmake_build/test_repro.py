"""Two clean builds in different directories give byte-identical outputs."""

from __future__ import annotations

from pathlib import Path

import pytest
from cmake_build.conftest import StandinBuild

pytestmark = [pytest.mark.cmake, pytest.mark.slow]


def _outputs(build_dir: Path) -> dict[str, bytes]:
    files = [
        *(build_dir / "metal_gen").glob("*/*.metal"),
        *(build_dir / "metal_jit").glob("*.cpp"),
        build_dir / "manifest.json",
        build_dir / "mlx.metallib",
        build_dir / "libmetal_jit.so",
    ]
    return {p.relative_to(build_dir).as_posix(): p.read_bytes() for p in files}


def test_two_clean_builds_are_byte_identical(
    standin_build: StandinBuild, tmp_path: Path, cxx_available: None
) -> None:
    defines = {
        "METALLIB_KERNELS": "unary,copy,softmax",
        "METALLIB_JIT": "copy",
        "METALLIB_DTYPES": "float32,int32",
        "METALLIB_AOT_CHUNK_SIZE": "30",
    }
    first = standin_build
    first.defines = defines
    first.configure()
    first.ninja()
    second = type(first)(tmp_path / "elsewhere" / "build2", first.kernel_dir, first.log, defines)
    second.configure()
    second.ninja()
    a, b = _outputs(first.build_dir), _outputs(second.build_dir)
    assert sorted(a) == sorted(b)
    assert any(k.endswith(".metal") for k in a) and any(k.endswith(".cpp") for k in a)
    differing = [name for name in a if a[name] != b[name]]
    assert differing == []
