"""A ``.metal`` file that is a header in all but name is not an entry file (issue 27 item 5):
llama.cpp's ``fa_common.metal`` (included by other ``.metal`` files) and candle's ``utils.metal``
(``#pragma once``, no kernel). The reference: the same tree with those files named ``.h`` has
the same kernels, and the listing names each header with why."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from clirun import run_cli

from builder.kernels.discovery import load_tree

COMMON = """#pragma once
#include <metal_stdlib>
using namespace metal;
template <typename T> T twice(T x) { return x + x; }
"""
ENTRY = """#include <metal_stdlib>
#include "{common}"
using namespace metal;
template <typename T>
[[kernel]] void twice_k(device T* a [[buffer(0)]], uint i [[thread_position_in_grid]]) {{
  a[i] = twice(a[i]);
}}
template [[host_name("twice_float")]] [[kernel]] decltype(twice_k<float>) twice_k<float>;
template [[host_name("twice_half")]] [[kernel]] decltype(twice_k<half>) twice_k<half>;
"""
UTILS = """#pragma once
// helpers only: no kernels in this file
inline float square(float x) { return x * x; }
"""
OTHER = """#include <metal_stdlib>
using namespace metal;
[[kernel]] void copy_k(device float* a [[buffer(0)]]) { a[1] = a[0]; }
"""


def make_tree(root: Path, suffix: str) -> Path:
    (root / "fa").mkdir(parents=True)
    (root / "fa" / f"common{suffix}").write_text(COMMON.replace("#pragma once\n", ""))
    (root / "fa" / "f16.metal").write_text(ENTRY.format(common=f"common{suffix}"))
    (root / "fa" / "f32.metal").write_text(
        ENTRY.format(common=f"common{suffix}").replace("twice_", "x2_")
    )
    (root / f"utils{suffix}").write_text(UTILS)
    (root / "copy.metal").write_text(OTHER)
    return root


def test_headers_named_metal_are_not_entry_files(tmp_path: Path) -> None:
    as_metal = load_tree(make_tree(tmp_path / "metal", ".metal"))
    as_h = load_tree(make_tree(tmp_path / "h", ".h"))
    assert as_metal.sources == as_h.sources == ("copy.metal", "fa/f16.metal", "fa/f32.metal")
    names = [(k.name, k.source) for k in as_metal.kernels]
    assert names == [(k.name, k.source) for k in as_h.kernels]
    assert len(names) == 5


def test_the_listing_says_which_files_are_headers_and_why(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    tree = make_tree(tmp_path / "t", ".metal")
    code, out, _ = run_cli(["kernels", "--source-dir", str(tree), "--format", "json"], capsys)
    assert code == 0
    listed = json.loads(out)
    assert listed["metal_headers"] == [
        {"source": "fa/common.metal", "why": "included by fa/f16.metal"},
        {"source": "utils.metal", "why": "#pragma once, no kernel"},
    ]
    assert [s["source"] for s in listed["sources"]] == [
        "copy.metal",
        "fa/f16.metal",
        "fa/f32.metal",
    ]
    code, out, _ = run_cli(["kernels", "--source-dir", str(tree)], capsys)
    assert code == 0 and "2 .metal files are headers, not entry files" in out
    assert "included by fa/f16.metal" in out


def test_a_pragma_once_file_that_names_a_kernel_stays_an_entry_file(tmp_path: Path) -> None:
    """The safe side: a file that says ``kernel`` is compiled, and discovery finds its kernels."""
    (tmp_path / "k.metal").write_text("#pragma once\n" + OTHER)
    assert [k.name for k in load_tree(tmp_path).kernels] == ["copy_k"]


def test_an_exclude_may_name_a_metal_header(tmp_path: Path) -> None:
    tree = make_tree(tmp_path / "t", ".metal")
    assert load_tree(tree, exclude=["utils.metal"]).sources == load_tree(tree).sources
