"""Where a refused file is named from: the preprocessor's line markers and its diagnostics, as
GCC really writes them (blank runs it skips with a fresh marker, include chains several deep)."""

from __future__ import annotations

import shutil
import subprocess
from pathlib import Path

import pytest

from builder.kernels.confinement import (
    OutsideTreeError,
    check_diagnostic,
    check_markers,
    tree_bounds,
)

pytestmark = pytest.mark.skipif(shutil.which("g++") is None, reason="needs g++ (-E only)")


def _layout(tmp_path: Path) -> tuple[Path, Path]:
    tree, outside = tmp_path / "tree", tmp_path / "outside"
    (tree / "sub").mkdir(parents=True)
    outside.mkdir()
    (outside / "deep.h").write_text("#error PLANTED\n")
    (outside / "leaf.h").write_text('#include "deep.h"\n')
    # 12 blank lines: GCC skips them with a new marker instead of printing them
    (tree / "sub" / "b.h").write_text("int b;\n" + "\n" * 12 + '#include "../../outside/leaf.h"\n')
    (tree / "k.metal").write_text('int k;\n#include "sub/b.h"\n')
    return tree, outside


def _run(tree: Path) -> subprocess.CompletedProcess[str]:
    command = ["g++", "-E", "-x", "c++", "-undef", "-nostdinc", "./k.metal"]
    return subprocess.run(command, cwd=tree, capture_output=True, text=True, check=False)


def test_the_include_that_leaves_the_tree_is_named_without_its_text(tmp_path: Path) -> None:
    """From the (partial) output's markers, and from the diagnostic: the outermost file outside
    is leaf.h, and the tree file that included it is b.h:14."""
    tree, outside = _layout(tmp_path)
    done = _run(tree)
    assert done.returncode != 0 and "# 1 " in done.stdout  # partial output, markers in it
    assert "PLANTED" in done.stderr and "from ./k.metal:2" in done.stderr  # what g++ says
    bounds = tree_bounds(tree, [])
    for check, text in ((check_markers, done.stdout), (check_diagnostic, done.stderr)):
        with pytest.raises(OutsideTreeError) as info:
            check("k.metal", text, tree, bounds)
        message = str(info.value)
        assert message.startswith(f"sub/b.h:14: includes {outside / 'leaf.h'}, outside the tree")
        assert "PLANTED" not in message


def test_a_folder_from_dash_i_holds_what_its_links_lead_to(tmp_path: Path) -> None:
    """-I outside the tree is the user's, links included; inside the tree links count where
    they lead."""
    tree, outside = _layout(tmp_path)
    chosen = tmp_path / "include"
    chosen.mkdir()
    (chosen / "leaf.h").symlink_to(outside / "leaf.h")
    (tree / "sub" / "link.h").symlink_to(outside / "leaf.h")
    bounds = tree_bounds(tree, [chosen])
    assert bounds.allows(chosen / "leaf.h")
    assert not bounds.allows(tree / "sub" / "link.h")
    assert not bounds.allows(chosen / ".." / "outside" / "leaf.h")
    inner = tree_bounds(tree, [tree / "sub"])  # an -I folder inside the tree: links followed
    assert inner.chosen == () and not inner.allows(tree / "sub" / "link.h")
