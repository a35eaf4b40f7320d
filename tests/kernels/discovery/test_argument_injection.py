"""Folders named like compiler options: analysing a tree runs and writes nothing the tree names.

Discovery hands entry files to the host preprocessor. Given as bare words, ``-Bfoo/x.metal``
makes g++ look for its front end at ``foo/x.metalcc1plus`` (a program the tree ships), and
``-o/ABS/out/y.metal`` makes it write the preprocessed text of the next file there. Each tree
below holds one such folder, an executable that would touch a marker file, and enough ordinary
entry files that several go to one compiler run (``-j 1``: a run's files follow each other on
its command line). The fixed tool lists the planted entry file's kernel like any other.
"""

from __future__ import annotations

import json
import stat
from pathlib import Path

import pytest
from support.hostile import Cli, library_with

ORDINARY = [f"a{i}.metal" for i in range(11)]


def _tree(tmp_path: Path, attack: str) -> tuple[Path, list[Path], str]:
    """(tree, files that must never appear, the planted entry file) for one attack."""
    tree = tmp_path / "tree"
    tree.mkdir()
    for i, name in enumerate(ORDINARY):
        (tree / name).write_text(f"kernel void ordinary_{i}() {{}}\n")
    marker = tmp_path / "ran"
    if attack == "-B":
        planted = "-Bfoo/x.metal"
        program = tree / "foo" / "x.metalcc1plus"  # what g++ -Bfoo/x.metal runs as its front end
        program.parent.mkdir()
        program.write_text(f"#!/bin/sh\ntouch '{marker}'\n")
        program.chmod(program.stat().st_mode | stat.S_IXUSR)
        written = [marker]
    elif attack == "-o":
        (tmp_path / "out").mkdir()
        target = tmp_path / "out" / "y.metal"  # what g++ -o/ABS/out/y.metal would write
        planted = "-o" + target.as_posix()
        written = [target]
    else:
        planted = "--help/h.metal"
        written = []
    (tree / planted).parent.mkdir(parents=True, exist_ok=True)
    (tree / planted).write_text("kernel void planted_kernel() {}\n")
    return tree, written, planted


ATTACKS = ["-B", "-o", "--help"]


@pytest.mark.parametrize("attack", ATTACKS)
def test_kernels_lists_the_planted_file_and_runs_nothing(
    attack: str, tmp_path: Path, cli: Cli
) -> None:
    tree, written, planted = _tree(tmp_path, attack)
    code, out, err = cli("kernels", "--source-dir", tree, "-j", "1", "--format", "json")
    assert code == 0, err
    kernels = {k["name"]: k["source"] for k in json.loads(out)["kernels"]}
    assert kernels["planted_kernel"] == planted
    assert len(kernels) == len(ORDINARY) + 1
    assert not [p for p in written if p.exists()]


@pytest.mark.parametrize("attack", ATTACKS)
def test_report_by_source_runs_nothing(attack: str, tmp_path: Path, cli: Cli) -> None:
    tree, written, planted = _tree(tmp_path, attack)
    names = ["planted_kernel", *(f"ordinary_{i}" for i in range(len(ORDINARY)))]
    library = tmp_path / "lib.metallib"
    library.write_bytes(library_with(names))
    code, out, err = cli(
        "report", library, "--source-dir", tree, "-j", "1", "--by", "source", "--format", "json"
    )
    assert code == 0, err
    groups = {f["name"]: f["group"] for f in json.loads(out)["functions"]}
    assert groups["planted_kernel"] == planted and groups["ordinary_3"] == "a3.metal"
    assert not [p for p in written if p.exists()]


@pytest.mark.parametrize("attack", ATTACKS)
def test_variants_from_runs_nothing(attack: str, tmp_path: Path, cli: Cli) -> None:
    tree, written, planted = _tree(tmp_path, attack)
    names = ["planted_kernel", *(f"ordinary_{i}" for i in range(len(ORDINARY)))]
    library = tmp_path / "lib.metallib"
    library.write_bytes(library_with(names))
    out_dir = tmp_path / "variants"
    code, _, err = cli(
        "variants",
        "--from",
        library,
        "--source-dir",
        tree,
        "-j",
        "1",
        "-o",
        out_dir,
        f"--jit={planted}",
    )
    assert code == 0, err
    assert not [p for p in written if p.exists()]
    assert {p.name for p in out_dir.iterdir()} >= {"variants.json"}
