"""``check --source-dir`` on a tree without catalog.json (issue 27 item 3): the same tree options
as ``kernels``, per-file results, exit 1 on a finding and 0 when clean, never "not a kernel
source tree" for a folder ``kernels`` accepts."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from clirun import run_cli as run

HEADER = """#pragma once
#include <metal_stdlib>
using namespace metal;
template <typename T>
[[kernel]] void twice(device T* a [[buffer(0)]], uint i [[thread_position_in_grid]]) {
  a[i] = a[i] + a[i];
}
"""
ENTRY = """#include "{include}"
template [[host_name("twice_float")]] [[kernel]] decltype(twice<float>) twice<float>;
"""


def tree(root: Path, include: str = "inc/twice.h") -> Path:
    (root / "kernels").mkdir(parents=True)
    (root / "inc").mkdir()
    (root / "inc" / "twice.h").write_text(HEADER)
    (root / "kernels" / "twice.metal").write_text(ENTRY.format(include=include))
    return root / "kernels"


def test_a_clean_tree_exits_0_with_the_tree_options(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    kernels = tree(tmp_path)
    code, out, err = run(["check", "--source-dir", str(kernels), "-I", str(tmp_path)], capsys)
    assert code == 0, err
    assert "twice.metal: entry file, 1 kernels: ok" in out
    assert "inc/twice.h" in out or "twice.h" in out
    code, out, _ = run(
        ["check", "--source-dir", str(kernels), "-I", str(tmp_path), "--format", "json"], capsys
    )
    doc = json.loads(out)
    assert code == 0 and doc["ok"] and doc["kind"] == "discovered"
    assert [f["path"] for f in doc["files"] if f["kind"] == "entry file"] == ["twice.metal"]


def test_a_finding_exits_1_and_names_the_file(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    kernels = tree(tmp_path)
    code, out, err = run(["check", "--source-dir", str(kernels)], capsys)  # no -I: not found
    assert code == 1
    assert "twice.metal: entry file, 0 kernels: FAILED" in out
    assert "does not preprocess" in out and "inc/twice.h" in out
    assert "not a kernel source tree" not in out + err


def test_catalog_only_options_are_refused_on_a_discovered_tree(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    kernels = tree(tmp_path)
    code, _, err = run(["check", "--source-dir", str(kernels), "--kernels", "unary"], capsys)
    assert code == 2 and "apply to catalog trees" in err and "no catalog.json" in err
    code, _, err = run(["check", "--source-dir", str(tmp_path / "nope")], capsys)
    assert code == 2 and "not a folder" in err
    code, _, err = run(["check", "-I", str(tmp_path)], capsys)
    assert code == 2 and "catalog tree" in err
