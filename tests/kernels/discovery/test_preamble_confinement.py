"""``[build.preambles]`` headers stay in the source folder and its include folders, followed
through symbolic links (builder.kernels.confinement.confine_preambles), read where discovery
reads a tree's settings: a preamble is shipped inside the app, so a tree must not pull a file
from elsewhere into it. The refusal names the header, where it leads and the folders; the
command line's ``-I`` folders are the user's choice and allowed."""

from __future__ import annotations

from pathlib import Path

import pytest

from builder.kernels.confinement import OutsideTreeError
from builder.kernels.tree_config import find_config


def _tree(tmp_path: Path, preambles: str) -> Path:
    tree = tmp_path / "tree"
    (tree / "inc").mkdir(parents=True)
    (tree / "a.metal").write_text("kernel void ka() {}\n")
    (tree / "own.h").write_text("int own;\n")
    (tree / "inc" / "deep.h").write_text("int deep;\n")
    (tree / "metallib.toml").write_text(f"[build.preambles]\n{preambles}\n")
    return tree


def test_headers_inside_the_tree_are_preambles(tmp_path: Path) -> None:
    tree = _tree(tmp_path, 'x = ["own.h", "inc/deep.h"]')
    config = find_config(tree)
    assert {name: [p.name for p in paths] for name, paths in config.preambles.items()} == {
        "x": ["own.h", "deep.h"]
    }


def test_a_header_linked_out_of_the_tree_is_refused(tmp_path: Path) -> None:
    secret = tmp_path / "secret.h"
    secret.write_text("token\n")
    tree = _tree(tmp_path, 'x = ["own.h", "inner.h"]')
    (tree / "inner.h").symlink_to(secret)
    with pytest.raises(OutsideTreeError) as info:
        find_config(tree)
    assert str(info.value) == (
        f"{tree / 'metallib.toml'}: [build.preambles] x: {tree / 'inner.h'} (-> {secret}) is "
        f"outside the source folder and its include folders ({tree}); pass -I DIR on the "
        "command line if the tree really needs its folder"
    )
    assert "token" not in str(info.value)
    # the user names the folder on the command line: allowed
    assert [p.name for p in find_config(tree, include_dirs=[tmp_path]).preambles["x"]] == [
        "own.h",
        "inner.h",
    ]


def test_an_absolute_path_elsewhere_is_refused_as_written(tmp_path: Path) -> None:
    elsewhere = tmp_path / "elsewhere.h"
    elsewhere.write_text("int e;\n")
    tree = _tree(tmp_path, f'y = "{elsewhere}"')
    with pytest.raises(OutsideTreeError) as info:
        find_config(tree)
    assert f"[build.preambles] y: {elsewhere} is outside the source folder" in str(info.value)
