"""``variants --from``: each variant's metallib download, and ``--ceiling-of download``, on the
bundled catalog tree over a library written by the project's own writer whose modules are
incompressible (so moving a family to JIT saves about its bytes). The libraries are under 1 MiB:
the model is then one part, exactly the stream a zip member holds, so zlib is the reference.
"""

from __future__ import annotations

import hashlib
import json
import zlib
from pathlib import Path
from typing import Any

import pytest
from clirun import run_cli
from synthetic import new_function, new_library

from builder.kernels.discovery import load_tree
from builder.metallib import library_bytes
from builder.resources import metal_src_dir

FAMILIES = ("unary/unary.h", "binary/binary.h", "arange/arange.h")


def _zip_stream(path: Path) -> int:
    """What a wheel stores for the file: zlib level 6, raw deflate, one pass."""
    packer = zlib.compressobj(6, zlib.DEFLATED, -15)
    return len(packer.compress(path.read_bytes()) + packer.flush())


@pytest.fixture
def library(tmp_path: Path) -> Path:
    """Four kernels of each of three families (12 to 30 KB of incompressible module each)."""
    by_source = load_tree(metal_src_dir()).by_source()
    parts = []
    for f, family in enumerate(FAMILIES):
        for k, kernel in enumerate(by_source[family][:4]):
            size = 12_000 + 6_000 * f + 500 * k
            bitcode = hashlib.shake_256(kernel.name.encode()).digest(size)
            parts.append(new_function(kernel.name, bitcode))
    path = tmp_path / "lib.metallib"
    path.write_bytes(library_bytes(new_library(parts)))
    return path


def _variants(argv: list[str], capsys: pytest.CaptureFixture[str]) -> dict[str, Any]:
    code, out, err = run_cli([*argv, "--format", "json"], capsys)
    assert code == 0, err
    return {v["name"]: v for v in json.loads(out)["variants"]}


def test_each_variant_reports_its_metallib_download(
    library: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    variants = _variants(
        [
            "variants",
            "--from",
            str(library),
            "--source-dir",
            str(metal_src_dir()),
            "-o",
            str(tmp_path / "v"),
            "--jit",
            "unary/*",
            "--download",
        ],
        capsys,
    )
    for v in variants.values():
        assert v["metallib_download_bytes"] == _zip_stream(Path(v["metallib"]))
        assert (
            v["total_download_bytes"]
            == v["metallib_download_bytes"] + v["embedded_compressed_bytes"]
        )
    assert variants["jit-1"]["embedded_compressed_bytes"] > 0
    assert (
        variants["jit-1"]["metallib_download_bytes"]
        < variants["all-aot"]["metallib_download_bytes"]
    )


def test_budget_of_download_plans_within_the_cap(
    library: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    full = _zip_stream(library)
    budget = full - 40_000  # more than the smallest family saves: at least one family goes JIT
    variants = _variants(
        [
            "variants",
            "--from",
            str(library),
            "--source-dir",
            str(metal_src_dir()),
            "-o",
            str(tmp_path / "v"),
            "--ceiling",
            str(budget),
            "--ceiling-of",
            "download",
        ],
        capsys,
    )
    planned = variants["planned"]
    assert planned["plan"]["ceiling_of"] == "download"
    assert planned["jit_sources"]
    measured = _zip_stream(Path(planned["metallib"])) + planned["embedded_compressed_bytes"]
    assert planned["total_download_bytes"] == measured <= budget
    assert planned["plan"]["metallib_bytes"] == measured
    assert planned["total_download_bytes"] < variants["all-aot"]["total_download_bytes"]


def test_without_download_nothing_is_compressed_or_shown(
    library: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    argv = [
        "variants",
        "--from",
        str(library),
        "--source-dir",
        str(metal_src_dir()),
        "-o",
        str(tmp_path / "v"),
        "--jit",
        "unary/*",
    ]
    assert all(
        v["metallib_download_bytes"] is None and v["total_download_bytes"] is None
        for v in _variants(argv, capsys).values()
    )
    code, out, _ = run_cli(argv, capsys)
    assert code == 0 and "metallib download" not in out and "total download" not in out
    code, out, _ = run_cli([*argv, "--download"], capsys)
    assert code == 0 and "metallib download" in out and "total download" in out


def test_budget_of_needs_a_cap(
    library: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    code, out, err = run_cli(
        [
            "variants",
            "--from",
            str(library),
            "--source-dir",
            str(metal_src_dir()),
            "-o",
            str(tmp_path / "v"),
            "--ceiling-of",
            "download",
        ],
        capsys,
    )
    assert code == 2 and out == "" and "--ceiling-of" in err and len(err.strip().splitlines()) == 1


def test_a_download_cap_counts_the_headers_every_variant_embeds(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """Every variant, one with no JIT entry file too, embeds the headers of the tree's
    run-time-only kernel templates; the planned download counts them, so a budget that every
    entry file AOT meets plans that split and measures what it planned (it was an internal error,
    exit 2: the plan left out the embedded source of a split with no JIT entry file)."""
    root = tmp_path / "tree"
    root.mkdir()
    (root / "rt.h").write_text("template <typename T>\n[[kernel]] void rt_a(device T* x) { }\n")
    (root / "p.metal").write_text(
        "kernel void p0(device float* x) { }\nkernel void p1(device float* x) { }\n"
    )
    library = tmp_path / "in.metallib"
    parts = [new_function(n, hashlib.shake_256(n.encode()).digest(3000)) for n in ("p0", "p1")]
    library.write_bytes(library_bytes(new_library(parts)))
    argv = ["variants", "--from", str(library), "--source-dir", str(root), "-o"]
    variants = _variants(
        [*argv, str(tmp_path / "v"), "--ceiling", "10MB", "--ceiling-of", "download"], capsys
    )
    planned = variants["planned"]
    assert planned["jit_sources"] == [] and planned["embedded_compressed_bytes"] > 0
    total = _zip_stream(Path(planned["metallib"])) + planned["embedded_compressed_bytes"]
    assert planned["plan"]["metallib_bytes"] == planned["total_download_bytes"] == total
    assert planned["total_download_bytes"] == variants["all-aot"]["total_download_bytes"]
