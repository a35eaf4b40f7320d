"""``--by param``: bytes per value of each template parameter a group's names carry (issue 36,
item 4). Held against references written here: names read by a regex of this file, the report's
own per-function bytes summed here, and the Metal spec's scalar names for torch's dtypes."""

from __future__ import annotations

import csv
import io
import json
import re
from collections import defaultdict
from collections.abc import Callable
from pathlib import Path
from typing import Any, NamedTuple

import pytest
from support.real_wheels import libraries_or_skip

from builder.kernels.dtypes import NAME_SPELLINGS
from builder.publish.outputs import report_output
from builder.render.param_tables import NO_PARAMETER, parameter_table
from builder.render.table_csv import csv_records
from builder.size.load import load_reports
from builder.size.params import parse_name
from builder.size.report import Report

MAC_14 = "macosx_14_0_arm64"


@pytest.mark.parametrize(
    ("name", "group", "values"),
    [
        (
            "steel_gemm_fused_nn_float16_float16_bm64_bn64_bk16_wm2_wn2",
            "steel_gemm_fused_nn",
            [("dtype", "float16"), ("bm", "64"), ("bn", "64"), ("bk", "16"), ("wm", "2")]
            + [("wn", "2")],
        ),
        (  # a mask's type is its own parameter, named by the word before it
            "steel_gemm_block_outmask_bool__opmask_nomask_tt_float32_float32_bm64_MN_taligned",
            "steel_gemm_block_tt",
            [("dtype", "float32"), ("outmask", "bool"), ("opmask", "nomask"), ("bm", "64")]
            + [("MN", "taligned")],
        ),
        (
            "affine_qmv_float16_t_gs_32_b_4",
            "affine_qmv",
            [("dtype", "float16"), ("gs", "32"), ("b", "4")],
        ),
        ("v_copyfloat16float32", "v_copy", [("dtype", "float16,float32")]),
        ("gt_strided_bool_half", "gt_strided", [("dtype", "bool,float16")]),
        (  # digits of an op name, before the first dtype, stay in the group
            "bessel_j0_forward_strided_float_float",
            "bessel_j0_forward_strided",
            [("dtype", "float32")],
        ),
        ("log2_dense_half_half", "log2_dense", [("dtype", "float16")]),
        (
            "sdpa_vector_half_128_64_maskhalf",
            "sdpa_vector",
            [("dtype", "float16"), ("#1", "128"), ("#2", "64"), ("mask", "float16")],
        ),
        (
            "radix_scatter_ushort_8bit_u16",
            "radix_scatter",
            [("dtype", "uint16"), ("bit", "8"), ("u", "16")],
        ),
        ("mykernel_bm64", "mykernel", [("bm", "64")]),
        ("factorDiagonalPanelU", "factorDiagonalPanelU", []),
    ],
)
def test_a_name_is_its_group_and_its_parameters(
    name: str, group: str, values: list[tuple[str, str]]
) -> None:
    parsed = parse_name(name)
    assert (parsed.group, list(parsed.values)) == (group, values)


def test_every_dtype_spelling_is_one_dtype_value() -> None:
    """Each spelling the dtype vocabulary knows, as a token of a name, is read whole as its
    canonical word, and the parameter after it is still read (a spelling with ``_`` in it,
    ``float16_t``, ``bool_``, is not cut)."""
    for spelling, word in NAME_SPELLINGS.items():
        parsed = parse_name(f"kern_{spelling}_bm64")
        assert (parsed.group, parsed.values) == ("kern", (("dtype", word), ("bm", "64"))), spelling


def _values(doc: dict[str, Any], group: str) -> dict[str, dict[str, int]]:
    """The report's JSON: ``group``'s parameters, each value's bytes."""
    (found,) = [g for g in doc["parameters"] if g["group"] == group]
    return {p["name"]: {v["value"]: v["bytes"] for v in p["values"]} for p in found["parameters"]}


def _adds_up(doc: dict[str, Any]) -> None:
    """Every parameter's values add up to its group, in bytes and functions, and each group to
    its functions' bytes as the report lists them."""
    sizes: dict[str, int] = defaultdict(int)
    for f in doc["functions"]:
        sizes[f["group"]] += f["bytes"]
    assert {g["group"]: g["bytes"] for g in doc["parameters"]} == sizes
    for group in doc["parameters"]:
        for parameter in group["parameters"]:
            values = parameter["values"]
            assert sum(v["bytes"] for v in values) == group["bytes"], parameter["name"]
            assert sum(v["function_count"] for v in values) == group["function_count"]


class Measured(NamedTuple):
    report: Report
    doc: dict[str, Any]


def _measured(spec: str, member: str | None = None) -> Measured:
    libraries_or_skip(spec, MAC_14)
    (report,) = load_reports(spec, by="param", platform=MAC_14, member=member)
    return Measured(report, json.loads(report_output([report], "json", None, False, None)))


@pytest.fixture(scope="module")
def mlx() -> Measured:
    return _measured("mlx-metal==0.32.1")


@pytest.fixture(scope="module")
def torch() -> Measured:
    return _measured("torch==2.14.1", "__TEXT,metal_basic")


FUSED = re.compile(
    r"steel_gemm_fused_nn_(?P<a>[a-z0-9]+)_(?P<b>[a-z0-9]+)"
    r"_bm(?P<bm>\d+)_bn(?P<bn>\d+)_bk(?P<bk>\d+)_wm(?P<wm>\d+)_wn(?P<wn>\d+)"
)


@pytest.mark.realdata
def test_steel_gemm_parameters_add_up_to_the_group(mlx: Measured) -> None:
    """MLX's fused GEMM: the group holds exactly the names the regex reads, and each value's
    bytes are the bytes of the functions whose names carry it."""
    matched = [(FUSED.fullmatch(f["name"]), f) for f in mlx.doc["functions"]]
    fused = [(m, f) for m, f in matched if m is not None]
    assert len(fused) > 20
    members = {f["name"] for f in mlx.doc["functions"] if f["group"] == "steel_gemm_fused_nn"}
    assert members == {f["name"] for _, f in fused}
    expected: dict[str, dict[str, int]] = defaultdict(lambda: defaultdict(int))
    for m, f in fused:
        a, b = m["a"], m["b"]
        expected["dtype"][a if a == b else f"{a},{b}"] += f["bytes"]
        for key in ("bm", "bn", "bk", "wm", "wn"):
            expected[key][m[key]] += f["bytes"]
    found = _values(mlx.doc, "steel_gemm_fused_nn")
    assert found == expected
    total = sum(f["bytes"] for _, f in fused)
    assert all(sum(v.values()) == total for v in found.values())
    assert len(found["bm"]) > 1 and len(found["dtype"]) > 2  # more than one value to drop
    _adds_up(mlx.doc)


# The Metal Shading Language's scalar type names (MSL specification, table 2.1), as torch spells
# its kernels' dtypes, and the word each stands for.
MSL = {
    "bool": "bool",
    "char": "int8",
    "uchar": "uint8",
    "short": "int16",
    "int": "int32",
    "long": "int64",
    "half": "float16",
    "bfloat": "bfloat16",
    "float": "float32",
}


@pytest.mark.realdata
def test_torch_names_give_dtype_values(torch: Measured) -> None:
    """torch's comparison ``gt`` on strided tensors: a bool output and an input of each type;
    its group's one parameter is the dtype, one value per input type."""
    read = re.compile(r"gt_strided_bool_([a-z]+)")
    expected: dict[str, int] = defaultdict(int)
    for f in torch.doc["functions"]:
        m = read.fullmatch(f["name"])
        if m is not None:
            dtype = MSL[m[1]]
            expected["bool" if dtype == "bool" else f"bool,{dtype}"] += f["bytes"]
    assert len(expected) == len(MSL)
    assert _values(torch.doc, "gt_strided") == {"dtype": expected}
    _adds_up(torch.doc)


@pytest.mark.realdata
def test_a_group_with_no_parameter_says_so(torch: Measured) -> None:
    """torch's ``factorDiagonalPanelU`` carries no parameter: JSON lists none, and the table
    says so under its row, with the group's bytes."""
    assert _values(torch.doc, "factorDiagonalPanelU") == {}
    table = parameter_table(torch.report, None)
    assert table is not None
    names = [row.values[0] for row in table.rows]
    at = names.index("factorDiagonalPanelU")
    (size,) = [f["bytes"] for f in torch.doc["functions"] if f["name"] == "factorDiagonalPanelU"]
    said = table.rows[at + 1]
    assert (said.values[0], said.depth, table.value(said, "bytes")) == (NO_PARAMETER, 1, size)


def test_the_table_writes_the_report_in_every_format(
    write_metallib: Callable[..., Path],
) -> None:
    """Text, markdown and CSV show the values the JSON holds (the generic check of every table
    is tests/render/test_writers_agree.py; here: the values, each a CSV record)."""
    spec = [
        ("k_float16_bm64", 300),
        ("k_float16_bm32", 200),
        ("k_float32_bm64", 500),
        ("plain", 90),
    ]
    (report,) = load_reports(str(write_metallib("p.metallib", spec)), by="param")
    doc = json.loads(report_output([report], "json", None, False, None))
    size = {f["name"]: f["bytes"] for f in doc["functions"]}
    expected = {
        ("k", "dtype", "float16"): size["k_float16_bm64"] + size["k_float16_bm32"],
        ("k", "dtype", "float32"): size["k_float32_bm64"],
        ("k", "bm", "64"): size["k_float16_bm64"] + size["k_float32_bm64"],
        ("k", "bm", "32"): size["k_float16_bm32"],
    }
    assert expected == {
        ("k", name, value): found
        for name, values in _values(doc, "k").items()
        for value, found in values.items()
    }
    table = parameter_table(report, None)
    assert table is not None
    records = list(csv.reader(io.StringIO(csv_records([table]))))
    header = records[0]
    rows = [dict(zip(header, r)) for r in records[1:]]
    cut = {(r["group"], r["parameter"], r["value"]): int(r["bytes"]) for r in rows if r["value"]}
    assert cut == expected
    text = report_output([report], "table", None, False, None)
    assert "bm=64" in text and NO_PARAMETER in text
    markdown = report_output([report], "markdown", None, False, None)
    assert "`bm=32`" in markdown and "Template parameters of" in markdown


def test_a_saved_report_gives_its_parameters_again(
    write_metallib: Callable[..., Path], tmp_path: Path
) -> None:
    """The parameters are derived from the functions: a saved report read back has the same."""
    spec = [("k_float16_bm64", 300), ("k_float32_bm32", 200), ("plain", 90)]
    (report,) = load_reports(str(write_metallib("p.metallib", spec)), by="param")
    saved = tmp_path / "report.json"
    saved.write_text(report_output([report], "json", None, False, None))
    (again,) = load_reports(str(saved), by="param")
    assert again.source.kind == "report" and again.parameters == report.parameters
    assert report.parameters is not None and len(report.parameters) == 2


def test_kernel_param_gives_a_kernel_groups_parameters(
    write_metallib: Callable[..., Path],
) -> None:
    """``--by kernel,param``: the parameters of each kernel group (MLX's rules put every steel
    GEMM in ``gemm``), a value's bytes those of the group's names that carry it, ``none`` the
    rest; read here with a regex of this file."""
    spec = [
        ("steel_gemm_fused_nn_float16_float16_bm64_bn64_bk16_wm2_wn2", 400),
        ("steel_gemm_fused_nn_float32_float32_bm32_bn32_bk16_wm2_wn2", 300),
        ("steel_gemm_splitk_nn_float16_float32_bm32_bn32_bk16_wm2_wn2_MN_taligned_K_naligned", 200),
        ("steel_gemm_splitk_accum_float32_axbpy", 50),
        ("v_copyfloat32float32", 100),
        ("vv_Addfloat16", 100),
    ]
    (report,) = load_reports(str(write_metallib("g.metallib", spec)), by="kernel,param")
    doc = json.loads(report_output([report], "json", None, False, None))
    gemm = [f for f in doc["functions"] if f["group"] == "gemm"]
    assert len(gemm) == 4  # the MLX rules' group
    expected: dict[str, int] = defaultdict(int)
    for f in gemm:
        m = re.search(r"_bm(\d+)_", f["name"])
        expected[m[1] if m else "none"] += f["bytes"]
    assert _values(doc, "gemm")["bm"] == expected
    assert set(expected) == {"64", "32", "none"}
    _adds_up(doc)
