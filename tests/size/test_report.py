"""Reports: JSON schema 1, saved reports as targets, build manifests, the MLX "other" share."""

from __future__ import annotations

import json
import os
import re
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest
from clirun import run_cli

from builder.errors import UsageError
from builder.metallib import Piece, open_metallib
from builder.publish.outputs import report_output
from builder.records.manifest import read_manifest
from builder.render.json_docs import report_dict, report_json, report_json_text
from builder.size.grouping import OTHER
from builder.size.load import load_reports
from builder.size.saved import read_report

FUNCTIONS = [
    ("v_copyfloat32float32", 300),
    ("v_copyfloat16float16", 200),
    ("vv_Addfloat32", 500),
    ("vv_Addfloat16", 450),
    ("steel_gemm_fused_nn_float16_float16_bm64_bn64", 2000),
    ("rbits", 50),
]


def test_report_json_schema(write_metallib: Callable[..., Path]) -> None:
    path = write_metallib("lib.metallib", FUNCTIONS)
    (report,) = load_reports(str(path))
    doc = json.loads(report_json([report]))
    for key in (
        "schema",
        "file_size",
        "format_version",
        "function_count",
        "functions",
        "groups",
        "overhead_bytes",
    ):
        assert key in doc
    assert doc["schema"] == 3
    assert doc["file_size"] == os.path.getsize(path)
    assert doc["source"]["path"] == str(path)
    assert sum(f["bytes"] for f in doc["functions"]) + doc["overhead_bytes"] == doc["file_size"]
    assert sum(g["bytes"] for g in doc["groups"]) + doc["overhead_bytes"] == doc["file_size"]
    assert doc["function_count"] == len(doc["functions"]) == len(FUNCTIONS)
    assert [f["name"] for f in doc["functions"]] == [n for n, _ in FUNCTIONS]
    groups = {g["name"]: g for g in doc["groups"]}
    assert groups["copy"]["function_count"] == 2
    assert groups["binary"]["function_count"] == 2
    assert doc["groups"][0]["name"] == "gemm"  # largest first
    with open_metallib(path) as lib:
        expected = {
            fn.name: (sum(len(fn.stored(piece)) for piece in Piece), fn.module.size)
            for fn in lib.functions
        }
    assert {f["name"]: (f["bytes"], f["bitcode_bytes"]) for f in doc["functions"]} == expected


def test_saved_report_round_trip_and_regroup(
    write_metallib: Callable[..., Path], tmp_path: Path
) -> None:
    path = write_metallib("lib.metallib", FUNCTIONS)
    (report,) = load_reports(str(path))
    saved = tmp_path / "report.json"
    saved.write_text(report_json([report]))
    (again,) = load_reports(str(saved))
    assert again.functions == report.functions
    assert again.groups == report.groups
    assert again.file_size == report.file_size
    (by_dtype,) = load_reports(str(saved), by="dtype")
    assert {g.name for g in by_dtype.groups} == {"float32", "float16", "none"}
    assert sum(g.bytes for g in by_dtype.groups) == sum(g.bytes for g in report.groups)


def test_a_saved_report_of_generic_groups_is_read_with_todays_names(
    write_metallib: Callable[..., Path], tmp_path: Path
) -> None:
    """A report saved by an older version holds the generic labels it made (``dense`` for
    torch's ``atan2_dense_float_float``: the op dropped); read as a target it is grouped as this
    version reads the names, so a compare against it does not see every group renamed."""
    names = [("atan2_dense_float_float", 300), ("atan2_strided_half_half", 200)]
    names += [("log10_dense_float_float", 100), ("mykernel_float16_bm64", 50)]
    (report,) = load_reports(str(write_metallib("lib.metallib", names)))
    doc: Any = json.loads(report_json([report]))  # JSON data, typed as such
    old = {"atan2_dense_float_float": "dense", "atan2_strided_half_half": "strided"}
    old |= {"log10_dense_float_float": "dense", "mykernel_float16_bm64": "mykernel"}
    ops: dict[str, int] = {}
    for row in doc["functions"]:
        row["group"] = old[row["name"]]
        op = row["name"].split("_")[0]  # each name's first word is its op here
        ops[op] = ops.get(op, 0) + row["bytes"]
    doc["groups"] = []  # rolled up again on reading
    saved = tmp_path / "old.json"
    saved.write_text(json.dumps(doc), encoding="utf-8")
    (again,) = load_reports(str(saved))
    assert {g.name: g.bytes for g in again.groups} == ops
    assert set(ops) == {"atan2", "log10", "mykernel"}


def test_saved_report_must_add_up(write_metallib: Callable[..., Path], tmp_path: Path) -> None:
    path = write_metallib("lib.metallib", FUNCTIONS)
    (report,) = load_reports(str(path))
    doc = report_dict(report)
    functions = doc["functions"]
    assert isinstance(functions, list)
    functions[0]["bytes"] += 1
    with pytest.raises(UsageError, match="add up"):
        read_report(doc, "edited.json")
    with pytest.raises(UsageError, match="schema"):
        read_report({"schema": 99}, "future.json")
    with pytest.raises(UsageError, match="malformed"):
        read_report({"schema": 2, "functions": [{}]}, "broken.json")


def test_a_saved_report_lacking_newer_keys_reads_with_their_defaults() -> None:
    """A report saved by an older version (no source, provenance, kernel counts, embedding or
    measuring method) reads with the defaults docs/report-schema.md states, its target the file
    it was read from; and it is written back with every key in place."""
    old = {
        "schema": 2,
        "file_size": 30,
        "overhead_bytes": 10,
        "functions": [{"name": "a", "bytes": 20}],
        "jit_units": [{"name": "u", "embedded_bytes": 5, "host_bytes": None}],
        "host_library": {"path": "libu.so", "file_size": 100},
    }
    report = read_report(old, "old.json")
    assert (report.source.target, report.source.kind, report.source.path) == (
        "old.json",
        "report",
        None,
    )
    assert (report.format_version, report.by, report.grouping, report.provenance) == (
        "?",
        "kernel",
        "saved",
        {},
    )
    (unit,) = report.jit_units
    assert (unit.kernel_count, unit.embedding) == (0, "preamble")
    host = report.host_library
    assert host is not None and host.measured_by is None and host.shared_bytes is None
    written = report_dict(report)
    assert written["function_count"] == 1 and written["overhead"] == [
        {"name": "overhead", "bytes": 10}
    ]
    assert written["host_library"] == {
        "path": "libu.so",
        "file_size": 100,
        "measured_by": None,
        "shared_bytes": None,
        "unattributed_bytes": None,
    }
    assert written["jit_units"] == [
        {
            "name": "u",
            "embedded_bytes": 5,
            "host_bytes": None,
            "kernel_count": 0,
            "embedding": "preamble",
        }
    ]


def test_renderers_name_the_file(write_metallib: Callable[..., Path]) -> None:
    path = write_metallib("lib.metallib", FUNCTIONS)
    reports = load_reports(str(path))
    for text in (
        report_output(reports, "markdown", 2, False, None),
        report_output(reports, "table", 2, False, 200),
    ):
        assert str(path) in "".join(text.split())  # a table's title wraps a long path
        assert "rest (" in text
        assert "[container overhead]" in text
    rows = report_output(reports, "csv", None, False, None).splitlines()
    assert rows[0].startswith("file,by,group")
    total = sum(int(r.split(",")[4]) for r in rows[1:])
    assert total == os.path.getsize(path)


def _write_build(tmp_path: Path, write_metallib: Callable[..., Path]) -> Path:
    build = tmp_path / "build"
    write_metallib("build/lib/kernels.metallib", FUNCTIONS)
    manifest = {
        "schema": 2,
        "metallib": "lib/kernels.metallib",
        "units": [
            {
                "name": "copy",
                "kind": "catalog_family",
                "mode": "aot",
                "sources": ["copy.metal"],
                "host_names": ["v_copyfloat32float32", "v_copyfloat16float16"],
                "outputs": ["copy.air"],
                "embedded_bytes": 0,
            },
            {
                "name": "arith",
                "kind": "catalog_family",
                "mode": "aot",
                "sources": ["binary.metal"],
                "host_names": ["vv_Addfloat32", "vv_Addfloat16", "rbits"],
                "outputs": ["binary.air"],
                "embedded_bytes": 0,
            },
            {
                "name": "matmul",
                "kind": "catalog_family",
                "mode": "jit",
                "sources": ["gemm.h"],
                "host_names": [],
                "outputs": [],
                "embedded_bytes": 12345,
            },
        ],
    }
    (build / "manifest.json").write_text(json.dumps(manifest))
    return build


def test_build_directory_uses_manifest(write_metallib: Callable[..., Path], tmp_path: Path) -> None:
    build = _write_build(tmp_path, write_metallib)
    (report,) = load_reports(str(build))
    assert report.grouping == "manifest"
    labels = {f.name: f.group for f in report.functions}
    assert labels["v_copyfloat32float32"] == "copy"
    assert labels["rbits"] == "arith"
    # not listed by the manifest: "other", never a guess
    assert labels["steel_gemm_fused_nn_float16_float16_bm64_bn64"] == OTHER
    assert [(j.name, j.embedded_bytes) for j in report.jit_units] == [("matmul", 12345)]
    assert report.source.manifest == str(build / "manifest.json")
    from builder.size.grouping import parse_rules

    (with_rules,) = load_reports(str(build), rules=parse_rules("all  .", "t"))
    assert with_rules.grouping == "manifest"  # the exact source wins over a rule file
    assert with_rules.functions == report.functions
    (by_source,) = load_reports(str(build), by="source")
    assert {g.name for g in by_source.groups} == {"copy.metal", "binary.metal", OTHER}
    doc = json.loads(report_json([report]))
    assert doc["jit_units"] == [
        {
            "name": "matmul",
            "embedded_bytes": 12345,
            "host_bytes": None,
            "kernel_count": 0,
            "embedding": "preamble",  # a manifest without the key: MLX's embedding
        }
    ]
    assert doc["source"]["manifest"].endswith("manifest.json")


def test_manifest_errors(tmp_path: Path) -> None:
    bad = tmp_path / "manifest.json"
    bad.write_text(
        json.dumps({"schema": 2, "units": [{"name": "x", "kind": "entry_file", "mode": "fast"}]})
    )
    with pytest.raises(UsageError, match="mode"):
        read_manifest(bad)
    # the units are catalog families or entry files (the tree's kind says which), and a
    # schema-1 manifest (families[]) is old
    bad.write_text(
        json.dumps(
            {"schema": 2, "tree": {"kind": "family"}, "units": [{"name": "x", "mode": "aot"}]}
        )
    )
    with pytest.raises(UsageError, match="'tree.kind' is 'family', not one of 'catalog'"):
        read_manifest(bad)
    bad.write_text(json.dumps({"schema": 1, "families": [{"name": "x", "mode": "aot"}]}))
    with pytest.raises(UsageError, match="schema 1, expected 2"):
        read_manifest(bad)
    bad.write_text("{")
    with pytest.raises(UsageError, match="cannot read build manifest"):
        read_manifest(bad)
    missing = tmp_path / "b"
    missing.mkdir()
    (missing / "manifest.json").write_text(
        json.dumps({"schema": 2, "units": [], "metallib": "nope.metallib"})
    )
    with pytest.raises(UsageError, match="missing"):
        load_reports(str(missing))


def test_unusable_targets(tmp_path: Path) -> None:
    with pytest.raises(UsageError, match="no such file"):
        load_reports(str(tmp_path / "absent.metallib"))
    with pytest.raises(UsageError, match="not a build directory"):
        load_reports(str(tmp_path))


@pytest.mark.realdata
@pytest.mark.parametrize(
    ("version", "platform"), [("0.30.0", "macosx_14_0_arm64"), ("0.32.0", "macosx_26_0_arm64")]
)
def test_mlx_rules_leave_little_in_other(
    mlx_metallib: Callable[[str, str], Path], version: str, platform: str
) -> None:
    path = mlx_metallib(version, platform)
    (report,) = load_reports(str(path))
    assert report.grouping == "rules:builtin:mlx"
    other = sum(f.bytes for f in report.functions if f.group == OTHER)
    share = other / os.path.getsize(path)
    assert share <= 0.05, f"{share:.2%} of the bytes in 'other'"
    families = {g.name for g in report.groups}
    assert {"copy", "unary", "binary", "reduce", "gemm", "gemv", "quantized", "sort"} <= families


def test_fast_json_equals_general_encoder(write_metallib: Callable[..., Path]) -> None:
    """The formatted fast path and json.dumps agree, including names that need escaping."""

    plain = write_metallib("plain.metallib", FUNCTIONS)
    odd = write_metallib("odd.metallib", [*FUNCTIONS, ('we"ird\\name_é', 10)])
    for path in (plain, odd):
        (report,) = load_reports(str(path))
        assert json.loads(report_json_text(report)) == report_dict(report)
    two = json.loads(report_json(load_reports(str(plain)) * 2))
    assert two["schema"] == 3 and len(two["libraries"]) == 2


def _wheel(tmp_path: Path, members: dict[str, bytes]) -> Path:
    import zipfile

    path = tmp_path / "pkg-1.0-py3-none-macosx_14_0_arm64.whl"
    with zipfile.ZipFile(path, "w") as archive:
        for name, data in members.items():
            archive.writestr(name, data)
    return path


def test_wheel_target_reports_each_metallib(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    from synthetic import synthetic_bytes

    monkeypatch.setenv("METALLIB_BUILDER_CACHE", str(tmp_path / "cache"))
    one, two = synthetic_bytes(FUNCTIONS), synthetic_bytes(FUNCTIONS[:2])
    wheel = _wheel(tmp_path, {"pkg/a.metallib": one, "pkg/sub/b.metallib": two, "pkg/x.py": b""})
    reports = load_reports(str(wheel))
    assert [r.source.member for r in reports] == ["pkg/a.metallib", "pkg/sub/b.metallib"]
    assert [r.file_size for r in reports] == [len(one), len(two)]
    assert all(r.source.wheel == str(wheel) for r in reports)
    empty = tmp_path / "empty"
    empty.mkdir()
    with pytest.raises(UsageError, match="contains no metallib"):
        load_reports(str(_wheel(empty, {"pkg/x.py": b""})))


def test_spec_download_keeps_stdout_clean(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capfd: pytest.CaptureFixture[str]
) -> None:
    """pip's progress output goes to stderr; stdout carries only the JSON report."""
    from synthetic import synthetic_bytes

    from builder.cli.group import main
    from builder.inputs import wheels

    monkeypatch.setenv("METALLIB_BUILDER_CACHE", str(tmp_path / "cache"))
    wheel = _wheel(tmp_path, {"pkg/lib.metallib": synthetic_bytes(FUNCTIONS)})

    def fake_download(name: str, version: str, platform: str, *, quiet: bool = True) -> Path:
        assert (name, version, platform) == ("pkg", "1.0", "macosx_26_0_arm64")
        os.write(1, b"Downloading pkg-1.0.whl |#####| 100%\n")  # what pip would print
        return wheel

    monkeypatch.setattr(wheels, "download_wheel", fake_download)
    main(["report", "pkg==1.0", "--platform", "macosx_26_0_arm64", "--format", "json"])
    out, err = capfd.readouterr()
    doc = json.loads(out)
    assert doc["source"]["kind"] == "spec" and doc["source"]["wheel"] == str(wheel)
    assert "Downloading" in err and "pkg==1.0" in err


def test_cli_report_formats_and_errors(
    write_metallib: Callable[..., Path], tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    def run(*argv: str) -> tuple[int, str, str]:
        return run_cli(list(argv), capsys)

    build = _write_build(tmp_path, write_metallib)
    code, out, _ = run("report", str(build), "--top", "1")
    assert code == 0
    assert "rest (" in out and "manifest.json" in re.sub(r" *\n", "", out)  # rich wraps paths
    assert "JIT unit" in out and re.search(r"│ matmul +│ +0 │ 12.35 kB │ +12,345 │", out)
    code, out, _ = run("report", str(build), "--format", "markdown", "--by", "source")
    assert code == 0 and "`copy.metal`" in out
    code, out, _ = run("report", str(build / "lib" / "kernels.metallib"), "--format", "csv")
    assert code == 0 and out.startswith("file,by,group")
    code, out, err = run("report", str(build / "lib" / "kernels.metallib"), "--by", "source")
    assert code == 2 and out == "" and "--source-dir" in err
    code, out, err = run("report", str(build), "--rules", str(tmp_path / "missing.rules"))
    assert code == 2 and "cannot read rule file" in err
