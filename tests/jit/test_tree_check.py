"""``check`` on a discovered tree (issue 27 item 3): each entry file preprocesses, every
instantiation names a template some file it reads defines, and every run-time source compiles
as C++ in its string form; a broken file is reported and the others are still checked."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

from builder.jit.tree_check import FileCheck, TreeCheck, check_tree
from builder.kernels.tree_config import TreeConfig

HEADER = """#pragma once
#include <metal_stdlib>
using namespace metal;
template <typename T>
[[kernel]] void scale(device T* a [[buffer(0)]], uint i [[thread_position_in_grid]]) {
  a[i] = a[i] * T(2);
}
"""
GOOD = """#include "scale.h"
template [[host_name("scale_float")]] [[kernel]] decltype(scale<float>) scale<float>;
template [[host_name("scale_half")]] [[kernel]] decltype(scale<half>) scale<half>;
"""
MISSPELT = """#include "scale.h"
template [[host_name("scal_float")]] [[kernel]] decltype(scal<float>) scal<float>;
"""
BROKEN = """#include "missing.h"
kernel void k(device float* a [[buffer(0)]]) { a[0] = 1; }
"""


def tree(root: Path, **files: str) -> Path:
    root.mkdir()
    (root / "scale.h").write_text(HEADER)
    for name, text in files.items():
        (root / f"{name}.metal").write_text(text)
    return root


def by_path(result: TreeCheck) -> dict[str, FileCheck]:
    return {f.path: f for f in result.files}


def test_a_clean_tree_is_clean(tmp_path: Path) -> None:
    result = check_tree(tree(tmp_path / "t", good=GOOD), TreeConfig())
    files = by_path(result)
    assert result.ok
    assert files["good.metal"].kind == "entry file" and files["good.metal"].kernels == 2
    assert files["scale.h"].kind == "preamble" and files["scale.h"].ok


def test_each_finding_names_its_file_and_the_rest_is_checked(tmp_path: Path) -> None:
    root = tree(tmp_path / "t", good=GOOD, misspelt=MISSPELT, broken=BROKEN)
    result = check_tree(root, TreeConfig())
    files = by_path(result)
    assert not result.ok
    assert files["good.metal"].ok and files["good.metal"].kernels == 2
    [missing] = files["misspelt.metal"].findings
    assert missing.startswith("instantiates scal (1 kernel(s)), defined in no file it reads")
    [unreadable] = files["broken.metal"].findings
    assert unreadable.startswith("does not preprocess:") and "missing.h" in unreadable
    assert result.to_json()["ok"] is False


def test_a_string_form_that_does_not_compile_is_a_finding(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The real compiler judges the string form: here the generator is made to write a source
    that is not C++ (as a bug in its literal writing would), and the preamble's header is named."""
    from builder.jit import tree_check

    real = tree_check.embed_headers  # type: ignore[attr-defined]

    def broken(*args: Any, **kwargs: Any) -> Any:
        text, preambles = real(*args, **kwargs)
        return text.replace('R"', 'R"x', 1), preambles  # an unterminated raw string

    monkeypatch.setattr(tree_check, "embed_headers", broken)
    result = check_tree(tree(tmp_path / "t", good=GOOD), TreeConfig())
    [finding] = by_path(result)["scale.h"].findings
    assert finding.startswith("scale(): its string form does not compile: ")
    assert by_path(result)["good.metal"].ok and not result.ok
