"""A quoted include discovery cannot find names the ``-I`` folder that would find it (issue 19
item 6: MLX-style trees need ``-I <the folder holding mlx/>``), and only one the build may read:
inside the tree or inside a folder already given (issue 27 item 5: never another project's header
that sits next to the tree)."""

from __future__ import annotations

import os
import shutil
from pathlib import Path

import pytest
from clirun import run_cli

from builder.errors import UsageError
from builder.kernels.diagnostics import MAX_FOLDERS, missing_include, resolving_folder
from builder.kernels.discovery import load_tree

ENTRY = "arange_subset.metal"  # includes "mlx/backend/metal/kernels/utils.h"


def entry_tree(folder: Path, mlx_style: Path) -> Path:
    folder.mkdir(parents=True)
    shutil.copy(mlx_style / ENTRY, folder / ENTRY)
    return folder


def test_headers_inside_the_tree_are_suggested(
    tmp_path: Path,
    mlx_style: Path,
    mlx_headers: Path,
    capsys: pytest.CaptureFixture[str],
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """project/ holds the entry file in src/ and the headers in third_party/include/mlx."""
    tree = tmp_path / "project"
    entry_tree(tree / "src", mlx_style)
    include_root = tree / "third_party" / "include"
    shutil.copytree(mlx_headers / "mlx", include_root / "mlx")  # a link out would be refused
    monkeypatch.chdir(tmp_path)
    code, out, err = run_cli(["kernels", "--source-dir", str(tree)], capsys)
    assert code == 2 and out == "" and err.count("\n") == 1
    assert err.startswith(f"error: src/{ENTRY}: does not preprocess: ")
    assert "mlx/backend/metal/kernels/utils.h" in err
    assert err.rstrip("\n").endswith("; did you mean -I project/third_party/include?")
    # The suggestion is right: with it the tree discovers.
    found = load_tree(tree, include_dirs=[Path("project/third_party/include")])
    assert len(found.kernels) > 0 and {k.source for k in found.kernels} == {f"src/{ENTRY}"}


def test_a_sibling_projects_headers_are_not_suggested(
    tmp_path: Path,
    mlx_style: Path,
    mlx_headers: Path,
    capsys: pytest.CaptureFixture[str],
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """project/src is the tree; the headers sit beside it in project/third_party: outside the
    tree and no -I given, so no hint; given -I project/third_party, its include/ is found."""
    tree = entry_tree(tmp_path / "project" / "src", mlx_style)
    include_root = tmp_path / "project" / "third_party" / "include"
    include_root.mkdir(parents=True)
    (include_root / "mlx").symlink_to(mlx_headers / "mlx")
    monkeypatch.chdir(tmp_path)
    code, _, err = run_cli(["kernels", "--source-dir", str(tree)], capsys)
    assert code == 2 and err.count("\n") == 1 and "did you mean" not in err
    assert resolving_folder(tree, "mlx/backend/metal/kernels/utils.h") is None
    given = tmp_path / "project" / "third_party"
    assert resolving_folder(tree, "mlx/backend/metal/kernels/utils.h", [given]) == include_root
    code, _, err = run_cli(["kernels", "--source-dir", str(tree), "-I", str(given)], capsys)
    assert code == 2 and err.rstrip("\n").endswith("; did you mean -I project/third_party/include?")


def test_an_mlx_checkout_suggests_the_root_above_the_kernels(tmp_path: Path) -> None:
    """MLX's own layout: the kernels folder is mlx/backend/metal/kernels under the include root,
    four folders up (past the bounded sub-folder search: found by the folders above)."""
    kernels = tmp_path / "checkout" / "mlx" / "backend" / "metal" / "kernels"
    kernels.mkdir(parents=True)
    (kernels / "ops.h").write_text("#define OP(x) x\n")
    (kernels / "ops.metal").write_text(
        '#include "mlx/backend/metal/kernels/ops.h"\n'
        "kernel void OP(add_one)(device float* a [[buffer(0)]]) { a[0] += 1; }\n"
    )
    with pytest.raises(UsageError) as caught:
        load_tree(kernels)
    assert str(caught.value).endswith(f"; did you mean -I {tmp_path / 'checkout'}?") or str(
        caught.value
    ).endswith(f"; did you mean -I {os.path.relpath(tmp_path / 'checkout')}?")
    assert [k.name for k in load_tree(kernels, include_dirs=[tmp_path / "checkout"]).kernels] == [
        "add_one"
    ]


def test_no_suggestion_when_no_folder_holds_the_header(
    tmp_path: Path, mlx_style: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    tree = entry_tree(tmp_path / "a" / "b" / "c" / "src", mlx_style)  # searched: all in tmp_path
    code, _, err = run_cli(["kernels", "--source-dir", str(tree)], capsys)
    assert code == 2 and err.count("\n") == 1
    assert "No such file or directory" in err or "file not found" in err
    assert "did you mean" not in err


def test_the_search_is_bounded(tmp_path: Path) -> None:
    """A header more folders away than the search lists is not found (and the search ends)."""
    tree = tmp_path / "tree"
    tree.mkdir(parents=True)
    for i in range(MAX_FOLDERS + 10):
        (tree / f"d{i:05}").mkdir()
    far = tree / f"d{MAX_FOLDERS + 9:05}" / "deeper"
    (far / "x").mkdir(parents=True)
    (far / "x" / "h.h").write_text("")
    assert resolving_folder(tree, "x/h.h") is None
    near = tree / "d00000"
    (near / "x").mkdir()
    (near / "x" / "h.h").write_text("")
    assert resolving_folder(tree, "x/h.h") == near


def test_only_missing_includes_inside_their_folder_are_searched() -> None:
    gcc = "a.metal:3:10: fatal error: mlx/utils.h: No such file or directory"
    clang = "a.metal:3:10: fatal error: 'mlx/utils.h' file not found"
    assert missing_include(gcc) == missing_include(clang) == "mlx/utils.h"
    assert missing_include("fatal error: ../up.h: No such file or directory") is None
    assert missing_include("fatal error: '/etc/hosts' file not found") is None
    assert missing_include("a.metal:1:1: error: expected ';'") is None
