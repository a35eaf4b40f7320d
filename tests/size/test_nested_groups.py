"""``report --by A,B``: the groups of the first key, each split into the groups of the second
(issue 19, item 3), in every format; and tables that never cut a function name off a terminal.

The references are computed here from the report's own per-function rows (name, bytes, labels),
never from its groups: a group's children must add up to it for every measure, and each child
must hold exactly the functions that carry both labels. The library is mlx-metal 0.32.0's real
metallib; the kernel tree is tests/data/mlx_style over the headers that wheel ships.
"""

from __future__ import annotations

import csv
import io
import json
import re
from collections import Counter, defaultdict
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest
from clirun import run_cli
from mlx_tree import MLX_PLATFORM, MLX_VERSION

MEASURES = ("function_count", "bytes", "bitcode_bytes")


def _sums(doc: dict[str, Any], measures: tuple[str, ...]) -> dict[tuple[str, str], Counter[str]]:
    """Per (group, subgroup): each measure summed over the functions carrying both labels."""
    sums: dict[tuple[str, str], Counter[str]] = defaultdict(Counter)
    for fn in doc["functions"]:
        found = sums[fn["group"], fn["subgroup"]]
        found["function_count"] += 1
        for measure in measures:
            if measure != "function_count":
                found[measure] += fn[measure]
    return sums


def _check_children(doc: dict[str, Any], measures: tuple[str, ...]) -> None:
    sums = _sums(doc, measures)
    pairs = set()
    for group in doc["groups"]:
        children = group["children"]
        assert children, group["name"]
        for measure in measures:  # the children add up to their parent, measure by measure
            assert sum(c[measure] for c in children) == group[measure], (group["name"], measure)
        for child in children:
            pairs.add((group["name"], child["name"]))
            assert set(child) == set(group) - {"children"}  # same fields, one level down
            for measure in measures:
                assert child[measure] == sums[group["name"], child["name"]][measure]
        sizes = [(-c["bytes"], c["name"]) for c in children]
        assert sizes == sorted(sizes)  # largest first, ties by name
    assert pairs == set(sums)
    assert sum(g["bytes"] for g in doc["groups"]) + doc["overhead_bytes"] == doc["file_size"]


def _flat(doc: dict[str, Any]) -> dict[str, str]:
    return {f["name"]: f["group"] for f in doc["functions"]}


@pytest.mark.realdata
@pytest.mark.slow
def test_by_source_dtype_on_a_real_library_adds_up_with_download(
    mlx_metallib: Callable[[str, str], Path],
    mlx_style: Path,
    mlx_headers: Path,
    capsys: pytest.CaptureFixture[str],
) -> None:
    library = mlx_metallib(MLX_VERSION, MLX_PLATFORM)
    tree = ["--source-dir", str(mlx_style), "-I", str(mlx_headers)]
    code, out, err = run_cli(
        ["report", str(library), *tree, "--by", "source,dtype", "--download", "--format", "json"],
        capsys,
    )
    assert code == 0, err
    doc = json.loads(out)
    assert (doc["by"], doc["grouping"], doc["subgrouping"]) == (
        "source,dtype",
        f"discovery:{mlx_style}",
        "dtype",
    )
    _check_children(doc, (*MEASURES, "download_bytes"))
    # the nesting agrees with each key alone: same first labels as --by source, same second
    # labels as --by dtype, and the same groups at the top
    code, out, err = run_cli(["report", str(library), *tree, "--format", "json"], capsys)
    assert code == 0, err
    by_source = json.loads(out)
    code, out, err = run_cli(["report", str(library), "--by", "dtype", "--format", "json"], capsys)
    assert code == 0, err
    by_dtype = json.loads(out)
    assert _flat(doc) == _flat(by_source)
    assert {f["name"]: f["subgroup"] for f in doc["functions"]} == _flat(by_dtype)
    assert [{k: g[k] for k in MEASURES} | {"name": g["name"]} for g in doc["groups"]] == [
        {k: g[k] for k in MEASURES} | {"name": g["name"]} for g in by_source["groups"]
    ]
    assert len({g["name"] for g in doc["groups"]}) > 3  # several entry files, and "other"


@pytest.fixture(scope="module")
def kernel_dtype(
    mlx_metallib: Callable[[str, str], Path], tmp_path_factory: pytest.TempPathFactory
) -> dict[str, Any]:
    """``report --by kernel,dtype --top 0`` of mlx-metal 0.32.0 in every format, from one run."""
    from builder.cli.group import main

    library = mlx_metallib(MLX_VERSION, MLX_PLATFORM)
    folder = tmp_path_factory.mktemp("nested")
    files = {ext: folder / f"r.{ext}" for ext in ("json", "csv", "md", "txt", "html")}
    outputs = [arg for path in files.values() for arg in ("-o", str(path))]
    assert main(["report", str(library), "--by", "kernel,dtype", "--top", "0", *outputs]) in (
        0,
        None,
    )
    texts = {ext: path.read_text(encoding="utf-8") for ext, path in files.items()}
    return {"library": library, "doc": json.loads(texts["json"]), **texts}


@pytest.mark.realdata
def test_kernel_dtype_json_children_add_up(kernel_dtype: dict[str, Any]) -> None:
    doc = kernel_dtype["doc"]
    assert (doc["by"], doc["subgrouping"]) == ("kernel,dtype", "dtype")
    assert doc["file_size"] == kernel_dtype["library"].stat().st_size
    _check_children(doc, MEASURES)
    assert any(len(g["children"]) > 1 for g in doc["groups"])


@pytest.mark.realdata
def test_kernel_dtype_csv_has_a_row_per_group_and_subgroup(kernel_dtype: dict[str, Any]) -> None:
    doc = kernel_dtype["doc"]
    rows = list(csv.DictReader(io.StringIO(kernel_dtype["csv"])))
    leaves = {(r["group"], r["subgroup"]): r for r in rows if r["subgroup"]}
    sums = _sums(doc, MEASURES)
    assert set(leaves) == set(sums)
    for key, row in leaves.items():
        assert (int(row["function_count"]), int(row["bytes"])) == (
            sums[key]["function_count"],
            sums[key]["bytes"],
        )
    assert sum(int(r["bytes"]) for r in rows) == doc["file_size"]  # leaves + overhead = the file


def _child_lines(
    lines: list[str], parent: re.Pattern[str], child: re.Pattern[str]
) -> dict[str, list[str]]:
    """Each parent row's name and the child rows right under it (in the order shown)."""
    found: dict[str, list[str]] = {}
    current = None
    for line in lines:
        if (match := child.search(line)) and current is not None:
            found[current].append(match.group(1))
        elif match := parent.search(line):
            current = match.group(1)
            found[current] = []
        else:
            current = None
    return found


def _expected(doc: dict[str, Any]) -> dict[str, list[str]]:
    return {g["name"]: [c["name"] for c in g["children"]] for g in doc["groups"]}


@pytest.mark.realdata
def test_kernel_dtype_markdown_and_table_nest(kernel_dtype: dict[str, Any]) -> None:
    expected = _expected(kernel_dtype["doc"])
    markdown = _child_lines(
        kernel_dtype["md"].splitlines(),
        re.compile(r"^\| `([^`]+)` \|"),
        re.compile(r"^\| ↳ `([^`]+)` \|"),
    )
    assert markdown == expected
    table = _child_lines(
        kernel_dtype["txt"].splitlines(), re.compile(r"^│ (\S+) +│"), re.compile(r"^│   └ (\S+) +│")
    )
    assert {k: v for k, v in table.items() if k in expected} == expected


@pytest.mark.realdata
def test_kernel_dtype_html_embeds_the_second_key(kernel_dtype: dict[str, Any]) -> None:
    doc = kernel_dtype["doc"]
    match = re.search(
        r'<script type="application/json" id="report-data">(.*?)</script>',
        kernel_dtype["html"],
        re.DOTALL,
    )
    assert match is not None
    (lib,) = json.loads(match.group(1))["libraries"]
    assert (lib["by"], lib["subgroup_by"], lib["subgrouping"]) == ("kernel,dtype", "dtype", "dtype")
    fn = lib["fn"]
    shown = [
        (name, lib["groups"][g], lib["subgroups"][s])
        for name, g, s in zip(fn["name"], fn["group"], fn["subgroup"])
    ]
    assert shown == [(f["name"], f["group"], f["subgroup"]) for f in doc["functions"]]


def test_saved_nested_report_reads_back_and_regroups(
    write_metallib: Callable[..., Path], tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    library = write_metallib(
        "small.metallib",
        [
            ("v_copyfloat32float32", 400),
            ("v_copyfloat16float16", 300),
            ("vv_Addfloat32", 500),
            ("vv_Addfloat16", 250),
            ("rope_float32", 700),
            ("rope_bfloat16", 650),
        ],
    )
    code, out, err = run_cli(
        ["report", str(library), "--by", "kernel, dtype", "--format", "json"], capsys
    )
    assert code == 0, err
    doc = json.loads(out)
    assert doc["by"] == "kernel,dtype"  # one spelling
    _check_children(doc, MEASURES)
    saved = tmp_path / "saved.json"
    saved.write_text(out)
    code, out, err = run_cli(
        ["report", str(saved), "--by", "kernel,dtype", "--format", "json"], capsys
    )
    assert code == 0, err
    assert json.loads(out)["groups"] == doc["groups"]
    code, out, err = run_cli(["report", str(saved), "--by", "dtype", "--format", "json"], capsys)
    assert code == 0, err
    flat = json.loads(out)
    assert "subgrouping" not in flat and all("children" not in g for g in flat["groups"])
    by_dtype: Counter[str] = Counter()
    for fn in doc["functions"]:
        by_dtype[fn["subgroup"]] += fn["bytes"]
    assert {g["name"]: g["bytes"] for g in flat["groups"]} == dict(by_dtype)
    del doc["subgrouping"]  # a hand-edited report whose keys disagree is refused, exit 2
    saved.write_text(json.dumps(doc))
    code, out, err = run_cli(["report", str(saved), "--format", "json"], capsys)
    assert code == 2 and out == ""
    assert err.count("\n") == 1 and "subgrouping" in err and str(saved) in err


@pytest.mark.parametrize(
    "argv",
    [
        ["compare", "{lib}", "{lib}", "--by", "kernel,dtype"],
        ["report", "{lib}", "--by", "kernel,kernel"],
        ["report", "{lib}", "--by", "kernel,dtype,function"],
        ["report", "{lib}", "--by", "kernel,size"],
    ],
)
def test_refused_by_keys_say_so_in_one_line(
    argv: list[str], write_metallib: Callable[..., Path], capsys: pytest.CaptureFixture[str]
) -> None:
    library = write_metallib("one.metallib", [("rope_float32", 700)])
    code, out, err = run_cli([a.format(lib=library) for a in argv], capsys)
    assert code == 2 and out == ""
    assert err.count("\n") == 1 and argv[-1] in err, err


def test_tables_off_a_terminal_never_cut_a_function_name(
    write_metallib: Callable[..., Path], capsys: pytest.CaptureFixture[str]
) -> None:
    long = "steel_gemm_fused_" + "_".join(f"param{i}x{i * 7}" for i in range(18)) + "_float16"
    assert len(long) > 200
    base = write_metallib("base.metallib", [(long, 900), ("rope_float32", 700)])
    head = write_metallib("head.metallib", [(long, 1900), ("rope_float32", 700)])
    for argv in (
        ["report", str(head), "--by", "function"],
        ["compare", str(base), str(head), "--by", "function"],
    ):
        code, out, err = run_cli(argv, capsys)  # stdout is captured: not a terminal
        assert code == 0, err
        rows = [line for line in out.splitlines() if long in line]
        assert len(rows) == 1, out  # whole, on one line
        assert "…" not in out


def test_one_function_row_in_the_code() -> None:
    """Issue 19 item 5: the function-row concept is defined once (``builder.size.rollup``)."""
    root = Path(__file__).resolve().parents[2] / "builder"
    found = [
        str(p.relative_to(root))
        for p in root.rglob("*.py")
        if re.search(r"^class FunctionRow\b", p.read_text(encoding="utf-8"), re.MULTILINE)
    ]
    assert found == ["size/rollup.py"]
