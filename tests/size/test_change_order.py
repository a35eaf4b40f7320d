"""compare lists groups by what changed: the largest absolute delta first (growth and shrinkage
alike), unchanged groups last, in the table, the markdown and the JSON."""

from __future__ import annotations

import json
import re
from collections.abc import Callable
from pathlib import Path

import pytest
from clirun import run_cli

BASE = [
    ("v_copyfloat32float32", 3000),
    ("vv_Addfloat32", 500),
    ("arange_float32", 9000),
    ("steel_gemm_fused_nn_float16_float16_bm64_bn64", 8000),
]
HEAD = [
    ("v_copyfloat32float32", 3000),  # copy: unchanged, and the largest group
    ("vv_Addfloat32", 650),  # binary: grew a little
    ("arange_float32", 4000),  # arange: shrank a lot
    ("steel_gemm_fused_nn_float16_float16_bm64_bn64", 8000),  # gemm: unchanged
    ("rope_float32", 2000),
]  # rope: new


def test_groups_by_absolute_delta_unchanged_last(
    write_metallib: Callable[..., Path], capsys: pytest.CaptureFixture[str]
) -> None:
    base, head = write_metallib("a.metallib", BASE), write_metallib("b.metallib", HEAD)
    code, out, _ = run_cli(["compare", str(base), str(head), "--format", "json"], capsys)
    assert code == 0
    groups = [g for g in json.loads(out)["groups"] if not g["overhead"]]
    deltas = {g["name"]: g["delta_bytes"] for g in groups}
    assert deltas["arange"] < 0 < deltas["binary"] < deltas["rope"] < -deltas["arange"]
    assert deltas["copy"] == deltas["gemm"] == 0
    expected = ["arange", "rope", "binary", "gemm", "copy"]  # ties: larger head first
    assert [g["name"] for g in groups] == expected
    _, out, _ = run_cli(["compare", str(base), str(head), "--format", "markdown"], capsys)
    assert re.findall(r"^\| `(\w+)` \|", out, re.MULTILINE)[:5] == expected
    _, out, _ = run_cli(["compare", str(base), str(head)], capsys)
    rows = re.findall(r"^│ (\w+) +│", out, re.MULTILINE)
    assert [r for r in rows if r in expected] == expected
