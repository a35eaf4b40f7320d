"""``build --jit '*'`` on Linux, no Metal compiler, on llama.cpp's real kernel trees as
llama-cpp-python vendors them: 0.3.2's single ``ggml-metal.metal`` (kernel templates of its own,
embedded whole) and 0.3.36's ``kernels/`` (entry files and ``.metal`` headers). Every kernel
discovery lists ships as run-time source, and the host library's sources hold each whole-file
unit's text."""

from __future__ import annotations

import json
import re
from pathlib import Path

import pytest
from support.real_sdists import ggml_metal_or_skip

from .conftest import cli_without_metal

pytestmark = [pytest.mark.realdata, pytest.mark.cmake, pytest.mark.slow]


@pytest.mark.parametrize("version", ["0.3.2", "0.3.36"])
def test_jit_star_builds_llama_cpp_without_a_metal_compiler(
    version: str, tmp_path: Path, cxx_available: None
) -> None:
    tree = ggml_metal_or_skip(version)
    flags = ["-I", str(tree.parent), "-I", str(tree)]
    listed = cli_without_metal("kernels", "--source-dir", str(tree), *flags, "--format", "json")
    assert listed.returncode == 0, listed.stderr
    discovered: dict[str, set[str]] = {}
    for kernel in json.loads(listed.stdout)["kernels"]:
        discovered.setdefault(kernel["source"], set()).add(kernel["name"])
    build_dir = tmp_path / "b"
    args = ["--source-dir", str(tree), *flags, "--build-dir", str(build_dir), "--jit", "*"]
    built = cli_without_metal("build", *args, "--format", "json")
    assert built.returncode == 0, built.stderr
    manifest = json.loads((build_dir / "manifest.json").read_text())
    assert manifest["metallib"] is None and manifest["host_library"]
    units = {u["name"]: u for u in manifest["units"]}
    assert {u["mode"] for u in units.values()} == {"jit"}
    assert {n: set(u["host_names"]) for n, u in units.items() if u["host_names"]} == discovered
    whole = {n for n, u in units.items() if u["embedding"] == "whole-file"}
    assert whole  # 0.3.2's one file; 0.3.36's files that write their own templates
    for name in whole:  # the generated source holds the entry file's own text
        cpp = (build_dir / "metal_jit" / f"{name}.cpp").read_text()
        assert re.search(rf'#line \d+ "ggml-metal/{re.escape(name)}"', cpp), name
    report = json.loads(built.stdout)
    assert sum(j["kernel_count"] for j in report["jit_units"]) == sum(map(len, discovered.values()))
