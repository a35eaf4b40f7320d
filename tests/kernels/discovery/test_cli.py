"""``metallib-builder kernels --source-dir`` on a catalog-less tree: table, JSON with the same
fields as the catalog tree, flags, metallib.toml, and one-line errors with exit 2."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest
from kernels.discovery.expected import BY_FILE, PLAIN, VERSIONED_320

pytestmark = pytest.mark.realdata


def _json(run_cli, args: list[str]) -> dict[str, Any]:
    code, out, err = run_cli(["kernels", *args, "--format", "json"])
    assert code == 0, err
    doc: dict[str, Any] = json.loads(out)
    return doc


def test_json_lists_every_kernel_with_its_entry_file(run_cli, mlx_style, mlx_headers) -> None:
    doc = _json(run_cli, ["--source-dir", str(mlx_style), "-I", str(mlx_headers)])
    assert doc["schema"] == 1 and doc["kind"] == "discovered"
    assert doc["total"] == sum(len(v) for v in BY_FILE.values())
    by_file: dict[str, set[str]] = {}
    for kernel in doc["kernels"]:
        by_file.setdefault(kernel["source"], set()).add(kernel["name"])
    assert by_file == BY_FILE
    assert {s["source"]: s["count"] for s in doc["sources"]} == {
        f: len(names) for f, names in BY_FILE.items()
    }
    tile = next(k for k in doc["kernels"] if k["name"] == "tile_copy_float32_bm64_bn16_ttrue")
    assert tile == {
        "name": "tile_copy_float32_bm64_bn16_ttrue",
        "source": "tiles/tile_copy.metal",
        "template": "tile_copy",
        "args": ["float", "64", "16", "true"],
    }


def test_catalog_and_discovered_trees_give_the_same_fields(run_cli, mlx_style, mlx_headers) -> None:
    catalog = _json(run_cli, [])
    found = _json(run_cli, ["--source-dir", str(mlx_style), "-I", str(mlx_headers)])
    shared = {"schema", "kind", "source_dir", "config", "total", "sources", "kernels"}
    assert shared <= set(catalog) and shared <= set(found)
    assert catalog["kind"] == "catalog"
    # The catalog tree keeps the keys scripts already read.
    assert {"catalog", "selection", "families", "instantiations"} <= set(catalog)
    assert {tuple(k) for k in catalog["kernels"]} == {tuple(k) for k in found["kernels"]}
    assert {tuple(s) for s in catalog["sources"]} == {tuple(s) for s in found["sources"]}
    assert catalog["total"] == len(catalog["kernels"]) == len(catalog["instantiations"])
    assert [k["name"] for k in catalog["kernels"]] == [
        i["host_name"] for i in catalog["instantiations"]
    ]
    unary = next(k for k in catalog["kernels"] if k["name"] == "unary_v_abs_float16")
    assert unary == {
        "name": "unary_v_abs_float16",
        "source": "unary/unary.h",
        "template": "unary_v",
        "args": ["half", "half", "Abs"],
    }
    filtered = _json(run_cli, ["--kernels", "unary", "--dtypes", "float32"])
    assert filtered["sources"] == [{"source": "unary/unary.h", "count": filtered["total"]}]


def test_table_per_entry_file(run_cli, mlx_style, mlx_headers) -> None:
    code, out, _ = run_cli(["kernels", "--source-dir", str(mlx_style), "-I", str(mlx_headers)])
    assert code == 0
    total = sum(len(v) for v in BY_FILE.values())
    assert f"{mlx_style}: {total} kernels in {len(BY_FILE)} entry files (discovered)" in out
    first, _, runtime = out.partition("run-time only:")  # then the run-time-only templates
    rows = {
        line.split("│")[1].strip(): line.split("│")[2].strip()
        for line in first.splitlines()
        if line.count("│") == 3
    }
    assert rows == {**{f: str(len(n)) for f, n in BY_FILE.items()}, "total": str(total)}
    assert "indexing/scatter_rows.h │ scatter_rows, fill_rows" in runtime


def test_flags_and_config(run_cli, tree_copy: Path, mlx_headers) -> None:
    base = ["--source-dir", str(tree_copy), "-I", str(mlx_headers)]
    doc = _json(run_cli, [*base, "-D", "__METAL_VERSION__=320", "--exclude", "plain*", "-j", "1"])
    assert "plain_kernels.metal" not in {s["source"] for s in doc["sources"]}
    assert {k["name"] for k in doc["kernels"] if k["source"] == "versioned.metal"} == VERSIONED_320
    (tree_copy / "metallib.toml").write_text('[kernels]\nexclude = ["[!p]*.metal", "tiles/*"]\n')
    doc = _json(run_cli, base)
    assert doc["config"] == str(tree_copy / "metallib.toml")
    assert {k["name"] for k in doc["kernels"]} == PLAIN


@pytest.mark.parametrize(
    ("setup", "args", "expected"),
    [
        (
            {"broken.metal": "#if\n"},
            [],
            "error: broken.metal: does not preprocess: broken.metal:1:",
        ),
        ({"x.metal": '#include "gone.h"\n'}, [], "gone.h: No such file or directory"),
        ({"metallib.toml": "[kernels]\ndefine = []\n"}, [], "did you mean 'defines'?"),
        (
            {},
            ["-D", "1X"],
            "--define must be NAME or NAME=VALUE, without control characters, got '1X'",
        ),
        ({}, ["--kernels", "unary"], "--kernels and --dtypes apply to catalog trees"),
        ({}, ["--config", "nope.toml"], "--config nope.toml: no such file"),
    ],
)
def test_bad_input_is_one_line_and_exit_2(
    run_cli, tree_copy: Path, mlx_headers, setup, args, expected
) -> None:
    for name, text in setup.items():
        (tree_copy / name).write_text(text)
    code, out, err = run_cli(
        ["kernels", "--source-dir", str(tree_copy), "-I", str(mlx_headers), *args]
    )
    assert code == 2 and out == ""
    assert err.count("\n") == 1 and expected in err, err


def test_discovery_flags_on_a_catalog_tree_exit_2(run_cli) -> None:
    code, out, err = run_cli(["kernels", "-D", "X=1"])
    assert code == 2 and out == "" and "apply to a folder of .metal entry files" in err
    assert err.count("\n") == 1


def test_help_has_examples(run_cli) -> None:
    code, out, _ = run_cli(["kernels", "--help"])
    assert code == 0
    assert "--source-dir mlx/backend/metal/kernels -I ." in out and "metallib.toml" in out
