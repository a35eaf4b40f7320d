"""Provenance read from the container and the modules agrees with what llvm-dis shows."""

from __future__ import annotations

import re
from collections.abc import Callable
from pathlib import Path

import pytest
from llvm import disassemble
from synthetic import synthetic_parts

from builder.metallib import Metallib, Piece, library_bytes, open_metallib
from builder.metallib.reader import library_provenance


def _named_metadata(text: str, name: str) -> str:
    ref = re.search(rf"^!{re.escape(name)} = !{{!(\d+)}}", text, re.MULTILINE)
    assert ref, name
    node = re.search(rf"^!{ref.group(1)} = !{{(.*)}}$", text, re.MULTILINE)
    assert node
    return node.group(1)


@pytest.mark.realdata
@pytest.mark.parametrize(
    ("version", "platform"), [("0.28.0", "macosx_14_0_arm64"), ("0.32.0", "macosx_26_0_arm64")]
)
def test_provenance_matches_llvm_dis(
    mlx_metallib: Callable[[str, str], Path], tmp_path: Path, version: str, platform: str
) -> None:
    with open_metallib(mlx_metallib(version, platform)) as lib:
        found = library_provenance(lib)
        module = tmp_path / "first.air"
        module.write_bytes(lib.functions[0].stored(Piece.MODULE))
    text = disassemble(module)
    ident = _named_metadata(text, "llvm.ident")
    assert found.compilers == (ident.strip('!"'),)
    air = [int(v) for v in re.findall(r"i32 (\d+)", _named_metadata(text, "air.version"))]
    assert found.air_versions == (f"{air[0]}.{air[1]}",)
    language = re.findall(r"i32 (\d+)", _named_metadata(text, "air.language_version"))
    assert found.metal_language_versions == (f"{language[0]}.{language[1]}",)


def test_provenance_of_a_library_without_compiler_ident() -> None:
    lib = Metallib(library_bytes(synthetic_parts(3)))
    found = library_provenance(lib)
    assert found.compilers == ()
    assert found.air_versions == ("2.6",) and found.metal_language_versions == ("3.1",)
    assert found.format_version == "2.7" and found.deployment_target == "14.0"
