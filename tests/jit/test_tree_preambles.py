"""A kernel tree's JIT entry files and the run-time preambles they need (MLX-style files over
mlx-metal's real headers; expectations read off the files' #include lines by hand)."""

from __future__ import annotations

import shutil
from pathlib import Path

import pytest

from builder.errors import UsageError
from builder.jit.tree_preambles import entry_includes, jit_preambles
from builder.kernels.discovery import load_tree

pytestmark = pytest.mark.realdata
KERNELS = "mlx/backend/metal/kernels"


def test_preambles_are_the_entry_files_includes_each_once(
    mlx_style: Path, mlx_headers: Path
) -> None:
    tree = load_tree(mlx_style, include_dirs=[mlx_headers])
    assert [
        h.relative_to(mlx_headers).as_posix() for h in entry_includes(tree, "unary_subset.metal")
    ] == [f"{KERNELS}/utils.h", f"{KERNELS}/unary_ops.h", f"{KERNELS}/unary.h"]
    specs = jit_preambles(tree, ["unary_subset.metal", "arange_subset.metal", "versioned.metal"])
    assert [(s.function, s.entries, s.embedding) for s in specs] == [
        ("utils", ("unary_subset.metal", "arange_subset.metal"), "preamble"),
        ("unary_ops", ("unary_subset.metal",), "preamble"),
        ("unary", ("unary_subset.metal",), "preamble"),
        ("arange", ("arange_subset.metal",), "preamble"),
        # at MSL 3.1 every kernel of versioned.metal is written in it: embedded whole
        ("versioned", ("versioned.metal",), "whole-file"),
        ("scatter_rows", (), "preamble"),  # run-time-only kernels: in every split
    ]
    assert specs[0].headers == (mlx_headers / KERNELS / "utils.h",)


def test_an_entry_file_that_defines_kernels_is_its_own_preamble(
    mlx_style: Path, mlx_headers: Path
) -> None:
    """versioned.metal writes before_msl32 and macos_kernel itself: their code is in no header,
    so the run-time source must carry the file (after what it includes; at MSL 3.2 it also
    instantiates unary_v of unary.h, so it keeps the preamble embedding). plain_kernels.metal
    writes a kernel template (copy_values): it is embedded whole, its includes inlined."""
    tree = load_tree(mlx_style, include_dirs=[mlx_headers], defines=["__METAL_VERSION__=320"])
    specs = jit_preambles(tree, ["versioned.metal", "arange_subset.metal"])
    assert [(s.function, s.entries) for s in specs] == [
        ("utils", ("versioned.metal", "arange_subset.metal")),
        ("unary_ops", ("versioned.metal",)),
        ("unary", ("versioned.metal",)),
        ("versioned", ("versioned.metal",)),
        ("arange", ("arange_subset.metal",)),
        ("scatter_rows", ()),
    ]
    assert specs[3].headers == ((mlx_style / "versioned.metal").resolve(),)
    every = {s.function: s for s in jit_preambles(tree, list(tree.sources))}
    plain = every["plain_kernels"]
    assert plain.embedding == "whole-file" and plain.entries == ("plain_kernels.metal",)
    assert plain.headers == ((mlx_style / "plain_kernels.metal").resolve(),)


def test_metallib_toml_names_preambles_and_clashes_are_errors(
    mlx_style: Path, mlx_headers: Path, tmp_path: Path
) -> None:
    tree_dir = tmp_path / "tree"
    shutil.copytree(mlx_style, tree_dir)
    (tree_dir / "metallib.toml").write_text(
        "[build.preambles]\n"
        f'unary_family = ["{mlx_headers}/{KERNELS}/unary_ops.h", '
        f'"{mlx_headers}/{KERNELS}/unary.h"]\n'
    )
    tree = load_tree(tree_dir, include_dirs=[mlx_headers])
    specs = jit_preambles(tree, ["unary_subset.metal"])
    assert [(s.function, len(s.headers)) for s in specs] == [
        ("utils", 1),
        ("unary_family", 2),
        ("scatter_rows", 1),
    ]
    # a configured name equal to an unconfigured header's stem names two different things
    (tree_dir / "metallib.toml").write_text(
        f'[build.preambles]\nutils = ["{mlx_headers}/{KERNELS}/unary.h"]\n'
    )
    with pytest.raises(UsageError, match="utils"):
        jit_preambles(load_tree(tree_dir, include_dirs=[mlx_headers]), ["unary_subset.metal"])


def test_an_entry_file_named_like_its_header_needs_only_the_header(
    mlx_style: Path, mlx_headers: Path
) -> None:
    """fft.metal emits make_twiddles, written in fft.h (as MLX's fft.metal emits
    generate_bluestein_twiddles from fft.h): the header's preamble holds it, fft.metal is no
    preamble of its own, and there is no name to clash."""
    tree = load_tree(mlx_style, include_dirs=[mlx_headers])
    specs = jit_preambles(tree, ["fft.metal"])
    assert [(s.function, s.entries) for s in specs] == [
        ("utils", ("fft.metal",)),
        ("fft", ("fft.metal",)),
        ("scatter_rows", ()),
    ]
    assert specs[1].headers == ((mlx_style / "fft.h").resolve(),)
    # names are the tree's, whatever the split: unary.h is unary() alone or with everything
    every = {s.function: s.headers for s in jit_preambles(tree, list(tree.sources))}
    assert every["fft"] == specs[1].headers and "fft_h" not in every


# the naming tests below are about MLX's preamble embedding: every entry file keeps it
PREAMBLES = '[build.embedding]\n"*" = "preamble"\n'


def _tree(root: Path, files: dict[str, str]) -> Path:
    for name, text in files.items():
        (root / name).parent.mkdir(parents=True, exist_ok=True)
        (root / name).write_text(text)
    return root


def test_stems_that_collide_are_named_after_their_paths(tmp_path: Path) -> None:
    """fft.metal writing a kernel itself and its header fft.h are both preambles: the stems and
    the paths without suffix collide, so both are named after the whole path."""
    root = _tree(
        tmp_path,
        {
            "fft.h": "template <typename T> [[kernel]] void pass(device T* x) { }\n",
            "fft.metal": '#include "fft.h"\nkernel void own(device float* x) { }\n'
            'template [[host_name("p")]] [[kernel]] decltype(pass<float>) pass<float>;\n',
            "a/util.h": "#pragma once\n",
            "b/util.h": "#pragma once\n",
            "c.metal": (
                '#include "a/util.h"\n#include "b/util.h"\nkernel void c(device float* x) { }\n'
            ),
            "metallib.toml": PREAMBLES,
        },
    )
    tree = load_tree(root)
    specs = jit_preambles(tree, ["fft.metal", "c.metal"])
    assert [(s.function, s.headers) for s in specs] == [
        ("fft_h", ((root / "fft.h").resolve(),)),
        ("fft_metal", ((root / "fft.metal").resolve(),)),
        ("a_util", ((root / "a/util.h").resolve(),)),
        ("b_util", ((root / "b/util.h").resolve(),)),
        ("c", ((root / "c.metal").resolve(),)),
    ]


def test_names_that_coincide_are_numbered_in_path_order(tmp_path: Path) -> None:
    """x-y.h and x_y.h are one identifier even as whole paths: numbered in order, no clash."""
    root = _tree(
        tmp_path,
        {
            "x-y.h": "#pragma once\n",
            "x_y.h": "#pragma once\n",
            "e.metal": '#include "x-y.h"\n#include "x_y.h"\nkernel void e(device float* x) { }\n',
            "metallib.toml": PREAMBLES,
        },
    )
    specs = jit_preambles(load_tree(root), ["e.metal"])
    assert {s.function: s.headers[0].name for s in specs} == {
        "x_y_h": "x-y.h",
        "x_y_h_2": "x_y.h",
        "e": "e.metal",
    }


def test_a_clash_left_names_both_files_and_the_line_that_settles_it(tmp_path: Path) -> None:
    """A configured name equal to another header's derived name is the clash that remains."""
    root = _tree(
        tmp_path,
        {
            "other.h": "#pragma once\n",
            "x_y.h": "#pragma once\n",
            "e.metal": '#include "other.h"\n#include "x_y.h"\nkernel void e(device float* x) { }\n',
            "metallib.toml": '[build.preambles]\nx_y = "other.h"\n' + PREAMBLES,
        },
    )
    with pytest.raises(UsageError) as caught:
        jit_preambles(load_tree(root), ["e.metal"])
    message = str(caught.value)
    assert "'x_y' names two headers: other.h and x_y.h" in message
    assert f"settle it in {root / 'metallib.toml'}: [build.preambles] " in message
    line = message.rpartition("[build.preambles] ")[2]
    # the suggested line, written into metallib.toml, settles it
    (root / "metallib.toml").write_text(f'[build.preambles]\nx_y = "other.h"\n{line}\n{PREAMBLES}')
    named = {s.function for s in jit_preambles(load_tree(root), ["e.metal"])}
    assert named == {"e", "x_y", "x_y_h"}  # the suggested name is one nothing else has


def test_a_configured_preamble_no_entry_file_needs_is_in_every_split(tmp_path: Path) -> None:
    """[build.preambles] naming a header no entry file includes is an extra the host wants:
    it is embedded whatever is JIT, as run-time-only kernels' headers are."""
    root = _tree(
        tmp_path,
        {
            "gather.h": "inline int gather_index(int i) { return i; }\n",
            "used.h": "#pragma once\n",
            "e.metal": '#include "used.h"\nkernel void e(device float* x) { }\n',
            "metallib.toml": '[build.preambles]\ngather = "gather.h"\nused_one = "used.h"\n'
            + PREAMBLES,
        },
    )
    tree = load_tree(root)
    extra = ("gather", ((root / "gather.h").resolve(),), (), "preamble")
    assert [tuple(s) for s in jit_preambles(tree, [])] == [extra]
    assert [s.function for s in jit_preambles(tree, ["e.metal"])] == ["used_one", "e", "gather"]


def test_the_table_only_serves_other_includes_from_the_functions_that_inline_them(
    tmp_path: Path,
) -> None:
    """preamble-set = "table": the functions are [build.preambles]'s alone. An include that is
    no table header is served by a table function inlining it (one the entry file needs first,
    then an always-embed one); a table function no JIT entry file needs is embedded only when
    always-embed names it; an include no function inlines is an error naming the header."""
    table = (
        '[build]\npreamble-set = "table"\nalways-embed = ["base"]\n[build.preambles]\n'
        'base = "base.h"\nops = "ops.h"\nunused = "unused.h"\n'
    )
    files = {
        "defs.h": "#pragma once\n",
        "atomic.h": "#pragma once\n",
        "base.h": '#pragma once\n#include "defs.h"\n#include "atomic.h"\n',
        "ops.h": '#pragma once\n#include "atomic.h"\n',
        "unused.h": "#pragma once\n",
        # defs.h only base inlines; atomic.h both: ops, which r.metal needs itself, serves it
        "r.metal": '#include "defs.h"\n#include "atomic.h"\n#include "ops.h"\n',
        "s.metal": '#include "atomic.h"\n',  # needs no table root: the always-embed one serves
        "metallib.toml": table + PREAMBLES,
    }
    tree = load_tree(_tree(tmp_path / "a", files))
    specs = jit_preambles(tree, ["r.metal"])
    assert [(s.function, s.entries) for s in specs] == [
        ("base", ("r.metal",)),
        ("ops", ("r.metal",)),
    ]
    assert [(s.function, s.entries) for s in jit_preambles(tree, ["s.metal"])] == [
        ("base", ("s.metal",)),
    ]
    assert [s.function for s in jit_preambles(tree, [])] == ["base"]  # all-aot: always-embed
    files["t.metal"] = '#include "loose.h"\n'
    files["loose.h"] = "#pragma once\n"
    tree = load_tree(_tree(tmp_path / "b", files))
    with pytest.raises(UsageError, match=r"loose\.h is needed at run time, and no \[build"):
        jit_preambles(tree, ["t.metal"])
