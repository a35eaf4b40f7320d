"""``variants --from`` a library held inside a binary or a wheel's binary (issue 33, item 4):
the same variants, byte for byte, as from the library written out as its own file; the
binary and the wheel are made here (clang + ld64.lld, ``.incbin``; zipfile)."""

from __future__ import annotations

import json
import zipfile
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest
from binaries import link_dylib
from clirun import run_cli

from builder.inputs.targets import resolve_target
from builder.kernels.discovery import load_tree
from builder.metallib import open_metallib
from builder.resources import metal_src_dir

pytestmark = pytest.mark.both_container_codes

FAMILIES = ("unary/unary.h", "binary/binary.h", "arange/arange.h")


@pytest.fixture
def libraries(write_metallib: Callable[..., Path]) -> tuple[Path, Path]:
    """A catalog library (three kernels of three families and two helpers) and another one."""
    by_source = load_tree(metal_src_dir()).by_source()
    names = [k.name for family in FAMILIES for k in by_source[family][:3]] + ["helper_a"]
    catalog = write_metallib("cat.metallib", [(n, 300 + 7 * i) for i, n in enumerate(names)])
    other = write_metallib("other.metallib", [("something_else", 900), ("more", 120)])
    return catalog, other


def _variants(argv: list[str], out: Path, capsys: pytest.CaptureFixture[str]) -> dict[str, Any]:
    code, stdout, err = run_cli(
        [
            "variants",
            *argv,
            "--source-dir",
            str(metal_src_dir()),
            "-o",
            str(out),
            "--jit",
            "unary/*,binary/*",
            "--format",
            "json",
        ],
        capsys,
    )
    assert code == 0, err
    doc: dict[str, Any] = json.loads(stdout)
    return doc


def _written(doc: dict[str, Any]) -> dict[str, tuple[bytes | None, str | None, int]]:
    """Each variant's metallib bytes, JIT source text and figures."""
    return {
        v["name"]: (
            Path(v["metallib"]).read_bytes() if v["metallib"] else None,
            Path(v["jit_sources_file"]).read_text() if v["jit_sources_file"] else None,
            v["total_bytes"],
        )
        for v in doc["variants"]
    }


def test_variants_of_a_library_inside_a_binary_and_a_wheel_equal_the_files(
    libraries: tuple[Path, Path], tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    catalog, other = libraries
    dylib = link_dylib(
        tmp_path / "libkernels.dylib",
        [("__TEXT,metal_basic", None, other), ("__TEXT,__const", "_kernels_metallib", catalog)],
    )
    wheel = tmp_path / "kern-1.0-cp312-cp312-macosx_14_0_arm64.whl"
    with zipfile.ZipFile(wheel, "w", zipfile.ZIP_DEFLATED) as archive:
        archive.write(dylib, "kern/libkernels.dylib")
    reference = _written(_variants(["--from", str(catalog)], tmp_path / "ref", capsys))
    assert reference["all-aot"][0] == catalog.read_bytes()  # all-aot is the input itself

    for target in (str(dylib), str(wheel)):
        members = [lib.member for lib in resolve_target(target)]
        assert len(members) == 2
        code, _, err = run_cli(
            ["variants", "--from", target, "--source-dir", str(metal_src_dir())]
            + ["-o", str(tmp_path / "none")],
            capsys,
        )
        assert code == 2 and err.count("\n") == 1 and "--member" in err
        assert not (tmp_path / "none").exists()
        out = tmp_path / f"from-{Path(target).suffix[1:]}"
        doc = _variants(["--from", target, "--member", str(members[1])], out, capsys)
        assert _written(doc) == reference
        assert doc["source"]["member"] == members[1]
        assert doc["source"]["file_size"] == catalog.stat().st_size
        assert Path(doc["variants"][0]["metallib"]).name == "libkernels.metallib"
    assert dylib.read_bytes().count(catalog.read_bytes()) == 1  # the input is never touched


def test_a_bad_hash_inside_a_binary_writes_nothing(
    libraries: tuple[Path, Path], tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    catalog, _other = libraries
    with open_metallib(catalog) as lib:
        fn = lib.functions[4]
        at = fn.module.offset + fn.module.size - 5
    data = bytearray(catalog.read_bytes())
    data[at] ^= 0xFF
    damaged = tmp_path / "damaged.metallib"
    damaged.write_bytes(bytes(data))
    dylib = link_dylib(tmp_path / "libd.dylib", [("__TEXT,__const", "_d", damaged)])
    out = tmp_path / "v"
    code, stdout, err = run_cli(
        ["variants", "--from", str(dylib), "--source-dir", str(metal_src_dir())]
        + ["-o", str(out), "--jit", "unary/*"],
        capsys,
    )
    assert code == 2 and stdout == "" and err.count("\n") == 1
    assert fn.name in err and "HASH" in err and not out.exists()
