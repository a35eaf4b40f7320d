"""``embed --depfile``: Make-syntax depfiles as build tools read them.

Ninja is the independent reader here: a ``build.ninja`` runs ``python -m builder.jit embed`` with
``deps = gcc``, and ``ninja -t deps`` shows what Ninja understood, for headers in folders whose
names need escaping (space, ``$``, ``#``); editing a nested header makes Ninja regenerate.
"""

from __future__ import annotations

import os
import subprocess
import sys
from collections.abc import Callable
from pathlib import Path

import pytest
from clirun import run_cli

import builder
from builder.cmake_build.cmake import find_tool
from builder.errors import UsageError
from builder.files.atomic import depfile_text, escape_make_path

ODD = "odd dir $HOME #1"  # a space, a Make/Ninja variable, a Make comment


def test_escaping_follows_gcc() -> None:
    assert escape_make_path("a b") == "a\\ b"
    assert escape_make_path("a$b#c") == "a$$b\\#c"
    assert escape_make_path("a\\ b") == "a\\\\\\ b"  # the backslash stays a backslash
    assert escape_make_path("a\\b") == "a\\b"
    with pytest.raises(UsageError, match="line break"):
        escape_make_path("a\nb")
    assert depfile_text("o.cpp", ["x.h", "y.h", "x.h"]) == "o.cpp: \\\n  x.h \\\n  y.h\n"


def _ninja(root: Path, *args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [find_tool("ninja"), "-C", str(root), *args], capture_output=True, text=True, check=False
    )


def test_ninja_reads_every_inlined_header_back(
    kernel_tree: Callable[[dict[str, str]], Path], tmp_path: Path
) -> None:
    tree = kernel_tree(
        {
            f"{ODD}/k/top.h": '#pragma once\n#include "k/mid.h"\nint top;\n',
            f"{ODD}/k/mid.h": (
                '#pragma once\n#include <metal_stdlib>\n#include "k/deep.h"\nint mid;\n'
            ),
            f"{ODD}/k/deep.h": "#pragma once\nint deep;\n",
        }
    )
    inc = tree / ODD
    build = tmp_path / "build"
    build.mkdir()
    python = Path(builder.__file__).resolve().parents[1]

    def quoted(path: Path) -> str:  # one shell word inside build.ninja
        return "'" + str(path).replace("$", "$$") + "'"

    (build / "build.ninja").write_text(
        "rule embed\n"
        f"  command = env PYTHONPATH={quoted(python)} {quoted(Path(sys.executable))} -m builder.jit"
        f" embed {quoted(inc / 'k/top.h')} -I {quoted(inc)} -o $out --jit-api cstring"
        " --depfile $out.d\n"
        "  depfile = $out.d\n  deps = gcc\n  restat = 1\n"
        "build pre.cpp: embed\n",
        encoding="utf-8",
    )
    first = _ninja(build)
    assert first.returncode == 0, first.stdout + first.stderr
    deps = _ninja(build, "-t", "deps", "pre.cpp")
    listed = [line.strip() for line in deps.stdout.splitlines()[1:] if line.strip()]
    assert listed == [str((inc / f"k/{n}.h").resolve()) for n in ("top", "mid", "deep")]
    assert "no work to do" in _ninja(build).stdout
    deep = inc / "k/deep.h"
    deep.write_text("#pragma once\nint deeper;\n", encoding="utf-8")
    again = _ninja(build)
    assert again.returncode == 0 and "[1/1]" in again.stdout, again.stdout
    assert "int deeper;" in (build / "pre.cpp").read_text(encoding="utf-8")


def test_depfile_written_only_when_changed(
    kernel_tree: Callable[[dict[str, str]], Path],
    tmp_path: Path,
    capsys: pytest.CaptureFixture[str],
) -> None:
    tree = kernel_tree({"k/a.h": '#include "k/b.h"\nint a;\n', "k/b.h": "int b;\n"})
    out, dep = tmp_path / "gen" / "a.cpp", tmp_path / "gen" / "a.d"
    args = ["embed", str(tree / "k/a.h"), "-I", str(tree), "-o", str(out), "--depfile", str(dep)]
    assert run_cli(args, capsys)[0] == 0
    first = dep.stat().st_mtime_ns
    os.utime(dep, ns=(first - 10**9, first - 10**9))  # so a rewrite could not keep the time
    assert run_cli(args, capsys)[0] == 0
    assert dep.stat().st_mtime_ns == first - 10**9
    assert sorted(p.name for p in out.parent.iterdir()) == ["a.cpp", "a.d"]  # no temporaries
    (tree / "k/b.h").write_text('#include "k/c.h"\nint b;\n', encoding="utf-8")
    (tree / "k/c.h").write_text("int c;\n", encoding="utf-8")
    assert run_cli(args, capsys)[0] == 0
    assert dep.read_text(encoding="utf-8").endswith(f"{(tree / 'k/c.h').resolve()}\n")


def test_cstring_refuses_text_with_a_nul(
    kernel_tree: Callable[[dict[str, str]], Path],
    tmp_path: Path,
    capsys: pytest.CaptureFixture[str],
) -> None:
    tree = kernel_tree({"k/n.h": "int n; // \0\n"})
    out = tmp_path / "n.cpp"
    base = ["embed", str(tree / "k/n.h"), "-I", str(tree), "-o", str(out)]
    code, _, err = run_cli([*base, "--jit-api", "cstring"], capsys)
    assert code == 2 and len(err.strip().splitlines()) == 1 and "NUL" in err
    assert not out.exists()
    assert run_cli([*base, "--jit-api", "string"], capsys)[0] == 0
    assert run_cli([*base, "--jit-api", "wide"], capsys)[0] == 2
