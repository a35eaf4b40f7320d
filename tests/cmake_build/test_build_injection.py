"""What a tree says reaches build.ninja, CMake and command lines only checked or quoted.

A newline in ``[build] library`` used to become raw lines of build.ninja (``command = touch
pwned``), NUL a traceback, ``.`` and ``..`` hidden files. Now every value of metallib.toml and
every file name a build carries is refused with one line naming the key or the file when it
could change the build's structure, and quoted when it only looks odd: a tree whose entry files
are named ``$(touch X).metal``, with backticks, quotes, spaces and ``&``, or like the options of
test_argument_injection, builds and runs none of it.
"""

from __future__ import annotations

import json
import stat
import sys
from pathlib import Path

import pytest
from support.hostile import Cli, assert_one_error_line

ROOT = Path(__file__).resolve().parents[2]
STANDIN = ROOT / "tests" / "cmake_build" / "standin" / "metal-standin"


def _tree(tmp_path: Path, toml: str | None = None, name: str = "tree") -> Path:
    tree = tmp_path / name
    tree.mkdir()
    (tree / "a.metal").write_text('#include "a.h"\nkernel void ka() {}\n')
    (tree / "a.h").write_text("#pragma once\n")
    if toml is not None:
        (tree / "metallib.toml").write_text(toml)
    return tree


def _build(cli: Cli, tree: Path, build_dir: Path, *extra: object) -> tuple[int, str, str]:
    return cli("build", "--jit", "*", "--source-dir", tree, "--build-dir", build_dir, *extra)


INJECTIONS = [
    (
        '[build]\nlibrary = "x\\n  command = touch PWNED && uname -a\\n  foo = "\n',
        "[build] library",
    ),
    ('[build]\nlibrary = "a\\u0000b"\n', "[build] library"),
    ('[build]\nlibrary = "."\n', "[build] library"),
    ('[build]\nlibrary = ".."\n', "[build] library"),
    ('[build]\nlibrary = "../up"\n', "[build] library"),
    ('[build]\nlibrary = "-o"\n', "[build] library"),
    ('[build]\nflags = ["-Wall\\n  command = touch PWNED"]\n', "[build] flags"),
    ('[build]\nflags = ["-Wall;touch PWNED"]\n', "[build] flags"),
    ('[build]\nflags = ["a\\u0000"]\n', "[build] flags"),
    ('[build]\nflags = ["$<TARGET_FILE:metal_jit>"]\n', "[build] flags"),
    ('[kernels]\ninclude-dirs = [".\\n  command = touch PWNED"]\n', "[kernels] include-dirs"),
    ('[kernels]\ninclude-dirs = [".;/etc"]\n', "include folder"),
    ('[kernels]\ndefines = ["X=1\\n  command = touch PWNED"]\n', "[kernels] defines"),
    ('[kernels]\ndefines = ["X=\\r1"]\n', "[kernels] defines"),
    ('[kernels]\ndefines = ["X=1;Y=2"]\n', "define"),
    ('[build]\nstd = "metal3.1\\n"\n', "[build] std"),
    ('[build]\ndeployment-target = "14.0\\n"\n', "[build] deployment-target"),
    ('[build]\naot-only = ["a.metal\\u001b"]\n', "[build] aot-only"),
    ('[build.preambles]\nx = "/etc/shadow"\n', "[build.preambles] x: /etc/shadow is outside"),
    ('[build.preambles]\nx = "a.h\\n"\n', "[build.preambles] x"),
]


@pytest.mark.parametrize(("toml", "key"), INJECTIONS, ids=[f"{i}" for i in range(len(INJECTIONS))])
def test_hostile_settings_are_one_line_naming_the_key(
    toml: str, key: str, tmp_path: Path, cli: Cli, monkeypatch: pytest.MonkeyPatch
) -> None:
    tree = _tree(tmp_path, toml)
    monkeypatch.chdir(tmp_path)  # where a "touch PWNED" would land
    build_dir = tmp_path / "build"
    code, out, err = _build(cli, tree, build_dir)
    assert_one_error_line(code, err, str(tree / "metallib.toml"), key)
    assert out == "" and not build_dir.exists() and not (tmp_path / "PWNED").exists()


def test_a_preamble_symlinked_out_of_the_tree_names_both(tmp_path: Path, cli: Cli) -> None:
    secret = tmp_path / "secret.txt"
    secret.write_text("token\n")
    tree = _tree(tmp_path, '[build.preambles]\nx = "inner.h"\n')
    (tree / "inner.h").symlink_to(secret)
    for command in (
        ["kernels", "--source-dir", tree],
        ["build", "--jit", "*", "--source-dir", tree, "--build-dir", tmp_path / "b"],
    ):
        code, _, err = cli(*command)
        assert_one_error_line(
            code,
            err,
            "[build.preambles] x",
            str(tree / "inner.h"),
            str(secret),
            "outside the source folder",
            str(tree),
        )
    # the way out for a tree that needs it: the user names the folder on the command line
    code, _, err = cli("kernels", "--source-dir", tree, "-I", tmp_path)
    assert code == 0, err


@pytest.mark.parametrize(
    "bad",
    [
        "line\nbreak.metal",
        "semi;colon.metal",
        "br[acket.metal",
        "hash#.metal",
        "$(touch PWNED).metal",
        "x|touch PWNED.metal",
        "not-utf8-\udce9.metal",
    ],
)
def test_entry_names_a_build_cannot_carry_are_refused_but_analysed(
    bad: str, tmp_path: Path, cli: Cli
) -> None:
    tree = _tree(tmp_path)
    (tree / bad).write_text("kernel void planted() {}\n")
    code, out, err = cli("kernels", "--source-dir", tree, "--format", "json")
    assert code == 0, err
    sources = {k["name"]: k["source"] for k in json.loads(out)["kernels"]}
    assert sources["planted"] == bad.replace("\udce9", "\\xe9")  # escaped bytes in JSON
    code, out, err = _build(cli, tree, tmp_path / "build")
    assert_one_error_line(code, err, "entry file", "rename it")
    assert not (tmp_path / "build").exists()


def test_a_folder_name_that_cannot_name_the_library(tmp_path: Path, cli: Cli) -> None:
    tree = _tree(tmp_path, name="-lib x")
    code, _, err = _build(cli, tree, tmp_path / "build")
    assert_one_error_line(code, err, "folder's name", "[build] library")
    (tree / "metallib.toml").write_text('[build]\nlibrary = "fine"\n')
    code, _, err = cli("kernels", "--source-dir", tree)  # analysis never needed the name
    assert code == 0, err


ODD_NAMES = [
    "`touch PWNED`.metal",
    "(touch PWNED).metal",
    "a b.metal",
    'q"u.metal',
    "s'q.metal",
    "amp&x.metal",
    "x:y.metal",
    "-Bfoo/x.metal",
    "--help/h.metal",
]


@pytest.mark.cmake
def test_odd_but_legal_names_build_quoted_and_run_nothing(
    tmp_path: Path, cli: Cli, monkeypatch: pytest.MonkeyPatch
) -> None:
    """One mixed build (odd names JIT, the rest AOT through the stand-in compiler): every name
    reaches Ninja's shell commands quoted, so nothing runs; the manifest records each entry."""
    tree = _tree(tmp_path, '[build]\nlibrary = "odd"\naot-only = ["a.metal", "-B*"]\n')
    program = tree / "foo" / "x.metalcc1plus"
    program.parent.mkdir()
    program.write_text(f"#!/bin/sh\ntouch '{tmp_path / 'RAN'}'\n")
    program.chmod(program.stat().st_mode | stat.S_IXUSR)
    for i, name in enumerate(ODD_NAMES):
        (tree / name).parent.mkdir(parents=True, exist_ok=True)
        (tree / name).write_text(f"kernel void odd_{i}() {{}}\n")
    monkeypatch.chdir(tmp_path)
    build_dir = tmp_path / "build"
    code, out, err = _build(cli, tree, build_dir, "--metal-compiler", STANDIN, "--format", "json")
    assert code == 0, err
    manifest = json.loads((build_dir / "manifest.json").read_text())
    modes = {f["name"]: f["mode"] for f in manifest["units"]}
    assert modes == {
        "a.metal": "aot",
        "-Bfoo/x.metal": "aot",
        **{n: "jit" for n in ODD_NAMES if n != "-Bfoo/x.metal"},
    }
    assert (build_dir / "odd.metallib").is_file() and json.loads(out)
    assert not [
        p.name for p in (tmp_path, build_dir) for p in p.rglob("*") if p.name in ("PWNED", "RAN")
    ]
    assert sys.platform != "win32"
