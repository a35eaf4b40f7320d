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
    assert [h.relative_to(mlx_headers).as_posix() for h in entry_includes(tree, "unary_subset.metal")
            ] == [f"{KERNELS}/utils.h", f"{KERNELS}/unary_ops.h", f"{KERNELS}/unary.h"]  # fmt: skip
    specs = jit_preambles(tree, ["unary_subset.metal", "arange_subset.metal", "versioned.metal"])
    assert [(s.function, s.entries) for s in specs] == [
        ("utils", ("unary_subset.metal", "arange_subset.metal", "versioned.metal")),
        ("unary_ops", ("unary_subset.metal", "versioned.metal")),
        ("unary", ("unary_subset.metal", "versioned.metal")),
        ("arange", ("arange_subset.metal",)),
        ("versioned", ("versioned.metal",)),  # it defines kernels of its own
        ("scatter_rows", ()),  # run-time-only kernels: in every split
    ]
    assert specs[0].headers == (mlx_headers / KERNELS / "utils.h",)


def test_an_entry_file_that_defines_kernels_is_its_own_preamble(
    mlx_style: Path, mlx_headers: Path
) -> None:
    """plain_kernels.metal writes fill_ones, scale_by_two... itself: their code is in no header,
    so the run-time source must carry the file (after what it includes)."""
    tree = load_tree(mlx_style, include_dirs=[mlx_headers])
    specs = jit_preambles(tree, ["plain_kernels.metal", "unary_subset.metal"])
    assert [(s.function, s.entries) for s in specs] == [
        ("utils", ("plain_kernels.metal", "unary_subset.metal")),
        ("plain_kernels", ("plain_kernels.metal",)),
        ("unary_ops", ("unary_subset.metal",)),
        ("unary", ("unary_subset.metal",)),
        ("scatter_rows", ()),
    ]
    assert specs[1].headers == ((mlx_style / "plain_kernels.metal").resolve(),)


def test_metallib_toml_names_preambles_and_clashes_are_errors(
    mlx_style: Path, mlx_headers: Path, tmp_path: Path
) -> None:
    tree_dir = tmp_path / "tree"
    shutil.copytree(mlx_style, tree_dir)
    (tree_dir / "metallib.toml").write_text(
        f'[kernels]\ninclude-dirs = ["{mlx_headers}"]\n'
        "[build.preambles]\n"
        f'unary_family = ["{mlx_headers}/{KERNELS}/unary_ops.h", "{mlx_headers}/{KERNELS}/unary.h"]\n'
    )
    tree = load_tree(tree_dir)
    specs = jit_preambles(tree, ["unary_subset.metal"])
    assert [(s.function, len(s.headers)) for s in specs] == [
        ("utils", 1), ("unary_family", 2), ("scatter_rows", 1)
    ]
    # a configured name equal to an unconfigured header's stem names two different things
    (tree_dir / "metallib.toml").write_text(
        f'[kernels]\ninclude-dirs = ["{mlx_headers}"]\n'
        f'[build.preambles]\nutils = ["{mlx_headers}/{KERNELS}/unary.h"]\n'
    )
    with pytest.raises(UsageError, match="utils"):
        jit_preambles(load_tree(tree_dir), ["unary_subset.metal"])
