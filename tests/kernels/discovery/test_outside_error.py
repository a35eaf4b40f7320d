"""An ``#error`` in a header outside the tree, included straight from an entry file (issue 33
item 21): the diagnostic alone refuses it, naming the include and never the text, as GCC and
clang write it. Until now only the line markers, checked first, stopped this case, so a
diagnostic check that missed it (or was never run) went unnoticed.

The preprocessor runs here for real (``-E`` only); what it wrote is checked first, so that
each test stands on the diagnostic as the compiler gives it."""

from __future__ import annotations

import shutil
import subprocess
from pathlib import Path

import pytest

from builder.kernels.confinement import (
    OutsideTreeError,
    check_diagnostic,
    check_markers,
    check_run,
    tree_bounds,
)

COMPILERS = [c for c in ("g++", "clang++") if shutil.which(c)]
pytestmark = pytest.mark.skipif(not COMPILERS, reason="needs g++ or clang++ (-E only)")


def _layout(tmp_path: Path) -> tuple[Path, Path]:
    tree, outside = tmp_path / "tree", tmp_path / "outside"
    tree.mkdir()
    outside.mkdir()
    (outside / "err.h").write_text("#error PLANTED\n")
    (tree / "ok.h").write_text("int ok;\n")
    (tree / "k.metal").write_text('#include "ok.h"\n#include "../outside/err.h"\nint k;\n')
    return tree, outside


def _run(compiler: str, tree: Path) -> subprocess.CompletedProcess[str]:
    command = [compiler, "-E", "-x", "c++", "-undef", "-nostdinc", "./k.metal"]
    return subprocess.run(command, cwd=tree, capture_output=True, text=True, check=False)


@pytest.mark.parametrize("via", ["entry file", "tree header", "outside header"])
@pytest.mark.parametrize("compiler", COMPILERS)
def test_the_diagnostic_alone_refuses_an_error_in_an_outside_header(
    tmp_path: Path, compiler: str, via: str
) -> None:
    """err.h included by the entry file itself; by a header of the tree (the file the error is
    in is the only one outside, at the end of a chain of three); or by another header outside,
    which the tree's header includes (the outermost file outside is named). GCC lists the
    including files innermost first, clang outermost first."""
    tree, outside = _layout(tmp_path)
    where, named = "k.metal:2", outside / "err.h"
    if via != "entry file":
        (tree / "sub").mkdir()
        leads_to = "err.h" if via == "tree header" else "leaf.h"
        (tree / "sub" / "b.h").write_text(f'int b;\n#include "../../outside/{leads_to}"\n')
        (outside / "leaf.h").write_text('#include "err.h"\n')
        (tree / "k.metal").write_text('#include "ok.h"\n#include "sub/b.h"\nint k;\n')
        where, named = "sub/b.h:2", outside / leads_to
    done = _run(compiler, tree)
    # what the compiler said: the #error's text, in err.h, and the include chain to it
    assert done.returncode != 0 and "PLANTED" in done.stderr and "outside/err.h:1:" in done.stderr
    assert f"from ./{where}" in done.stderr.replace("from sub/", "from ./sub/")
    with pytest.raises(OutsideTreeError) as info:
        check_diagnostic("k.metal", done.stderr, tree, tree_bounds(tree, []))
    message = str(info.value)
    assert message.startswith(f"{where}: includes {named}, outside the tree")
    assert "PLANTED" not in message
    # the same headers inside an include folder the user named (-I) are allowed
    check_diagnostic("k.metal", done.stderr, tree, tree_bounds(tree, [outside]))


@pytest.mark.parametrize("compiler", COMPILERS)
def test_an_error_inside_the_tree_is_not_refused(tmp_path: Path, compiler: str) -> None:
    """The other side: an ``#error`` in the tree's own header names only tree files, so the
    diagnostic may be shown."""
    tree, _ = _layout(tmp_path)
    (tree / "k.metal").write_text('#include "ok.h"\n#include "bad.h"\n')
    (tree / "bad.h").write_text("int b;\n#error MINE\n")
    done = _run(compiler, tree)
    assert done.returncode != 0 and "bad.h:2:" in done.stderr and "MINE" in done.stderr
    check_diagnostic("k.metal", done.stderr, tree, tree_bounds(tree, []))


@pytest.mark.parametrize("compiler", COMPILERS)
def test_each_diagnostic_has_its_own_include_chain(tmp_path: Path, compiler: str) -> None:
    """Two errors in one run: the tree's own ``#error`` first (its chain: k.metal:1), then one
    outside, reached through sub/b.h and leaf.h. The place named is the second chain's."""
    tree, outside = _layout(tmp_path)
    (tree / "sub").mkdir()
    (tree / "bad.h").write_text("#error MINE\n")
    (tree / "sub" / "b.h").write_text('int b;\n#include "../../outside/leaf.h"\n')
    (outside / "leaf.h").write_text('#include "err.h"\n')
    (tree / "k.metal").write_text('#include "bad.h"\n#include "sub/b.h"\n')
    done = _run(compiler, tree)
    assert done.returncode != 0
    assert done.stderr.index("MINE") < done.stderr.index("PLANTED")  # both errors, in order
    with pytest.raises(OutsideTreeError) as info:
        check_diagnostic("k.metal", done.stderr, tree, tree_bounds(tree, []))
    assert str(info.value).startswith(f"sub/b.h:2: includes {outside / 'leaf.h'}, outside")


@pytest.mark.parametrize("compiler", COMPILERS)
def test_a_run_checks_its_diagnostic_when_no_marker_shows_the_file(
    tmp_path: Path, compiler: str
) -> None:
    """``check_run`` on the output cut before the marker that enters err.h (the part of it
    that names only the tree's files): the markers pass, and the diagnostic refuses."""
    tree, outside = _layout(tmp_path)
    done = _run(compiler, tree)
    marker = next(
        i for i, line in enumerate(done.stdout.splitlines(keepends=True)) if "err.h" in line
    )
    cut = "".join(done.stdout.splitlines(keepends=True)[:marker])
    assert "int ok;" in cut and "err.h" not in cut
    bounds = tree_bounds(tree, [])
    check_markers("k.metal", cut, tree, bounds)  # nothing outside in what is left
    with pytest.raises(OutsideTreeError) as info:
        check_run("k.metal", cut, done.stderr, tree, bounds, ())
    assert str(info.value).startswith(f"k.metal:2: includes {outside / 'err.h'}, outside the tree")


@pytest.mark.parametrize("compiler", COMPILERS)
def test_a_run_without_bounds_is_not_checked(tmp_path: Path, compiler: str) -> None:
    """``confine=None`` is a Python caller's choice (``preprocess(..., confine=None)``): the
    same run that is refused within the tree's bounds passes unchecked."""
    tree, _ = _layout(tmp_path)
    done = _run(compiler, tree)
    assert "err.h" in done.stdout and "err.h" in done.stderr
    check_run("k.metal", done.stdout, done.stderr, tree, None, ())
    with pytest.raises(OutsideTreeError):
        check_run("k.metal", done.stdout, done.stderr, tree, tree_bounds(tree, []), ())


@pytest.mark.parametrize("compiler", COMPILERS)
def test_an_error_in_an_entry_file_that_leads_out_is_named_by_the_entry(
    tmp_path: Path, compiler: str
) -> None:
    """No include chain: the entry file itself is a link to err.h outside (discovery refuses
    such an entry before running anything; the diagnostic check holds on its own too)."""
    tree, outside = _layout(tmp_path)
    (tree / "k.metal").unlink()
    (tree / "k.metal").symlink_to(outside / "err.h")
    done = _run(compiler, tree)
    assert done.returncode != 0 and "PLANTED" in done.stderr
    assert "included from" not in done.stderr and "k.metal:1:" in done.stderr
    with pytest.raises(OutsideTreeError) as info:
        check_diagnostic("k.metal", done.stderr, tree, tree_bounds(tree, []))
    assert str(info.value).startswith(f"k.metal: includes {outside / 'err.h'}, outside the tree")
