"""``sources`` takes its TARGET through the one resolver: a build folder is read for the host
library its manifest names, as ``report BUILD_DIR`` reads it. Rows are checked against LLVM's
own tools (``support.llvm_strings``), not against the tool's other commands."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from binaries import cxx_dylib, cxx_elf, nm_addresses
from clirun import run_cli
from support.llvm_strings import independent_sources

from builder.records.manifest import MANIFEST_NAME, Tree, build_manifest, write_manifest

_BETA = "#include <metal_stdlib>\nusing namespace metal;\n"
HOST = """
namespace demo { namespace jit {
const char* alpha() { return "kernel void alpha() {}\\n// alpha"; }
const char* beta() { return "#include <metal_stdlib>\\nusing namespace metal;\\n"; }
} }
"""


def _build(folder: Path, host: Path | None) -> Path:
    """A build folder whose manifest names ``host`` as its host library (no unit: the
    manifest's other facts are not what ``sources`` reads)."""
    folder.mkdir(parents=True, exist_ok=True)
    manifest = build_manifest(
        folder,
        {},
        tree=Tree("discovered", "demo"),
        units=[],
        compiled={},
        options={},
        kernels={},
        host_library=None if host is None else str(host),
    )
    write_manifest(folder / MANIFEST_NAME, manifest)
    return folder


def test_a_build_folder_is_read_for_its_host_library(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    build = tmp_path / "build"
    build.mkdir()
    (tmp_path / "host.cpp").write_text(HOST)
    dylib = cxx_dylib(build / "libhost.dylib", [tmp_path / "host.cpp"])
    _build(build, dylib)
    code, out, err = run_cli(
        ["sources", str(build), "--jit-namespace", "demo::jit", "--format", "json"], capsys
    )
    assert code == 0, err
    rows = json.loads(out)["host_sources"]
    symbols = {a: n for n, a in nm_addresses(dylib).items()}
    wanted = {
        (where, len(raw))
        for n, where, raw in independent_sources(dylib, None, symbols).values()
        if (n or "").startswith("__ZN4demo3jit")
    }
    assert {(r["offset"], r["bytes"]) for r in rows} == wanted and len(wanted) == 2
    assert {r["member"] for r in rows} == {None}


def test_a_build_folders_elf_host_library_is_read_too(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """An ELF host library is read as a Mach-O one is (its offsets against LLVM's tools:
    tests/size/test_host_elf.py); a build with no JIT unit has no host library: one line,
    exit 2."""
    (tmp_path / "elf").mkdir()
    (tmp_path / "host.cpp").write_text(HOST)
    elf = cxx_elf(tmp_path / "elf" / "libmetal_jit.so", tmp_path / "host.cpp")
    code, out, err = run_cli(
        ["sources", str(_build(tmp_path / "elf", elf)), "--jit-namespace", "demo::jit"]
        + ["--format", "json"],
        capsys,
    )
    assert code == 0, err
    literals = {"alpha": "kernel void alpha() {}\n// alpha", "beta": _BETA}
    assert {r["function"]: r["bytes"] for r in json.loads(out)["host_sources"]} == {
        f"demo::jit::{name}": len(text) + 1 for name, text in literals.items()
    }
    code, out, err = run_cli(["sources", str(_build(tmp_path / "none", None))], capsys)
    assert code == 2 and out == "" and "the build has no host library" in err
    assert err.count("\n") == 1
