"""``check``: the library compiles, and real mistakes fail with the kernel file and line."""

from __future__ import annotations

import json
import shutil
from pathlib import Path

import pytest

from builder.kernels.catalog import load_catalog
from builder.kernels.catalog_tree import DEFAULT_CHUNK_SIZE, generate_tree
from builder.resources import metal_src_dir

# g++ comes with scripts/setup.sh: without a host compiler these tests fail (exit 2, naming what
# was looked for) rather than skip.


def broken_copy(tmp_path: Path, rel: str, old: str, new: str) -> tuple[Path, int]:
    """Copy metal_src to tmp_path/src, replace the first ``old`` in ``rel``; return (tree, line)."""
    tree = tmp_path / "src"
    shutil.copytree(metal_src_dir(), tree)
    path = tree / rel
    text = path.read_text()
    assert old in text, f"{rel} no longer contains {old!r}"
    line = text[: text.index(old)].count("\n") + 1
    path.write_text(text.replace(old, new, 1))
    return tree, line


@pytest.mark.slow
def test_full_library_passes(run_cli, raw, catalog_counter) -> None:
    """The one full run: every AOT instantiation and every JIT unit's source is instantiated
    clean, without a warning. Through semantic analysis (``--syntax-only``, which instantiates
    every template: 11 s of CPU instead of 24 s); code generation is run on one family below."""
    code, out, _ = run_cli(["check", "--jit", "--syntax-only", "--format", "json"])
    result = json.loads(out)
    assert code == 0, result["diagnostics"]
    assert result["ok"] and result["errors"] == 0 and result["warnings"] == 0
    aot = [c for c in result["chunks"] if not c["chunk"].startswith("jit.")]
    jit = [c for c in result["chunks"] if c["chunk"].startswith("jit.")]
    assert sum(u["instantiations"] for u in aot) == catalog_counter(raw)
    assert sum(u["instantiations"] for u in jit) == catalog_counter(raw)
    assert {c["unit"] for c in aot} == {c["unit"] for c in jit} == set(raw["families"])
    assert result["mode"] == "syntax-only"


def test_a_family_compiles_clean_by_default(run_cli, raw, catalog_counter) -> None:
    """``check`` compiles (code generation included) unless told otherwise: one family's AOT
    instantiations and JIT source, every one of them, without a warning."""
    code, out, _ = run_cli(["check", "--kernels", "softmax", "--jit", "--format", "json"])
    result = json.loads(out)
    assert code == 0, result["diagnostics"]
    assert result["mode"] == "compile" and result["ok"] and result["warnings"] == 0
    for chunks in (
        [c for c in result["chunks"] if not c["chunk"].startswith("jit.")],
        [c for c in result["chunks"] if c["chunk"].startswith("jit.")],
    ):
        assert {c["unit"] for c in chunks} == {"softmax"}
        assert sum(c["instantiations"] for c in chunks) == catalog_counter(raw, ["softmax"])


def test_broken_kernel_reports_file_and_line(tmp_path: Path, run_cli) -> None:
    tree, line = broken_copy(
        tmp_path,
        "unary/unary.h",
        "out[index] = static_cast<U>(Op()(in[index]));",
        "out[index] = static_cast<U>(Op()(in[index])) + no_such_name;",
    )
    code, out, err = run_cli(["check", "--source-dir", str(tree), "--kernels", "unary"])
    assert code == 1
    assert f"{tree}/unary/unary.h:{line}:" in out
    assert "no_such_name" in out and "FAILED" in out
    assert "kernel check failed" in err
    assert "shim" not in out


def test_every_dtype_path_is_instantiated(tmp_path: Path, run_cli) -> None:
    """A mistake on the integer path only is missed by float instantiations and caught by int
    ones: the check really instantiates each dtype."""
    tree, line = broken_copy(tmp_path, "binary/binary_ops.h", "a % b", "a % b.nope")
    code, out, _ = run_cli(
        ["check", "--source-dir", str(tree), "--kernels", "binary", "--dtypes", "float32"]
    )
    assert code == 0, out
    code, out, _ = run_cli(
        [
            "check",
            "--source-dir",
            str(tree),
            "--kernels",
            "binary",
            "--dtypes",
            "int16",
            "--syntax-only",
        ]
    )
    assert code == 1
    (report,) = [ln for ln in out.splitlines() if ": error:" in ln]
    assert report.startswith(f"{tree}/binary/binary_ops.h:{line}:")
    assert "binary_vv_rem_int16" in report or "binary_ss_rem_int16" in report


def test_error_inside_the_shim_is_blamed_on_the_kernel(tmp_path: Path, run_cli) -> None:
    tree = tmp_path / "src"
    shutil.copytree(metal_src_dir(), tree)
    atomic = tree / "common" / "atomic.h"
    text = atomic.read_text()
    text = text.replace("uint expected =", "int expected =").replace(
        "uint desired =", "int desired ="
    )
    atomic.write_text(text)
    call = next(i for i, ln in enumerate(text.splitlines(), 1) if "atomic_compare_exchange" in ln)
    code, out, _ = run_cli(
        ["check", "--source-dir", str(tree), "--kernels", "scatter", "--syntax-only"]
    )
    assert code == 1
    errors = [ln for ln in out.splitlines() if ": error:" in ln]
    assert errors and all(ln.startswith(f"{tree}/common/atomic.h:{call}:") for ln in errors), out
    assert "metal_stdlib" not in out


def test_catalog_mistake_is_blamed_on_the_catalog(tmp_path: Path, run_cli) -> None:
    tree, line = broken_copy(
        tmp_path, "catalog.json", '"template": "ternary_v"', '"template": "ternary_typo"'
    )
    code, out, _ = run_cli(
        ["check", "--source-dir", str(tree), "--kernels", "ternary", "--syntax-only"]
    )
    assert code == 1
    errors = [ln for ln in out.splitlines() if ": error:" in ln]
    assert errors and all(ln.startswith(f"{tree}/catalog.json:{line}:") for ln in errors), out
    assert "ternary_v_select_bool" in out


def test_json_result_for_one_family(run_cli, raw, catalog_counter) -> None:
    code, out, _ = run_cli(
        [
            "check",
            "--kernels",
            "softmax,arange",
            "--format",
            "json",
            "--syntax-only",
            "-j",
            "2",
            "--no-jit",
        ]
    )
    result = json.loads(out)
    assert code == 0 and result["schema"] == 2 and result["ok"]
    assert result["instantiations"] == catalog_counter(raw, ["softmax", "arange"])
    assert result["mode"] == "syntax-only"


def test_selection_by_dtype_checks_fewer(run_cli, raw, catalog_counter) -> None:
    args = ["check", "--kernels", "reduce", "--dtypes", "bfloat16", "--format", "json", "--jit"]
    code, out, _ = run_cli(args)
    result = json.loads(out)
    assert code == 0
    build = generate_tree(load_catalog(), ["reduce"], ["bfloat16"], DEFAULT_CHUNK_SIZE).entries
    assert [c["chunk"] for c in result["chunks"]] == [e.name for e in build] + ["jit.reduce"]
    assert result["instantiations"] == 2 * catalog_counter(raw, ["reduce"], ["bfloat16"])


def test_jit_sources_blame_the_same_lines(tmp_path: Path, run_cli) -> None:
    """A JIT source inlines the headers with #line markers: a kernel mistake is reported once,
    at the kernel line, for the AOT chunks and the JIT unit's; a catalog mistake at the catalog
    line."""
    old = "out[index] = Op()(cond[index], a[index], b[index]);"
    tree, line = broken_copy(tmp_path, "ternary/ternary.h", old, old.replace(";", " + nope;"))
    code, out, _ = run_cli(
        ["check", "--source-dir", str(tree), "--kernels", "ternary", "--format", "json"]
    )
    result = json.loads(out)
    assert code == 1
    build = generate_tree(load_catalog(tree), ["ternary"], None, DEFAULT_CHUNK_SIZE).entries
    assert {c["chunk"]: c["ok"] for c in result["chunks"]} == {
        **{e.name: False for e in build},
        "jit.ternary": False,
    }
    assert [(d["path"], d["line"]) for d in result["diagnostics"]] == [
        (f"{tree}/ternary/ternary.h", line)
    ]

    tree, line = broken_copy(
        tmp_path / "b", "catalog.json", '"template": "ternary_gd"', '"template": "nope"'
    )
    code, out, _ = run_cli(
        [
            "check",
            "--source-dir",
            str(tree),
            "--kernels",
            "ternary",
            "--syntax-only",
            "--format",
            "json",
        ]
    )
    result = json.loads(out)
    assert code == 1
    assert {(d["path"], d["line"]) for d in result["diagnostics"]} == {
        (f"{tree}/catalog.json", line)
    }
    blamed = {h for d in result["diagnostics"] for h in d["instantiations"]}
    assert "ternary_g1_select_int8" in blamed and not any(
        h.startswith("ternary_v_") for h in blamed
    )
    code, out, _ = run_cli(
        ["check", "--source-dir", str(tree), "--kernels", "ternary", "--syntax-only", "--no-jit"]
    )
    assert code == 1 and "JIT sources" not in out


def test_a_folder_without_entry_files_is_usage_error(tmp_path: Path, run_cli) -> None:
    """The words ``kernels`` uses for the same folder (never 'not a kernel source tree')."""
    code, out, err = run_cli(["check", "--source-dir", str(tmp_path)])
    assert code == 2 and out == ""
    assert "no .metal entry files and no catalog.json" in err


def test_missing_compiler_is_one_clear_message(tmp_path: Path, run_cli, monkeypatch) -> None:
    code, _, err = run_cli(["check", "--kernels", "arange", "--compiler", "no-such-c++"])
    assert code == 2 and "no-such-c++" in err
    monkeypatch.setenv("PATH", str(tmp_path))
    monkeypatch.delenv("CXX", raising=False)
    code, _, err = run_cli(["check", "--kernels", "arange"])
    assert code == 2
    expected = (
        "error: no C++ compiler found (tried g++, clang++, c++); install g++ >= 12 or clang >= 15, "
        "or pass --compiler / set CXX"
    )
    assert err.strip().splitlines() == [expected]


def test_jit_style_chunk_is_checked(tmp_path: Path) -> None:
    """A JIT source (headers inlined by a generator) plus appended instantiation lines is checked
    like an AOT chunk; a broken one names its instantiation."""
    from builder.jit.check import CheckChunk, check_library
    from builder.kernels import load_catalog

    catalog = load_catalog()
    insts = catalog.expand(["arange"], ["float32", "int32"])

    def jit_chunk(name: str, source: str, lines: list[str]) -> CheckChunk:
        return CheckChunk(name, source + "\n".join(lines) + "\n", "arange")

    lines = [i.instantiation_line() for i in insts]
    good = jit_chunk("jit_arange", '#include "arange/arange.h"\n', lines)
    assert good.text.rstrip().endswith(insts[-1].instantiation_line())
    bad = jit_chunk(
        "jit_bad",
        '#include "arange/arange.h"\nstruct Broken { int x = ; };\n',
        [insts[0].instantiation_line()],
    )
    result = check_library(families=["softmax"], extra=[good, bad], syntax_only=True)
    assert not result.ok
    by_chunk = {c.chunk: c for c in result.chunks}
    assert by_chunk["jit_arange"].ok and by_chunk["jit_arange"].instantiations == 2
    assert not by_chunk["jit_bad"].ok
