"""Issue 33 items 2 and 5 on real wheels: libraries are paired by identity across releases that
reorder, add and remove them (metal-linalg 2.10.0 against 2.19.0, whose first libraries are
``QR_Unblocked`` and ``QR_Streaming_AMX_Reduced``), and across two file names holding the same
libraries (torch's libtorch_cpu.dylib); members are chosen by the paths ``unzip -l`` shows.

What must pair is read without the tool: each library's symbol and address from ``llvm-nm`` (a
Mach-O dylib is linked at 0: the address is the file offset), its section from
``llvm-objdump``, its size from its own header, wheel paths from the zip directory."""

from __future__ import annotations

import json
import os
import struct
import zipfile
from pathlib import Path

import pytest
from binaries import macho_sections, nm_addresses
from clirun import run_cli as run
from support.real_wheels import libraries_or_skip

pytestmark = [pytest.mark.realdata, pytest.mark.slow]

PLATFORM = "macosx_14_0_arm64"
CORE = "metal_linalg/_core.cpython-312-darwin.so"


def _declared_size(path: Path, offset: int) -> int:
    """The size a library's own header states (+16), at ``offset``."""
    with open(path, "rb") as handle:
        handle.seek(offset)
        head = handle.read(24)
    assert head[:4] == b"MTLB"
    return int(struct.unpack_from("<Q", head, 16)[0])


def _libraries_by_symbol(spec: str) -> tuple[dict[str, int], list[str]]:
    """symbol -> library size, and the symbols in file order, of the wheel's ``_core`` module:
    every llvm-nm symbol naming a ``*_metallib`` whose address holds a library header."""
    libs = libraries_or_skip(spec, PLATFORM)
    path = libs[0].path
    assert path is not None
    found = {
        name: address for name, address in nm_addresses(path).items() if name.endswith("_metallib")
    }
    ordered = sorted(found, key=found.__getitem__)
    return {name: _declared_size(path, found[name]) for name in ordered}, ordered


def test_metal_linalg_releases_pair_by_symbol(capsys: pytest.CaptureFixture[str]) -> None:
    base, base_order = _libraries_by_symbol("metal-linalg==2.10.0")
    head, head_order = _libraries_by_symbol("metal-linalg==2.19.0")
    # the case: position 1 is another library in each release
    assert base_order[0] == "_metal_linalg_QR_Unblocked_metallib"
    assert head_order[0] == "_metal_linalg_QR_Streaming_AMX_Reduced_metallib"
    code, out, err = run(
        [
            "compare",
            "metal-linalg==2.10.0",
            "metal-linalg==2.19.0",
            "--platform",
            PLATFORM,
            "--format",
            "json",
        ],
        capsys,
    )
    assert code == 0, err
    pairs = json.loads(out)["libraries"]
    changes: dict[str, list[str]] = {"paired": [], "added": [], "removed": []}
    for pair in pairs:
        side = pair["head"] or pair["base"]
        changes[pair["change"]].append(side["identity"])
        assert side["member"] == f"{CORE}#{side['identity']}"
        assert pair["base"] is None or pair["base"]["file_size"] == base[side["identity"]]
        assert pair["head"] is None or pair["head"]["file_size"] == head[side["identity"]]
        expected = head.get(side["identity"], 0) - base.get(side["identity"], 0)
        assert pair["delta_bytes"] == expected
    assert sorted(changes["paired"]) == sorted(set(base) & set(head))
    assert sorted(changes["added"]) == sorted(set(head) - set(base))
    assert sorted(changes["removed"]) == sorted(set(base) - set(head))
    assert changes["removed"] == ["_metal_linalg_QR_Unblocked_metallib"]
    assert len(changes["added"]) >= 1 and len(changes["paired"]) >= 10

    for member in ("_metal_linalg_Cholesky_metallib", "metal_linalg_Cholesky_metallib"):
        code, out, err = run(
            ["report", "metal-linalg==2.19.0", "--member", member, "--format", "json"], capsys
        )
        assert code == 0, err
        doc = json.loads(out)
        assert doc["source"]["member"] == f"{CORE}#_metal_linalg_Cholesky_metallib"
        assert doc["file_size"] == head["_metal_linalg_Cholesky_metallib"]


def test_torch_under_another_file_name_pairs_by_section(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    libs = libraries_or_skip("torch==2.14.1", PLATFORM)
    dylib = libs[0].path
    assert dylib is not None
    copy = tmp_path / "libtorch_cpu_copy.dylib"
    try:
        os.link(dylib, copy)  # 386 MB: the same file under another name, no copy
    except OSError:
        copy.symlink_to(dylib)
    sections = {
        f"{segment},{section}": where
        for (_, segment, section), where in macho_sections(dylib).items()
        if section.startswith("metal")
    }
    starts = {where[0] for where in sections.values()}
    assert all(_declared_size(dylib, start) for start in starts)  # a library at each
    code, out, err = run(["compare", str(dylib), str(copy), "--format", "json"], capsys)
    assert code == 0, err
    pairs = json.loads(out)["libraries"]
    assert [p["change"] for p in pairs] == ["paired", "paired"]
    assert {p["base"]["identity"] for p in pairs} == set(sections)
    for pair in pairs:
        identity = pair["base"]["identity"]
        assert pair["base"]["member"] == f"libtorch_cpu.dylib#{identity}"
        assert pair["head"]["member"] == f"{copy.name}#{identity}"
        assert pair["head"]["file_size"] == sections[identity][1] and pair["delta_bytes"] == 0
    wheel = libs[0].wheel
    assert wheel is not None
    assert "torch/lib/libtorch_cpu.dylib" in zipfile.ZipFile(wheel).namelist()
    code, out, err = run(
        ["report", "torch==2.14.1", "--member", "__TEXT,metal_40", "--format", "json"], capsys
    )
    assert code == 0, err
    doc = json.loads(out)
    assert doc["source"]["member"] == "torch/lib/libtorch_cpu.dylib#__TEXT,metal_40"
    assert doc["file_size"] == sections["__TEXT,metal_40"][1]


def test_a_wheels_metallib_is_chosen_by_its_path_in_the_wheel(
    capsys: pytest.CaptureFixture[str],
) -> None:
    [lib] = libraries_or_skip("mlx-metal==0.29.0", PLATFORM)
    assert lib.wheel is not None and lib.path is not None
    names = [n for n in zipfile.ZipFile(lib.wheel).namelist() if n.endswith(".metallib")]
    assert names == ["mlx/lib/mlx.metallib"]
    with open(lib.path, "rb") as handle:
        functions = struct.unpack_from("<I", handle.read(92), 88)[0]
    for member in (names[0], "mlx.metallib"):
        code, out, err = run(
            ["report", "mlx-metal==0.29.0", "--member", member, "--format", "json"], capsys
        )
        assert code == 0, err
        doc = json.loads(out)
        assert doc["function_count"] == functions and doc["source"]["member"] == names[0]
