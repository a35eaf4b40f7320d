"""``build --jit '*'`` on Linux, no Metal compiler, on llama.cpp's real kernel trees as
llama-cpp-python vendors them: 0.3.2's single ``ggml-metal.metal`` (kernel templates of its own,
embedded whole) and 0.3.36's ``kernels/`` (entry files and ``.metal`` headers). Every kernel
discovery lists ships as run-time source, and the host library's sources hold each whole-file
unit's text."""

from __future__ import annotations

import json
import os
import re
import subprocess
import sys
from pathlib import Path

import pytest
from support.real_sdists import ggml_metal_or_skip

pytestmark = [pytest.mark.realdata, pytest.mark.cmake, pytest.mark.slow]

ROOT = Path(__file__).resolve().parents[2]


def _cli(*args: str) -> subprocess.CompletedProcess[str]:
    env = {k: v for k, v in os.environ.items() if k != "METAL_COMPILER"}
    env["PATH"] = os.pathsep.join(
        p for p in env.get("PATH", "").split(os.pathsep) if not (Path(p) / "xcrun").exists()
    )
    return subprocess.run(
        [sys.executable, "-m", "builder", *args],
        cwd=ROOT,
        capture_output=True,
        text=True,
        check=False,
        env={**env, "NO_COLOR": "1"},
    )


@pytest.mark.parametrize("version", ["0.3.2", "0.3.36"])
def test_jit_star_builds_llama_cpp_without_a_metal_compiler(
    version: str, tmp_path: Path, cxx_available: None
) -> None:
    tree = ggml_metal_or_skip(version)
    flags = ["-I", str(tree.parent), "-I", str(tree)]
    listed = _cli("kernels", "--source-dir", str(tree), *flags, "--format", "json")
    assert listed.returncode == 0, listed.stderr
    discovered: dict[str, set[str]] = {}
    for kernel in json.loads(listed.stdout)["kernels"]:
        discovered.setdefault(kernel["source"], set()).add(kernel["name"])
    build_dir = tmp_path / "b"
    args = ["--source-dir", str(tree), *flags, "--build-dir", str(build_dir), "--jit", "*"]
    built = _cli("build", *args, "--format", "json")
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
