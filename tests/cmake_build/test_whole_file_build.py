"""``build --jit '*'`` on Linux, no Metal compiler anywhere, on trees of ggml's, llama.cpp's and
candle's shapes (tests/support/whole_file_trees.py): every entry file JIT, the host library built,
and the manifest and ``report`` say each unit's embedding and its kernels."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from support.whole_file_trees import SHAPES

from .conftest import cli_without_metal

WHOLE = {
    "ggml": {"ops.metal"},
    "llama": {"kernels/norm.metal"},
    "candle": {"fill.metal", "unary.metal"},
}


@pytest.mark.cmake
@pytest.mark.parametrize("shape", sorted(SHAPES))
def test_jit_star_builds_without_a_metal_compiler(
    shape: str, tmp_path: Path, cxx_available: None
) -> None:
    root, include_dirs, expected = SHAPES[shape](tmp_path / "tree")
    build_dir = tmp_path / "b"
    flags = [a for d in include_dirs for a in ("-I", str(d))]
    args = ["--source-dir", str(root), *flags, "--build-dir", str(build_dir)]
    done = cli_without_metal("build", *args, "--jit", "*", "--format", "json")
    assert done.returncode == 0, done.stderr
    manifest = json.loads((build_dir / "manifest.json").read_text())
    assert manifest["metallib"] is None  # nothing compiled by Apple's compiler
    units = {u["name"]: u for u in manifest["units"]}
    assert set(units) == set(expected) and {u["mode"] for u in units.values()} == {"jit"}
    assert {n for n, u in units.items() if u["embedding"] == "whole-file"} == WHOLE[shape]
    assert {n: sorted(u["host_names"]) for n, u in units.items()} == {
        n: sorted(k) for n, k in expected.items()
    }
    report = json.loads(done.stdout)
    families = {j["name"]: j for j in report["jit_units"]}
    assert {n: j["embedding"] for n, j in families.items()} == {
        n: u["embedding"] for n, u in units.items()
    }
    assert sum(j["kernel_count"] for j in families.values()) == sum(map(len, expected.values()))
    # an AOT build of the same tree still needs the compiler, and --jit is the way out
    aot = cli_without_metal("build", *args[:-1], str(tmp_path / "aot"))
    assert aot.returncode == 2 and "every unit JIT with --jit (no Metal" in aot.stderr, aot.stderr
