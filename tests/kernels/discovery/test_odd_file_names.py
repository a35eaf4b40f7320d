"""File names that hold a newline, a tab, a quote or a backslash, as the preprocessor prints them.

GCC writes such a name in a line marker as a C string (``"./n\\nl.metal"``), and in a diagnostic
as it is (the newline cutting the line in two). Read back, each must be the file's own name: a
kernel of ``n<newline>l.metal`` was said to be written in ``nnl.metal`` (so ``variants`` refused a
split that loses nothing), and the diagnostic of such a file began ``l.metal:1:2:``. The
reference is the name the test gave the file."""

from __future__ import annotations

import json
import re
import subprocess
from collections.abc import Callable
from pathlib import Path

import pytest
from clirun import run_cli

from builder.kernels.bounded_run import find_compiler
from builder.kernels.definitions import marker_file

ODD = ["n\nl.h", "t\tab.h", 'q"uote.h', "back\\slash.h", "e\x1bsc.h", "é ü.h", "o\\no.h"]


def test_line_markers_give_back_the_file_names(tmp_path: Path) -> None:
    marker = re.compile(r'^# \d+ "((?:[^"\\\n]|\\.)*)"', re.MULTILINE)
    for name in ODD:
        (tmp_path / name).write_text("int x;\n")
        done = subprocess.run(
            [find_compiler().path, "-E", "-x", "c++", f"./{name}"],
            cwd=tmp_path,
            capture_output=True,
            text=True,
            check=True,
        )
        named = {marker_file(m) for m in marker.findall(done.stdout)}
        assert f"./{name}" in named, (name, named)


def _tree(root: Path, body: str) -> Path:
    root.mkdir()
    (root / "n\nl.metal").write_text(body + "[[kernel]] void k(device float* x) { }\n")
    (root / "good.metal").write_text("[[kernel]] void good(device float* x) { }\n")
    return root


def test_a_diagnostic_keeps_the_name_whole(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    tree = _tree(tmp_path / "tree", '#error "nope"\n')
    code, _, err = run_cli(["kernels", "--source-dir", str(tree)], capsys)
    assert code == 2 and err.count("\n") == 1, err
    shown = "n\\nl.metal"  # the name as the CLI escapes it
    assert err == f'error: {shown}: does not preprocess: {shown}:1:2: error: #error "nope"\n'


def test_a_jit_split_finds_the_code_in_its_own_file(
    tmp_path: Path,
    write_metallib: Callable[..., Path],
    capsys: pytest.CaptureFixture[str],
) -> None:
    tree = _tree(tmp_path / "tree", "")
    library = write_metallib("k.metallib", [("k", 300), ("good", 300)])
    args = ["variants", "--from", str(library), "--source-dir", str(tree), "--format", "json"]
    code, out, err = run_cli([*args, "--jit", "*", "-o", str(tmp_path / "out")], capsys)
    assert code == 0, err
    (jit,) = [v for v in json.loads(out)["variants"] if v["name"] == "jit-1"]
    assert sorted(jit["jit_sources"]) == ["good.metal", "n\nl.metal"]
    assert "nnl.metal" not in out + err
