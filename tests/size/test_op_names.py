"""What torch's names say, in torch's own words (issue 36, items 1-3): op names with digits keep
their op, groups are ops with their layout folded in (a finer level, ``--by stem``, below them),
and float8 names are their dtype. The references are written here: the op names with digits
listed in ../shared/REAL_DATA.md (torch 2.14.1's ``metal_basic``), a list of torch's elementwise
ops whose kernels come in several layouts, and float8 names spelled as PyTorch spells the types
(``c10/metal/float8.h``). Each torch library is reported once per version (module-scoped), on
torch 2.14.1 and 2.12.1."""

from __future__ import annotations

import json
import re
from collections import Counter, defaultdict
from pathlib import Path
from typing import Any

import pytest
from synthetic import synthetic_bytes

from builder.cli.group import main

PLATFORM = "macosx_14_0_arm64"
MEMBER = "__TEXT,metal_basic"

DIGIT_OPS = ["atan2", "exp2", "expm1", "log10", "log2", "i0", "i1"]
DIGIT_OPS += [f"bessel_{k}" for k in ("j0", "j1", "y0", "y1")]
DIGIT_OPS += [f"modified_bessel_{k}" for k in ("i0", "i1", "k0", "k1")]
"""Torch's op names with digits (../shared/REAL_DATA.md), each a run of whole words."""

LAYOUT_OPS = ["abs", "neg", "sqrt", "sin", "atan2", "exp2", "expm1", "log10", "log2", "i0"]
LAYOUT_OPS += ["add", "mul", "copysign", "fmod", "lerp_alpha", "bessel_j0_forward"]
"""Torch elementwise ops whose kernels come as ``OP_dense_...``, ``OP_strided_...`` and
``OP_inner_contiguous_...`` (and their ``scalar``/``broadcast``/``cast`` forms)."""


def _holds(words: str, name: str) -> bool:
    """Whether ``words`` stands in ``name`` as whole ``_``-separated words."""
    return re.search(rf"(?:^|_){re.escape(words)}(?:_|$)", name) is not None


def _report(args: list[str], out: Path) -> Any:
    assert main(["report", *args, "--format", "json", "-o", str(out)]) in (0, None)
    doc = json.loads(out.read_text(encoding="utf-8"))
    libraries: list[Any] = doc.get("libraries", [doc])
    (library,) = libraries
    return library


@pytest.fixture(scope="module", params=["torch==2.14.1", "torch==2.12.1"])
def torch(request: pytest.FixtureRequest, tmp_path_factory: pytest.TempPathFactory) -> Any:
    """``report --by kernel,stem`` of torch's ``metal_basic`` library (JSON), with its spec."""
    from support.real_wheels import libraries_or_skip

    spec: str = request.param
    libraries_or_skip(spec, PLATFORM)
    out = tmp_path_factory.mktemp("torch") / "report.json"
    args = [spec, "--platform", PLATFORM, "--member", MEMBER, "--by", "kernel,stem"]
    return {"spec": spec, **_report(args, out)}


@pytest.mark.realdata
def test_names_with_digits_keep_their_op(torch: Any) -> None:
    """No group's name lost the op its functions' names hold: the share of bytes in groups whose
    name is not one of the op names with digits its functions carry is 0, and ``atan2`` is a
    group holding exactly the functions whose names start with it."""
    functions = torch["functions"]
    assert torch["grouping"] == "generic"
    lost = {f["group"] for f in functions for op in DIGIT_OPS if _holds(op, f["name"])}
    lost = {g for g in lost if not any(_holds(op, g) for op in DIGIT_OPS)}
    lost_bytes = sum(f["bytes"] for f in functions if f["group"] in lost)
    assert lost_bytes / sum(f["bytes"] for f in functions) == 0, sorted(lost)[:10]
    # every name holding a digit op is in a group holding that op (a truncation is no op)
    for op in DIGIT_OPS:
        groups = {f["group"] for f in functions if _holds(op, f["name"])}
        assert groups, op  # the reference list is torch's
        assert all(_holds(op, g) for g in groups), (op, groups)
    atan2 = {f["name"] for f in functions if f["group"] == "atan2"}
    assert atan2 == {f["name"] for f in functions if f["name"].startswith("atan2_")}
    assert len(atan2) > 100


@pytest.mark.realdata
def test_kernel_groups_are_ops_with_their_layouts(torch: Any) -> None:
    """Every ``abs_dense_*``, ``abs_strided_*`` and ``abs_inner_contiguous_*`` function is in one
    group, ``abs``, and so for each op of the list; ``--by kernel,stem`` lists the layouts under
    it, each child holding the functions of one stem, the children adding up to the group."""
    functions = torch["functions"]
    groups = {g["name"]: g for g in torch["groups"]}
    for op in LAYOUT_OPS:
        layout = re.compile(rf"{op}_(dense|strided|inner_contiguous)_")
        mine = [(f, layout.match(f["name"])) for f in functions]
        layouts = {m.group(1) for f, m in mine if m}
        assert {"dense", "strided"} <= layouts, op
        assert {f["group"] for f, m in mine if m} == {op}
        children = groups[op]["children"]
        assert sum(c["bytes"] for c in children) == groups[op]["bytes"]
        assert {f"{op}_{word}" for word in layouts} <= {c["name"] for c in children}
        by_stem: Counter[str] = Counter()
        for f in functions:
            if f["group"] == op:
                by_stem[f["subgroup"]] += f["bytes"]
        assert {c["name"]: c["bytes"] for c in children} == dict(by_stem)


@pytest.mark.realdata
def test_a_budget_on_an_op_with_digits(torch: Any, tmp_path: Path) -> None:
    """A budget on ``atan2`` finds its group and measures the report's bytes of it (a limit one
    byte below them fails, exit 1), where it exited 2 ("no group") when the op was dropped."""
    atan2 = next(g["bytes"] for g in torch["groups"] if g["name"] == "atan2")
    budget = tmp_path / "metallib-size.toml"
    budget.write_text(
        f'[[budget]]\ntarget = "{torch["spec"]}"\nplatform = "{PLATFORM}"\n'
        f'member = "{MEMBER}"\nby = "kernel"\ngroups = {{ atan2 = "{atan2 - 1}B" }}\n',
        encoding="utf-8",
    )
    out = tmp_path / "budget.json"
    assert _exit_code(["budget", str(budget), "--format", "json", "-o", str(out)]) == 1
    verdicts = json.loads(out.read_text(encoding="utf-8"))["verdicts"]
    (verdict,) = [v for v in verdicts if v["key"] == "groups"]
    assert (verdict["group"], verdict["value"], verdict["passed"]) == ("atan2", atan2, False)


def _exit_code(args: list[str]) -> int:
    try:
        found = main(args)
    except SystemExit as exc:
        return exc.code if isinstance(exc.code, int) else 1
    return int(found or 0)


FLOAT8_NAMES = {  # name -> the dtype it computes in, written from PyTorch's spellings
    "lt_dense_bool_float8_e4m3fn": "float8_e4m3fn",  # a comparison's bool result, then its input
    "eq_strided_cast_bool_float8_e5m2": "float8_e5m2",
    "copy_dense_float8_e4m3fnuz_float8_e4m3fnuz": "float8_e4m3fnuz",
    "copy_strided_float8_e5m2fnuz_int": "float8_e5m2fnuz",
    "logical_and_dense_bool_float8_e8m0fnu": "float8_e8m0fnu",
    "lt_dense_bool_bfloat": "bfloat16",  # the rule is bool's, not float8's
    "logical_not_dense_bool_bool": "bool",
    "angle_dense_half2_half2": "complex32",
    "pack_uint4_float": "uint4",  # the 4-bit type, not Metal's vector of four uints
}


def test_float8_names_are_their_dtype(tmp_path: Path) -> None:
    """``--by dtype`` puts each float8 name in its float8 dtype, not in bool, none or int, and a
    name with several dtypes in the one it computes in (docs/report-schema.md, "Naming rules")."""
    library = tmp_path / "float8.metallib"
    spec = [(name, 64 + 8 * i) for i, name in enumerate(FLOAT8_NAMES)]
    library.write_bytes(synthetic_bytes(spec))
    doc = _report([str(library), "--by", "dtype"], tmp_path / "dtype.json")
    assert {f["name"]: f["group"] for f in doc["functions"]} == FLOAT8_NAMES
    sums: defaultdict[str, int] = defaultdict(int)
    for f in doc["functions"]:
        sums[f["group"]] += f["bytes"]
    assert {g["name"]: g["bytes"] for g in doc["groups"]} == dict(sums)
    kernel = _report([str(library), "--by", "kernel"], tmp_path / "kernel.json")
    ops = {f["name"]: f["group"] for f in kernel["functions"]}
    assert ops["lt_dense_bool_float8_e4m3fn"] == "lt"  # float8 words go with the dtype
    assert ops["copy_strided_float8_e5m2fnuz_int"] == "copy"
