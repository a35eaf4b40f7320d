"""``report HOST_LIBRARY --source-dir TREE``: a shipped host library that holds no metallib,
measured by the run-time sources it embeds, each named by the tree's header it was made from
(issue 26, item 4).

The independent side: each function's string extracted with LLVM's tools
(``support.llvm_strings``: ``llvm-nm`` or ``--function-starts``, ``llvm-objdump -d`` and
``--section-headers``), the header it names read off its first lines with a pattern written
here, and the tree's files looked up with ``Path.is_file``.
"""

from __future__ import annotations

import json
import re
from pathlib import Path

import pytest
from binaries import link_dylib, nm_addresses
from clirun import run_cli
from support.llvm_strings import (
    function_starts,
    independent_sources,
    is_metal_text,
    mlx_style_host,
    wheel_member,
)

MLX_HEADER = re.compile(rb"// Auto generated source for (\S+)")


def _report(capsys: pytest.CaptureFixture[str], *args: str) -> tuple[dict[str, object], str]:
    code, out, err = run_cli(["report", *args, "--format", "json"], capsys)
    assert code == 0, err
    doc: dict[str, object] = json.loads(out)
    return doc, err


def _rows(doc: dict[str, object]) -> dict[str, int]:
    units = doc["jit_units"]
    assert isinstance(units, list)
    return {u["name"]: u["host_bytes"] for u in units}


@pytest.mark.realdata
@pytest.mark.parametrize(
    ("package", "version", "member", "count", "text_bytes"),
    [
        ("mlx-metal", "0.32.1", "libmlx.dylib", 12, 123_132),
        ("executorch", "1.5.1", "libexecutorch_backend_mlx.dylib", 41, 882_123),
    ],
)
def test_mlx_preambles_are_named_by_the_trees_headers(
    tmp_path: Path,
    capsys: pytest.CaptureFixture[str],
    mlx_style: Path,
    mlx_headers: Path,
    package: str,
    version: str,
    member: str,
    count: int,
    text_bytes: int,
) -> None:
    """MLX's preambles in libmlx.dylib (12, named ``mlx::core::metal::*``) and in executorch's
    stripped delegate (41, unnamed): each a row named by the header its text says it was made
    from, as found under the tree's -I folder (mlx-metal 0.32.0's headers), with the bytes the
    binary holds for it; the issue's figures count the text without its NUL."""
    dylib = wheel_member(package, version, member, tmp_path)
    names = {a: n for n, a in nm_addresses(dylib).items()}
    candidates: dict[int, str | None]
    if package == "mlx-metal":
        candidates = {
            a: n for a, n in names.items() if re.fullmatch(r"__ZN3mlx4core5metal\d+\w+Ev", n)
        }
    else:
        candidates = {a: names.get(a) for a in function_starts(dylib)}
    wanted: dict[str, int] = {}
    for symbol, _, raw in independent_sources(dylib, None, candidates).values():
        header = MLX_HEADER.search(raw[:4096])
        if is_metal_text(raw) and header is not None and (symbol is None or package == "mlx-metal"):
            wanted[header.group(1).decode()] = len(raw)
    assert (len(wanted), sum(wanted.values()) - len(wanted)) == (count, text_bytes)
    doc, err = _report(capsys, str(dylib), "--source-dir", str(mlx_style), "-I", str(mlx_headers))
    rows = _rows(doc)
    assert {name: rows[name] for name in wanted} == wanted
    assert doc["source"] == {
        "path": None,
        "target": str(dylib),
        "kind": "host library",
        "wheel": None,
        "manifest": None,
        "member": None,
        "identity": None,
    }
    host = doc["host_library"]
    assert isinstance(host, dict) and host["measured_by"] == "run-time source strings"
    assert sum(rows.values()) + host["unattributed_bytes"] == dylib.stat().st_size
    # a source the tree has no header for is said on stderr, and keeps the binary's name
    missing = sorted(h for h in wanted if not (mlx_headers / h).is_file())
    others = sorted(set(rows) - set(wanted))  # sources that name no header (MLX's CPU preamble)
    said = re.search(r"warning: .*: (\d+) of (\d+) run-time sources .* of \S+: (.*)", err)
    if missing or others:
        assert said is not None, err
        assert said.group(1, 2) == (str(len(missing) + len(others)), str(len(rows)))
        assert sorted(said.group(3).split(", ")) == sorted(missing + others)
    else:
        assert said is None, err
    assert missing == (["mlx/backend/metal/kernels/searchsorted.h"] if count == 41 else [])


TREE = {
    "kernels/utils.h": "#pragma once\nconstant int one = 1;\n",
    "kernels/indexing/gather.h": '#pragma once\n#include "utils.h"\n',
    "kernels/k.metal": (
        '#include "utils.h"\n#include "indexing/gather.h"\n'
        "kernel void k_one(device int* x [[buffer(0)]]) { x[0] = one; }\n"
    ),
}

HOST = r"""
namespace mlx { namespace core { namespace metal {
const char* gather() {
  return "// Copyright\n// Auto generated source for "
         "mlx/backend/metal/kernels/indexing/gather.h\nstruct G {};\n";
}
const char* utils() { return "#line 1 \"utils.h\"\nconstant int one = 1;\n"; }
const char* gone() { return "// Auto generated source for mlx/backend/metal/kernels/gone.h\nx\n"; }
const char* plain() { return "names no header\nusing namespace metal;\n"; }
const char* outside() { return "// Auto generated source for ../../kernels/utils.h\nx\n"; }
}}}
"""


def _tree_and_host(tmp_path: Path) -> tuple[Path, Path, dict[str, int]]:
    """A small tree, a dylib of five source functions, and each function's string's bytes."""
    kernels, dylib, strings = mlx_style_host(tmp_path, TREE, HOST)
    sizes = {name: len(raw) for name, (_, raw) in strings.items()}
    assert set(sizes) == {"gather", "utils", "gone", "plain", "outside"}
    return kernels, dylib, sizes


def test_a_source_finds_its_header_in_the_tree(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """MLX's comment or a #line marker names the header; under the tree's root it is found with
    the path's leading folders taken off; one not in the tree, one naming none, and one naming
    a path out of the folder keep the binary's names, and stderr says so."""
    tree, dylib, sizes = _tree_and_host(tmp_path)
    doc, err = _report(capsys, str(dylib), "--source-dir", str(tree))
    assert _rows(doc) == {
        "indexing/gather.h": sizes["gather"],
        "utils.h": sizes["utils"],
        "mlx/backend/metal/kernels/gone.h": sizes["gone"],
        "mlx::core::metal::plain": sizes["plain"],
        "mlx::core::metal::outside": sizes["outside"],
    }
    assert "3 of 5 run-time sources" in err and "are made from no header of" in err
    for name in ("mlx/backend/metal/kernels/gone.h", "mlx::core::metal::plain", "outside"):
        assert name in err
    # the report carries what stderr said (issue 35, item 7): the same sentence, no label
    unmatched = sizes["gone"] + sizes["plain"] + sizes["outside"]
    warnings = doc["warnings"]
    assert isinstance(warnings, list) and len(warnings) == 1
    warning = str(warnings[0])
    assert warning.startswith(f"3 of 5 run-time sources ({unmatched:,} bytes) are made from no")
    assert f": {warning}" in err
    # without a tree: the names the binary gives, no warning
    doc, err = _report(capsys, str(dylib))
    assert set(_rows(doc)) == {
        "mlx/backend/metal/kernels/indexing/gather.h",
        "utils.h",
        "mlx/backend/metal/kernels/gone.h",
        "mlx::core::metal::plain",
        "mlx::core::metal::outside",
    }
    assert "warning" not in err


def test_the_table_a_saved_report_and_a_comparison(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    tree, dylib, _ = _tree_and_host(tmp_path)
    code, out, _ = run_cli(["report", str(dylib), "--source-dir", str(tree)], capsys)
    assert code == 0
    flat = re.sub(r"\s+", " ", out)
    assert "JIT host library" in flat and "5 run-time sources" in flat
    assert "run-time source" in flat and "kernels" not in flat.split("┡")[0]
    assert "[rest of the host library]" in flat and "named by the headers of" in flat
    assert f"{dylib.stat().st_size:,}" in flat
    saved = tmp_path / "host.json"
    code, out, _ = run_cli(
        ["report", str(dylib), "--source-dir", str(tree), "-o", str(saved)], capsys
    )
    assert code == 0
    again, _ = _report(capsys, str(saved))
    assert _rows(again) == _rows(json.loads(saved.read_text()))
    code, out, _ = run_cli(["compare", str(saved), str(dylib), "--format", "json"], capsys)
    assert code == 0
    jit = json.loads(out)["jit"]
    assert jit["delta_bytes"] == 0 and jit["base_bytes"] == dylib.stat().st_size
    code, out, _ = run_cli(["compare", str(saved), str(dylib)], capsys)
    flat = re.sub(r"\s+", " ", out)
    heading = flat.split("┡")[0]
    assert code == 0 and "run-time source" in heading
    assert "kernels" not in heading  # a shipped host library counts no kernels: no columns
    assert "no metallib on either side: the run-time sources the host libraries embed" in flat
    code, out, _ = run_cli(["compare", str(saved), str(dylib), "--format", "markdown"], capsys)
    assert code == 0 and "| run-time source | base | head | delta | delta % |" in out
    assert "5 → 5 run-time sources" in out and "JIT unit" not in out


def test_a_macho_with_neither_a_metallib_nor_a_source(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """``report`` says the binary holds neither; ``list`` keeps its words: it reads metallibs."""
    dylib = link_dylib(tmp_path / "libplain.dylib", [])
    code, out, err = run_cli(["report", str(dylib)], capsys)
    assert code == 2 and out == ""
    assert "a Mach-O binary that holds no metallib" in err and "nor run-time source" in err
    code, out, err = run_cli(["list", str(dylib)], capsys)
    assert code == 2 and "holds no metallib" in err and "run-time source" not in err


def test_download_of_a_host_library_is_refused(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """``--download`` is a metallib's share of its wheel: a host library has none to model, so
    it is a usage error rather than a report that silently leaves the figures out."""
    _, dylib, _ = _tree_and_host(tmp_path)
    code, out, err = run_cli(["report", str(dylib), "--download"], capsys)
    assert code == 2 and out == ""
    assert "--download" in err and "holds no metallib" in err and "Traceback" not in err
