"""``metallib-builder kernels``: the catalog as a table and as JSON, with filters."""

from __future__ import annotations

import json

from builder.kernels import load_catalog, parse_host_name


def test_table_lists_every_family_and_variant(run_cli, raw, catalog_counter) -> None:
    code, out, _ = run_cli(["kernels"])
    assert code == 0
    for family, spec in raw["families"].items():
        assert family in out
        for form in spec["forms"].values():
            assert form["template"] in out
    total = next(line for line in out.splitlines() if "total" in line)
    assert (
        f"{catalog_counter(raw):,}" in total
    )  # counts as every table writes them (docs/kernels.md)


def test_json_has_every_host_name(run_cli, raw, catalog_counter) -> None:
    code, out, _ = run_cli(["kernels", "--format", "json"])
    assert code == 0
    doc = json.loads(out)
    assert doc["schema"] == 1 and doc["total"] == catalog_counter(raw)
    names = [i["host_name"] for i in doc["instantiations"]]
    assert names == [i.host_name for i in load_catalog().expand()]
    assert sum(f["count"] for f in doc["families"]) == doc["total"]
    for entry in doc["instantiations"][::97]:
        parsed = parse_host_name(entry["host_name"])
        assert parsed is not None
        assert (parsed.family, parsed.form, parsed.op, list(parsed.dtypes)) == (
            entry["family"],
            entry["form"],
            entry["op"],
            entry["dtypes"],
        )


def test_filters(run_cli, raw, catalog_counter) -> None:
    args = [
        "kernels",
        "--kernels",
        "unary,binary",
        "--dtypes",
        "float16,float32",
        "--format",
        "json",
    ]
    code, out, _ = run_cli(args)
    doc = json.loads(out)
    assert code == 0
    assert doc["total"] == catalog_counter(raw, ["unary", "binary"], ["float16", "float32"])
    assert [f["name"] for f in doc["families"]] == ["unary", "binary"]
    assert {d for i in doc["instantiations"] for d in i["dtypes"]} == {"float16", "float32"}
    code, out, _ = run_cli(["kernels", "--kernels", "gather", "--dtypes", "bool"])
    assert code == 0 and "gather" in out and "unary" not in out


def test_unknown_names_exit_2_listing_valid_ones(run_cli) -> None:
    code, out, err = run_cli(["kernels", "--kernels", "unary,conv"])
    assert code == 2 and out == ""
    assert "conv" in err and "valid: unary, binary, ternary" in err
    code, _, err = run_cli(["kernels", "--dtypes", "float64"])
    assert code == 2 and "valid: bool, int8" in err
