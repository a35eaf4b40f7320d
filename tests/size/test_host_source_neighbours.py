"""A run-time source is named by its own first lines only (issue 33 item 19): a source that
names no header and lies right before one that does (MLX's CPU preamble beside the Metal
ones) keeps the binary's name; reading past its NUL would give it its neighbour's header.

The independent side: each function's string, its file offset and bytes, extracted with LLVM's
tools (``support.llvm_strings``); the test first checks that the two strings are neighbours in
``__TEXT,__cstring`` and the first is shorter than the 4 KiB a header is looked for in, so a read
past its end would reach the second one's header."""

from __future__ import annotations

import json
import re
from pathlib import Path

import pytest
from clirun import run_cli
from support.llvm_strings import mlx_style_host

HOST = r"""
namespace mlx { namespace core { namespace metal {
const char* plain() { return "// names no header\nstruct P { metal::uint x; };\n"; }
const char* gather() {
  return "// Auto generated source for mlx/backend/metal/kernels/indexing/gather.h\n"
         "struct G {};\n";
}
const char* marked() { return "#line 1 \"utils.h\"\nconstant int one = 1;\n"; }
const char* tail() { return "also no header\nusing namespace metal;\n"; }
}}}
"""
TREE = {
    "kernels/utils.h": "constant int one = 1;\n",
    "kernels/indexing/gather.h": "struct G {};\n",
    "kernels/k.metal": '#include "utils.h"\nkernel void k_one(device int* x) { x[0] = one; }\n',
}


def _host(tmp_path: Path) -> tuple[Path, Path, dict[str, tuple[int, bytes]]]:
    """The tree, the dylib, and each function's (file offset, bytes incl. NUL)."""
    kernels, dylib, strings = mlx_style_host(tmp_path, TREE, HOST)
    assert set(strings) == {"plain", "gather", "marked", "tail"}
    return kernels, dylib, strings


def _follows(strings: dict[str, tuple[int, bytes]], first: str, second: str) -> bool:
    offset, raw = strings[first]
    return offset + len(raw) == strings[second][0] and len(raw) < 4096


def test_a_source_without_a_header_keeps_its_name_beside_one_with_a_header(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    tree, dylib, strings = _host(tmp_path)
    # the premise: the four strings lie in this order, each right after the one before, and
    # the header-less "plain" right before "gather", which names a header in the tree
    assert _follows(strings, "plain", "gather") and _follows(strings, "gather", "marked")
    assert _follows(strings, "marked", "tail")
    code, out, err = run_cli(
        ["report", str(dylib), "--source-dir", str(tree), "--format", "json"], capsys
    )
    assert code == 0, err
    rows = {u["name"]: u["host_bytes"] for u in json.loads(out)["jit_units"]}
    assert rows == {
        "mlx::core::metal::plain": len(strings["plain"][1]),
        "indexing/gather.h": len(strings["gather"][1]),
        "utils.h": len(strings["marked"][1]),
        "mlx::core::metal::tail": len(strings["tail"][1]),
    }
    said = re.search(r"warning: .*: (\d+) of (\d+) run-time sources .* of \S+: (.*)", err)
    assert said is not None, err
    assert said.group(1, 2) == ("2", "4")
    assert sorted(said.group(3).split(", ")) == [
        "mlx::core::metal::plain",
        "mlx::core::metal::tail",
    ]
