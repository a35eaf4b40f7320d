"""``variants --from`` with the bundled catalog tree (metal_src/: family headers instead of
``.metal`` entry files) over libraries written by the project's own writer: the split by family
header, the JIT source as ``embed`` writes it for those headers, a variant that keeps no function
(no metallib, a stale one from an earlier run removed), and a library whose module hash is wrong
(exit 2, nothing written).
"""

from __future__ import annotations

import json
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest
from clirun import run_cli

from builder.files.dataclass_json import dump
from builder.kernels.discovery import load_tree
from builder.metallib import open_metallib
from builder.resources import metal_src_dir
from builder.subsets.variants import make_variants

FAMILIES = ("unary/unary.h", "binary/binary.h", "arange/arange.h")


@pytest.fixture
def catalog_library(write_metallib: Callable[..., Path]) -> tuple[Path, dict[str, list[str]]]:
    """Three kernels of three families, interleaved as a linker might order them, and two
    functions no family produces."""
    by_source = load_tree(metal_src_dir()).by_source()
    names = {family: [k.name for k in by_source[family][:3]] for family in FAMILIES}
    order = [name for row in zip(*names.values()) for name in row] + ["helper_a", "helper_b"]
    return write_metallib("cat.metallib", [(n, 300 + 7 * i) for i, n in enumerate(order)]), names


def _run(argv: list[str], capsys: pytest.CaptureFixture[str]) -> dict[str, Any]:
    code, out, err = run_cli([*argv, "--format", "json"], capsys)
    assert code == 0, err
    return {v["name"]: v for v in json.loads(out)["variants"]}


def test_catalog_families_split_and_embedded_as_embed_does(
    catalog_library: tuple[Path, dict[str, list[str]]],
    tmp_path: Path,
    capsys: pytest.CaptureFixture[str],
) -> None:
    library, names = catalog_library
    src = metal_src_dir()
    variants = _run(
        [
            "variants",
            "--from",
            str(library),
            "--source-dir",
            str(src),
            "-o",
            str(tmp_path / "v"),
            "--jit",
            "unary/*,binary/*",
        ],
        capsys,
    )
    jit = variants["jit-1"]
    assert jit["jit_sources"] == ["unary/unary.h", "binary/binary.h"]
    with open_metallib(jit["metallib"]) as lib:
        assert lib.columns().names == [*names["arange/arange.h"], "helper_a", "helper_b"]
    assert jit["jit_kernels"] == 6 and jit["other_kernels"] == 2 and jit["aot_kernels"] == 3
    expected = tmp_path / "embed.cpp"
    code, _, err = run_cli(
        [
            "embed",
            str(src / "unary/unary.h"),
            str(src / "binary/binary.h"),
            "-I",
            str(src),
            "-o",
            str(expected),
        ],
        capsys,
    )
    assert code == 0, err
    assert Path(jit["jit_sources_file"]).read_text() == expected.read_text()


def test_a_variant_that_keeps_nothing_has_no_metallib(
    write_metallib: Callable[..., Path], tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    by_source = load_tree(metal_src_dir()).by_source()
    only = [k.name for k in by_source["unary/unary.h"][:2]]
    library = write_metallib("unary.metallib", [(n, 400) for n in only])
    stale = tmp_path / "v" / "jit-1" / "unary.metallib"
    stale.parent.mkdir(parents=True)
    stale.write_bytes(b"from an earlier run")
    (tmp_path / "v" / "variants.json").write_text("{}")  # what makes v an earlier run's output
    variants = _run(
        [
            "variants",
            "--from",
            str(library),
            "--source-dir",
            str(metal_src_dir()),
            "-o",
            str(tmp_path / "v"),
            "--jit",
            "unary/unary.h",
        ],
        capsys,
    )
    jit = variants["jit-1"]
    assert jit["metallib"] is None and jit["metallib_bytes"] == 0 and jit["function_count"] == 0
    assert jit["jit_kernels"] == 2 and jit["total_bytes"] == jit["embedded_bytes"] > 0
    assert not stale.exists()
    assert Path(variants["all-aot"]["metallib"]).read_bytes() == library.read_bytes()


def test_a_wrong_module_hash_writes_nothing(
    catalog_library: tuple[Path, dict[str, list[str]]],
    tmp_path: Path,
    capsys: pytest.CaptureFixture[str],
) -> None:
    library, _ = catalog_library
    with open_metallib(library) as lib:
        fn = lib.functions[4]
        at = fn.module.offset + fn.module.size - 5
    data = bytearray(library.read_bytes())
    data[at] ^= 0xFF
    library.write_bytes(bytes(data))
    out = tmp_path / "v"
    code, stdout, err = run_cli(
        [
            "variants",
            "--from",
            str(library),
            "--source-dir",
            str(metal_src_dir()),
            "-o",
            str(out),
            "--jit",
            "unary/*",
        ],
        capsys,
    )
    assert code == 2 and stdout == "" and err.count("\n") == 1, err
    assert "does not match its HASH tag" in err and fn.name in err
    assert not list(out.rglob("*.metallib")) and not list(out.rglob("*.cpp"))


def test_each_variant_record_is_its_model_written_by_the_one_codec(
    catalog_library: tuple[Path, dict[str, list[str]]],
    tmp_path: Path,
    capsys: pytest.CaptureFixture[str],
) -> None:
    """A ``Variant`` carries its record: ``dump`` of each variant ``make_variants`` returns (the
    JSON codec, ``builder.files.dataclass_json``) equals that variant in the document the command
    writes, planned variant and coverage included, with and without ``--download``."""
    library, _ = catalog_library
    out = tmp_path / "v"
    budget = library.stat().st_size - 500  # one family or more must go JIT
    argv = ["variants", "--from", str(library), "--source-dir", str(metal_src_dir())]
    for extra in ((), ("--download",)):
        options = ["-o", str(out), "--jit", "unary/*,binary/*", "--ceiling", str(budget), *extra]
        written = list(_run([*argv, *options], capsys).values())
        run = make_variants(
            str(library),
            load_tree(metal_src_dir()),
            out,
            jit=["unary/*,binary/*"],
            ceiling=budget,
            download=bool(extra),
        )
        assert [v["name"] for v in written] == ["all-aot", "jit-1", "planned"]
        assert written[2]["plan"]["files"] and written[1]["coverage"]["in_sources"] > 0
        assert [json.loads(json.dumps(dump(v))) for v in run.variants] == written
