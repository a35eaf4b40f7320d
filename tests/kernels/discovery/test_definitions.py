"""Where a kernel's code is written, and the kernels no entry file instantiates (issue 17).

The MLX-style tree's expectations are read off its files by hand (tests/kernels/discovery/
expected.py); synthetic trees written here cover the cases the tree does not (headers that only
an excluded entry file reaches, headers that do not preprocess on their own, line markers)."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from kernels.discovery.expected import (
    ARANGE,
    BINARY,
    OWN_TEMPLATES,
    RUNTIME_ONLY,
    UNARY,
    WRITTEN_IN,
)

from builder.kernels.cxx_text import decode_literals, unescape
from builder.kernels.definitions import marker_file, split_markers, tree_path
from builder.kernels.discovery import load_tree
from builder.kernels.kernel_scan import scan_text
from builder.kernels.runtime_only import RuntimeTemplate

KERNELS = "mlx/backend/metal/kernels"


@pytest.mark.realdata
def test_each_kernel_belongs_to_the_file_its_code_is_written_in(mlx_style, mlx_headers) -> None:
    tree = load_tree(mlx_style, include_dirs=[mlx_headers])
    where = {k.name: tree.defined_in(k) for k in tree.kernels}
    mlx = (mlx_headers / KERNELS).resolve().as_posix()
    expected = {
        **WRITTEN_IN,
        **{name: f"{mlx}/unary.h" for name in UNARY},
        **{name: f"{mlx}/binary.h" for name in BINARY},
        **{name: f"{mlx}/arange.h" for name in ARANGE},
    }
    assert where == {name: expected[name] for name in where}
    # fft.metal emits make_twiddles, a kernel with a body written in fft.h: it is fft.h's
    assert where["make_twiddles"] == "fft.h"
    assert tree.own_templates() == OWN_TEMPLATES


@pytest.mark.realdata
def test_kernels_json_lists_the_run_time_only_templates(run_cli, mlx_style, mlx_headers) -> None:
    code, out, err = run_cli(
        ["kernels", "--source-dir", str(mlx_style), "-I", str(mlx_headers), "--format", "json"]
    )
    assert code == 0, err
    assert json.loads(out)["runtime_only"] == RUNTIME_ONLY
    code, table, err = run_cli(["kernels", "--source-dir", str(mlx_style), "-I", str(mlx_headers)])
    assert code == 0, err
    assert "indexing/scatter_rows.h" in table and "scatter_rows, fill_rows" in table


def _write(root: Path, name: str, text: str) -> None:
    path = root / name
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(text, encoding="utf-8")


KERNEL_TEMPLATE = "template <typename T>\n[[kernel]] void {name}(device T* x) {{ x[0] = T(1); }}\n"
INSTANTIATE = 'template [[host_name("{host}")]] [[kernel]] decltype({name}<float>) {name}<float>;\n'


def test_run_time_only_headers_are_the_ones_no_entry_file_reaches(tmp_path: Path) -> None:
    """A kernel template in a header no entry file reads is run-time only; not when an entry
    file reads it (its #if decides), when only an excluded entry file reaches it, or when an
    --exclude glob names the header."""
    _write(
        tmp_path,
        "used.h",
        KERNEL_TEMPLATE.format(name="used")
        + KERNEL_TEMPLATE.format(name="used_but_never_instantiated"),
    )
    _write(
        tmp_path, "main.metal", '#include "used.h"\n' + INSTANTIATE.format(host="u", name="used")
    )
    _write(
        tmp_path,
        "alone/scatter.h",
        "#pragma once\n"
        + KERNEL_TEMPLATE.format(name="scatter")
        + "[[kernel]] void plain_helper(device float* x) { x[0] = 0; }\n",
    )
    _write(tmp_path, "alone/helpers.hpp", "inline int kernel_size() { return 3; }\n")
    _write(tmp_path, "big_nax.h", KERNEL_TEMPLATE.format(name="nax_kernel"))
    _write(
        tmp_path,
        "nax.metal",
        '#include "big_nax.h"\n' + INSTANTIATE.format(host="n", name="nax_kernel"),
    )
    _write(tmp_path, "skipped/other.h", KERNEL_TEMPLATE.format(name="other"))
    # behind an #if that is false here, and behind a computed include: both are some entry
    # file's kernels, not run-time only
    _write(tmp_path, "gated.h", KERNEL_TEMPLATE.format(name="gated"))
    _write(tmp_path, "computed.h", KERNEL_TEMPLATE.format(name="computed"))
    _write(
        tmp_path,
        "versions.metal",
        '#if __METAL_VERSION__ >= 400\n#include "gated.h"\n'
        '#endif\n#define WHICH "computed.h"\n#include WHICH\n'
        + INSTANTIATE.format(host="c", name="computed"),
    )
    tree = load_tree(tmp_path, exclude=["nax.metal", "skipped/*"])
    assert tree.sources == ("main.metal", "versions.metal")
    assert tree.runtime_only == (RuntimeTemplate("scatter", "alone/scatter.h"),)
    assert tree.to_json()["runtime_only"] == [{"template": "scatter", "source": "alone/scatter.h"}]
    assert [tree.defined_in(k) for k in tree.kernels] == ["used.h", "computed.h"]
    # without the excludes, nax.metal reads big_nax.h and skipped/other.h is a header like any
    everything = load_tree(tmp_path)
    assert [t.source for t in everything.runtime_only] == ["alone/scatter.h", "skipped/other.h"]


def test_a_header_that_does_not_preprocess_alone_is_read_as_written(tmp_path: Path) -> None:
    _write(tmp_path, "main.metal", "kernel void k(device float* x) { x[0] = 1; }\n")
    _write(
        tmp_path,
        "needs_macro.h",
        "#ifndef TYPE_FROM_ENTRY\n#error needs TYPE_FROM_ENTRY\n#endif\n"
        + KERNEL_TEMPLATE.format(name="late"),
    )
    _write(tmp_path, "fine.h", KERNEL_TEMPLATE.format(name="fine"))
    tree = load_tree(tmp_path)
    assert tree.runtime_only == (
        RuntimeTemplate("fine", "fine.h"),
        RuntimeTemplate("late", "needs_macro.h"),
    )


def test_a_kernel_written_by_a_macro_belongs_to_the_file_that_expands_it(tmp_path: Path) -> None:
    _write(
        tmp_path, "macros.h", "#define MAKE_KERNEL(n) kernel void n(device float* x) { x[0]; }\n"
    )
    _write(tmp_path, "a.metal", '#include "macros.h"\nMAKE_KERNEL(from_macro)\n')
    tree = load_tree(tmp_path)
    assert [(k.name, tree.defined_in(k)) for k in tree.kernels] == [("from_macro", "a.metal")]
    assert tree.own_templates() == {}  # a non-template kernel is not a template of its own


def test_scan_text_reports_template_definitions_and_function_offsets() -> None:
    text = (
        "template <typename T, int N> [[kernel, max_total_threads_per_threadgroup(64)]] "
        "void t(device T* x) { }\n"
        "template <typename T> kernel void q(device T* x) { }\n"
        "template <typename T> void helper(T x) { }\n"  # not a kernel: not listed
        "template <typename kernel> void odd(kernel x) { }\n"  # a parameter named kernel
        "[[kernel]] void plain(device float* x) { }\n"
        'template [[host_name("t_f")]] [[kernel]] decltype(t<float, 2>) t<float, 2>;\n'
    )
    for fast in (True, False):
        scan = scan_text(text, "e.metal", fast)
        assert [(n, text[o:].startswith(("[[kernel", "kernel"))) for n, o in scan.templates] == [
            ("t", True),
            ("q", True),
        ]
        assert scan.functions == {"plain": text.index("kernel]] void plain")}  # at the attribute
        assert [k.name for k in scan.kernels] == ["plain", "t_f"]


def test_line_markers_name_the_file_of_every_offset(tmp_path: Path) -> None:
    text = (
        '# 1 "a.metal"\nfirst\n# 1 "/abs/dir/h\\"q.h" 1\nsecond\n'
        '# 3 "a.metal" 2\nthird\n# 1 "sub/x\\303\\251.h" 1\nfourth\n'
    )
    clean, runs = split_markers(text)
    assert clean == "first\nsecond\nthird\nfourth\n"
    assert [runs.file_at(clean.index(w)) for w in ("first", "second", "third", "fourth")] == [
        "a.metal",
        '/abs/dir/h"q.h',
        "a.metal",
        "sub/xé.h",
    ]
    assert runs.file_at(-1) is None
    (tmp_path / "sub").mkdir()
    assert tree_path("sub/../sub/x.h", tmp_path) == "sub/x.h"
    assert tree_path(str(tmp_path / "sub" / "x.h"), tmp_path) == "sub/x.h"
    assert tree_path("/elsewhere/y.h", tmp_path) == "/elsewhere/y.h"


def test_one_reader_for_string_literals_and_marker_names() -> None:
    """A string literal and a line marker's file name are both a C string's body: the same
    escapes mean the same characters, and only in a marker name are numeric escapes the bytes
    of a UTF-8 name (GCC writes é as \303\251)."""
    body = r"a\\b\"c\n\t\101\x42\u00e9\303\251\q"
    assert unescape(body) == 'a\\b"c\n\tABé\xc3\xa9q'
    assert decode_literals(f'"{body}" "\\x5f" "f"') == unescape(body) + "_f"
    assert marker_file(r"n\nl\303\251.metal") == "n\nlé.metal"
    assert marker_file(r"\377.metal") == "\xff.metal"  # not UTF-8: one character per byte
    assert marker_file("plain.metal") == "plain.metal"
