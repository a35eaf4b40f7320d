"""The sticky PR comment: marker first, totals first, top N, collapsed details, under 60 KB always;
``compare --warn-only``; every report says what produced it."""

from __future__ import annotations

import functools
import json
import re
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest
from clirun import run_cli as _run

from builder import __version__
from builder.render.pr_comment import DEFAULT_LIMIT, MARKER, comment_markdown
from builder.render.text import provenance_line
from builder.settings.validators import parse_limit
from builder.size.compare import Comparison, compare_reports
from builder.size.load import load_reports
from builder.size.report import Report, Source
from builder.size.rollup import FunctionRow, overhead_row, roll_up
from builder.size.verdicts import Gates, Verdict, evaluate_gates

BASE = [
    ("v_copyfloat32float32", 300),
    ("vv_Addfloat32", 500),
    ("vv_Subtractint8", 300),
    ("steel_gemm_fused_nn_float16_float16_bm64_bn64", 2000),
]
HEAD = [
    ("v_copyfloat32float32", 360),
    ("vv_Addfloat32", 500),
    ("rope_float32", 700),
    ("steel_gemm_fused_nn_float16_float16_bm64_bn64", 2000),
]


def _synthetic(count: int, *, seed: int, name_len: int, by: str = "function") -> Report:
    """A report of ``count`` functions with long names, none shared with another seed's."""
    pad = "x" * name_len
    functions = [
        FunctionRow(
            f"kernel_{seed}_{i}_{pad}|`<b>",
            f"g{seed}_{i % 5000}" if by == "kernel" else f"kernel_{seed}_{i}",
            1000 + (i * 7919 + seed) % 50_000,
            0,
            0,
            0,
            0,
        )
        for i in range(count)
    ]
    overhead = [overhead_row("header", 88)]
    size = sum(f.bytes for f in functions) + 88
    return Report(
        source=Source(f"/tmp/{seed}.metallib", f"{seed}.metallib", "metallib"),
        file_size=size,
        format_version="2.7",
        by=by,
        grouping=by,
        functions=functions,
        groups=roll_up(functions),
        overhead=overhead,
    )


def _sections(text: str) -> list[str]:
    return re.findall(r"<summary>(.*?)</summary>", text)


def test_comment_shape(write_metallib: Callable[..., Path]) -> None:
    base = load_reports(str(write_metallib("b/mlx.metallib", BASE)))[0]
    head = load_reports(str(write_metallib("h/mlx.metallib", HEAD)))[0]
    comparison = compare_reports(base, head)
    gates = evaluate_gates(comparison, Gates(max_growth=parse_limit("0")))
    text = comment_markdown([(comparison, gates)], top=2)
    lines = text.splitlines()
    assert lines[0] == MARKER  # a CI step finds its own comment by this line
    total_at = next(i for i, line in enumerate(lines) if line.startswith("**+"))
    table_at = next(i for i, line in enumerate(lines) if line.startswith("| kernel |"))
    assert total_at < table_at  # totals first
    assert "❌ **FAIL**: --max-growth" in text
    rows = lines[table_at + 2 : lines.index("", table_at)]
    assert len(rows) == 2 + 3  # top 2, the folded rest, overhead, total
    assert rows[2].startswith("| rest (") and rows[-1].startswith("| **total**")
    summaries = _sections(text)
    assert summaries[0].startswith("Functions added: 1 (+")
    assert summaries[1].startswith("Functions removed: 1 (-")
    assert summaries[2].startswith("Functions changed in size: ")
    assert any(s.startswith("Other kernel groups:") for s in summaries)
    assert "How these were measured and built" in summaries
    assert text.count("<details>") == text.count("</details>") == len(summaries)
    assert f"metallib-builder {__version__}" in text


@functools.cache
def _big_comparison(name_len: int) -> tuple[Comparison, list[Verdict]]:
    """Every function added or removed, thousands of groups, hostile characters in every name
    (made once per name length: the tests only read it)."""
    base = _synthetic(17_000, seed=1, name_len=name_len)
    head = _synthetic(17_000, seed=2, name_len=name_len)
    comparison = compare_reports(base, head)
    gates = evaluate_gates(comparison, Gates(max_growth=parse_limit("0"), fail_on_new_group=True))
    return comparison, gates


@pytest.mark.parametrize("top", [None, 15])
@pytest.mark.parametrize("name_len", [20, 400])
def test_length_bound_on_17000_functions(top: int | None, name_len: int) -> None:
    comparison, gates = _big_comparison(name_len)
    text = comment_markdown([(comparison, gates)], top)
    assert len(text.encode("utf-8")) < DEFAULT_LIMIT
    assert text.startswith(MARKER + "\n")
    assert "more not shown" in text
    assert text.count("<details>") == text.count("</details>")
    assert "--fail-on-new-group" in text  # the verdict survives the cut
    # several libraries share the bound
    many = comment_markdown([(comparison, gates)] * 4, top)
    assert len(many.encode("utf-8")) < DEFAULT_LIMIT and many.count(MARKER) == 1


@pytest.mark.realdata
def test_length_bound_on_real_releases(
    mlx_metallib: Callable[[str, str], Path], capsys: pytest.CaptureFixture[str]
) -> None:
    base = mlx_metallib("0.29.0", "macosx_14_0_arm64")
    head = mlx_metallib("0.32.0", "macosx_26_0_arm64")
    code, out, _ = _run(
        ["compare", str(base), str(head), "--by", "function", "--top", "0", "--format", "markdown"],
        capsys,
    )
    assert code == 0
    (b,), (h,) = load_reports(str(base)), load_reports(str(head))
    assert b.function_count + h.function_count > 17_000
    assert len(out.encode("utf-8")) < DEFAULT_LIMIT
    assert out.startswith(MARKER) and "more not shown" in out
    code, out, _ = _run(
        ["compare", str(base), str(head), "--top", "5", "--format", "markdown"], capsys
    )
    table = out.split("| kernel |")[1].split("\n\n")[0].splitlines()[2:]
    assert len(table) == 5 + 3


def test_warn_only_prints_verdict_and_exits_0(
    write_metallib: Callable[..., Path], capsys: pytest.CaptureFixture[str]
) -> None:
    base = str(write_metallib("b/mlx.metallib", BASE))
    head = str(write_metallib("h/mlx.metallib", HEAD))
    gate = ["--max-growth", "0", "--fail-on-new-group"]
    code, _, err = _run(["compare", base, head, *gate], capsys)
    assert code == 1 and "--max-growth" in err
    code, out, err = _run(["compare", base, head, *gate, "--warn-only", "--format", "json"], capsys)
    assert code == 0
    assert "size gate failed" in err and "--max-growth" in err and "--fail-on-new-group" in err
    assert [g["passed"] for g in json.loads(out)["gates"]] == [False, False]
    code, _, err = _run(["compare", base, base, *gate, "--warn-only"], capsys)
    assert code == 0 and "failed" not in err
    code, _, _ = _run(["compare", base, "missing.metallib", "--warn-only"], capsys)
    assert code == 2  # an unusable input is never waved through


def test_reports_record_what_produced_them(
    write_metallib: Callable[..., Path], tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    build = tmp_path / "build"
    write_metallib("build/lib/k.metallib", BASE)
    options = {"MLB_KERNELS": "copy;binary", "MLB_JIT": False, "CMAKE_BUILD_TYPE": "Release"}
    manifest = {
        "schema": 2,
        "metallib": "lib/k.metallib",
        "options": options,
        "toolchain": {"metal": "test"},
        "units": [
            {
                "name": "copy",
                "kind": "catalog_family",
                "mode": "aot",
                "host_names": ["v_copyfloat32float32"],
            }
        ],
    }
    (build / "manifest.json").write_text(json.dumps(manifest))
    code, out, _ = _run(["report", str(build), "--format", "json"], capsys)
    assert code == 0
    doc = json.loads(out)
    produced = doc["provenance"]
    assert produced["tool"] == {"name": "metallib-builder", "version": __version__}
    assert produced["library"]["format_version"] == doc["format_version"]
    assert produced["build"]["options"] == options
    assert produced["build"]["toolchain"] == {"metal": "test"}
    saved = tmp_path / "saved.json"
    saved.write_text(out)
    code, again, _ = _run(["report", str(saved), "--format", "json"], capsys)
    assert json.loads(again)["provenance"] == produced  # a saved report keeps who measured it
    for fmt in ("markdown", "table"):
        code, text, _ = _run(["report", str(build), "--format", fmt], capsys)
        flat = " ".join(text.split())
        assert (
            "measured by metallib-builder" in flat
            and "built by metallib-builder with build" in flat
        )
        assert "MLB_JIT=OFF" in text.replace("\n", "")


@pytest.mark.realdata
def test_real_provenance(mlx_metallib: Callable[[str, str], Path]) -> None:
    from builder.metallib import open_metallib
    from builder.metallib.reader import library_provenance

    path = mlx_metallib("0.32.0", "macosx_26_0_arm64")
    (report,) = load_reports(str(path))
    with open_metallib(path) as lib:
        expected: dict[str, Any] = library_provenance(lib).as_dict()
    assert report.provenance["library"] == expected
    assert expected["compilers"] and expected["compilers"][0].startswith("Apple metal version")
    line = provenance_line(report.provenance)  # Apple built it: this tool only measured it
    assert line.startswith(f"measured by metallib-builder {__version__}; metallib format 2.9;")
    assert "built by" not in line and line.count("metallib-builder") == 1
    assert f"compiler {expected['compilers'][0]}" in line
