"""Every library of real wheels (issue 33, items 3, 4 and 6), downloaded once and cached:
torch 2.14.1's two alternative libraries in ``libtorch_cpu.dylib``, metal-linalg 2.19.0's 13 in
``_core.cpython-312-darwin.so``, metal-flash-sdpa 0.1.2's one in ``_C.cpython-312-darwin.so``.

What each command must print is read independently: where each library sits from LLVM's tools
(``llvm-objdump`` section headers, ``llvm-nm`` symbols), its size, format and function count
from its own header with ``struct``; the function counts agree with the figures measured in
../shared/REAL_DATA.md.
"""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from binaries import macho_sections, nm_addresses, own_header
from clirun import run_cli as run
from support.real_wheels import libraries_or_skip

from builder.resources import metal_src_dir

pytestmark = [pytest.mark.realdata, pytest.mark.slow]


def _torch() -> tuple[Path, list[tuple[int, int]]]:
    """libtorch_cpu.dylib and its sections metal_basic and metal_40 (offset, size)."""
    libs = libraries_or_skip("torch==2.14.1", "macosx_14_0_arm64")
    dylib = libs[0].path
    assert dylib is not None
    sections = macho_sections(dylib)
    return dylib, [sections[("", "__TEXT", name)] for name in ("metal_basic", "metal_40")]


def test_verify_torch_checks_both_libraries(capsys: pytest.CaptureFixture[str]) -> None:
    dylib, sections = _torch()
    headers = [own_header(dylib, offset) for offset, _ in sections]
    assert [h[2] for h in headers] == [16024, 16653]  # REAL_DATA.md
    code, out, err = run(["verify", "torch==2.14.1", "--format", "json"], capsys)
    assert code == 0, err
    doc = json.loads(out)
    assert doc["ok"] is True and len(doc["libraries"]) == 2
    for checked, (offset, size), (version, stated, functions) in zip(
        doc["libraries"], sections, headers
    ):
        assert checked["ok"] and checked["problems"] == []
        assert checked["file_size"] == size == stated
        assert (checked["format_version"], checked["function_count"]) == (version, functions)


def test_history_of_torch_is_each_librarys_not_their_sum(
    capsys: pytest.CaptureFixture[str],
) -> None:
    _, sections = _torch()
    code, out, err = run(["history", "torch==2.14.1", "--format", "json"], capsys)
    assert code == 0, err
    histories = json.loads(out)["libraries"]
    assert [[p["bytes"] for p in h["points"]] for h in histories] == [
        [size] for _, size in sections
    ]
    assert [h["points"][0]["function_count"] for h in histories] == [16024, 16653]
    code, out, err = run(
        ["history", "torch==2.14.1", "--member", histories[1]["library"], "--format", "json"],
        capsys,
    )
    assert code == 0, err
    assert [p["bytes"] for p in json.loads(out)["points"]] == [sections[1][1]]


def test_list_metal_linalg_shows_its_thirteen_libraries(
    capsys: pytest.CaptureFixture[str],
) -> None:
    libs = libraries_or_skip("metal-linalg==2.19.0", "macosx_14_0_arm64")
    path = libs[0].path
    assert path is not None
    offsets = sorted(a for name, a in nm_addresses(path).items() if name.endswith("_metallib"))
    assert len(offsets) == 13  # each library has a symbol naming it (REAL_DATA.md)
    code, out, err = run(["list", "metal-linalg==2.19.0", "--format", "json"], capsys)
    assert code == 0, err
    listed = json.loads(out)["libraries"]
    assert len(listed) == 13
    for library, offset in zip(listed, offsets):
        version, size, functions = own_header(path, offset)
        assert (library["file_size"], library["function_count"]) == (size, functions)
        assert library["format_version"] == version == "2.7"
        assert len(library["functions"]) == functions
    code, out, err = run(["list", "metal-linalg==2.19.0"], capsys)
    assert code == 0, err
    assert sum(line.startswith("# metal-linalg==2.19.0:") for line in out.splitlines()) == 13


def test_list_of_a_saved_report_of_metal_linalg(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """A saved report is a TARGET of ``list`` (issue 34 item 9): the report of
    metal-linalg==2.19.0 saved, then listed, gives each of its 13 libraries with the size,
    format and function count its own header states."""
    libs = libraries_or_skip("metal-linalg==2.19.0", "macosx_14_0_arm64")
    path = libs[0].path
    assert path is not None
    offsets = sorted(a for name, a in nm_addresses(path).items() if name.endswith("_metallib"))
    saved = tmp_path / "saved.json"
    code, _, err = run(["report", "metal-linalg==2.19.0", "-o", str(saved)], capsys)
    assert code == 0, err
    code, out, err = run(["list", str(saved), "--format", "json"], capsys)
    assert code == 0, err
    listed = json.loads(out)["libraries"]
    assert len(listed) == len(offsets) == 13
    for library, offset in zip(listed, offsets):
        version, size, functions = own_header(path, offset)
        assert (library["file_size"], library["format_version"]) == (size, version)
        assert library["function_count"] == len(library["functions"]) == functions
        assert library["source"].startswith(f"{saved}:")


def test_variants_from_metal_flash_sdpas_wheel(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """Its library is inside the wheel's extension module: the variant holding every function
    is that library's bytes, cut from the binary at its symbol (llvm-nm) for the size its own
    header states."""
    [lib] = libraries_or_skip("metal-flash-sdpa==0.1.2", "macosx_11_0_arm64")
    assert lib.path is not None and lib.location is not None
    offset = nm_addresses(lib.path)[lib.location.symbol or ""]
    _, size, functions = own_header(lib.path, offset)
    assert functions == 42  # REAL_DATA.md
    out = tmp_path / "v"
    code, stdout, err = run(
        [
            "variants",
            "--from",
            "metal-flash-sdpa==0.1.2",
            "--platform",
            "macosx_11_0_arm64",
            "--source-dir",
            str(metal_src_dir()),  # a tree that produces none of its kernels: all stay AOT
            "-o",
            str(out),
            "--format",
            "json",
        ],
        capsys,
    )
    assert code == 0, err
    doc = json.loads(stdout)
    assert doc["source"]["function_count"] == functions and doc["source"]["file_size"] == size
    [all_aot] = [v for v in doc["variants"] if v["name"] == "all-aot"]
    with open(lib.path, "rb") as handle:
        handle.seek(offset)
        assert Path(all_aot["metallib"]).read_bytes() == handle.read(size)
    assert "42 function(s) of the library are produced by no entry file" in err
