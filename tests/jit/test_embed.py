"""``metallib-builder embed`` and the text-to-C++ layer: literal limits, raw-string delimiters
(including a header that contains the default closing sequence), and the generated source compiled
and run with the host compiler to read every preamble back."""

from __future__ import annotations

import shutil
import subprocess
from collections.abc import Callable
from pathlib import Path

import pytest
from clirun import run_cli

from builder.jit.literals import LITERAL_LIMIT, raw_delimiter, raw_literal, split_text
from builder.jit.preamble import inline_preamble
from builder.kernels.bounded_run import find_compiler

TREE = {
    "kern/add.h": (
        "#pragma once\n#include <metal_stdlib>\n"
        '#include "common/util.h"\ntemplate <typename T> T add(T a, T b) { return a + b; }\n'
    ),
    "kern/mul.h": '#pragma once\n#include "common/util.h"\nint mul = UTIL;\n',
    "common/util.h": "#pragma once\n#define UTIL 3\n",
}


def _compile_and_dump(source: Path, names: list[str], namespace: str = "metal_jit") -> list[str]:
    """Compile the generated source with a main() that prints each preamble; their texts."""
    cxx = find_compiler().path  # scripts/setup.sh installs g++: missing is a failure
    main_cpp = source.parent / "dump_main.cpp"
    calls = "\n".join(
        f'  {{ auto t = {namespace}::preamble("{n}"); std::fwrite(t.data(), 1, t.size(), stdout);'
        " std::fputc(0, stdout); }"
        for n in names
    )
    main_cpp.write_text(
        "#include <cstdio>\n#include <string_view>\n"
        f"namespace {namespace} {{ std::string_view preamble(std::string_view); }}\n"
        f"int main() {{\n{calls}\n  return 0;\n}}\n",
        encoding="utf-8",
    )
    exe = source.parent / "dump"
    subprocess.run(
        [
            cxx,
            "-std=c++17",
            "-Wall",
            "-Wextra",
            "-Werror",
            str(source),
            str(main_cpp),
            "-o",
            str(exe),
        ],
        check=True,
    )
    out = subprocess.run([str(exe)], capture_output=True, check=True).stdout
    return out.decode("utf-8").split("\0")[:-1]


def test_split_text_respects_the_limit_and_lines() -> None:
    text = "".join(f"line {i} " + "x" * (i % 50) + "\n" for i in range(2000))
    pieces = split_text(text, 1000)
    assert "".join(pieces) == text
    assert all(len(p.encode()) <= 1000 for p in pieces)
    assert all(p.endswith("\n") for p in pieces)
    long_line = "é" * 3000  # 2 bytes each, no newline: cut at a character boundary
    pieces = split_text(long_line, 1001)
    assert "".join(pieces) == long_line and all(len(p.encode()) <= 1001 for p in pieces)
    assert split_text("") == [""]
    assert LITERAL_LIMIT <= 16_380  # MSVC's per-literal limit (C2026)


def test_delimiter_avoids_collisions() -> None:
    assert raw_delimiter("plain") == "mbjit"
    assert raw_delimiter('x )mbjit" y') == "mbjit0"
    assert raw_delimiter(')mbjit" )mbjit0"') == "mbjit1"
    assert raw_literal('a)mbjit"b') == 'R"mbjit0(a)mbjit"b)mbjit0"'


def test_embed_round_trip_through_the_compiler(
    kernel_tree: Callable[..., Path], capsys: pytest.CaptureFixture[str], tmp_path: Path
) -> None:
    evil = '#pragma once\nconst char* s = R"mbjit(nested)mbjit";\n// ends with )mbjit0" too\n'
    root = kernel_tree({**TREE, "kern/evil.h": evil, "kern/big.h": "// x\n" * 9000})
    out = tmp_path / "gen" / "pre.cpp"
    out.parent.mkdir()
    headers = ["kern/add.h", "kern/mul.h", "kern/evil.h", "kern/big.h"]
    code, _, err = run_cli(
        [
            "embed",
            *(str(root / h) for h in headers),
            "-I",
            str(root),
            "-D",
            "JIT=1",
            "-o",
            str(out),
            "--jit-namespace",
            "ns::jit",
        ],
        capsys,
    )
    assert code == 0, err
    text = out.read_text(encoding="utf-8")
    assert 'R"mbjit1(' in text  # the evil header forced another delimiter
    assert text.count("#define UTIL 3") == 1  # shared header stored once
    got = _compile_and_dump(out, headers, "ns::jit")
    want = [inline_preamble([root / h], [root], ["JIT=1"]).text for h in headers]
    assert got == want
    assert got[0].startswith('#define JIT 1\n#line 1 "kern/add.h"\n')
    assert str(root) not in text  # #line paths are relative to the -I directory


def test_embed_cstring_round_trip_matches_the_string_api(
    kernel_tree: Callable[..., Path], capsys: pytest.CaptureFixture[str], tmp_path: Path
) -> None:
    """--api cstring: the same texts as --api string (one piece, many pieces, none, a header
    that forces another raw-string delimiter), through ``preamble()`` and the functions."""
    evil = '#pragma once\nconst char* s = R"mbjit(nested)mbjit";\n'
    root = kernel_tree(
        {**TREE, "kern/evil.h": evil, "kern/big.h": "// x\n" * 9000, "kern/empty.h": ""}
    )
    headers = ["kern/add.h", "kern/evil.h", "kern/big.h", "kern/empty.h"]
    texts = {}
    for api in ("string", "cstring"):
        out = tmp_path / api / "pre.cpp"
        out.parent.mkdir()
        args = ["embed", *(str(root / h) for h in headers), "-I", str(root), "-o", str(out)]
        code, _, err = run_cli([*args, "--jit-api", api], capsys)
        assert code == 0, err
        texts[api] = _compile_and_dump(out, headers)
    assert texts["cstring"] == texts["string"]
    assert texts["cstring"][3] == "" and len(texts["cstring"][2]) > 2 * LITERAL_LIMIT
    source = (tmp_path / "cstring" / "pre.cpp").read_text(encoding="utf-8")
    assert "const char* add() {" in source and "std::string" not in source.replace(
        "std::string_view", ""
    )


def test_embed_is_deterministic_and_leaves_unchanged_output_alone(
    kernel_tree: Callable[..., Path], capsys: pytest.CaptureFixture[str], tmp_path: Path
) -> None:
    root = kernel_tree(TREE)
    out = tmp_path / "a.cpp"
    args = ["embed", str(root / "kern/add.h"), "-I", str(root), "-o", str(out)]
    assert run_cli(args, capsys)[0] == 0
    first, stat = out.read_bytes(), out.stat()
    code, _, err = run_cli(args, capsys)
    assert code == 0 and "(unchanged)" in err
    assert out.read_bytes() == first and out.stat().st_mtime_ns == stat.st_mtime_ns
    copy = tmp_path / "copy"
    shutil.copytree(root, copy)
    other = tmp_path / "b.cpp"
    assert (
        run_cli(["embed", str(copy / "kern/add.h"), "-I", str(copy), "-o", str(other)], capsys)[0]
        == 0
    )
    assert other.read_bytes() == first  # another directory, same bytes


def test_embed_strip_comments(
    kernel_tree: Callable[..., Path], capsys: pytest.CaptureFixture[str], tmp_path: Path
) -> None:
    root = kernel_tree({**TREE, "kern/doc.h": "// about\nint x; /* why */\n"})
    out = tmp_path / "s.cpp"
    args = ["embed", str(root / "kern/doc.h"), "-I", str(root), "-o", str(out)]
    assert run_cli([*args, "--strip-comments"], capsys)[0] == 0
    assert _compile_and_dump(out, ["kern/doc.h"]) == ['#line 1 "kern/doc.h"\n\nint x;\n']


def test_embed_missing_include_is_one_line_exit_2(
    kernel_tree: Callable[..., Path], capsys: pytest.CaptureFixture[str], tmp_path: Path
) -> None:
    root = kernel_tree({"k/k.h": '#pragma once\n#include <metal_stdlib>\n#include "k/missing.h"\n'})
    out = tmp_path / "o.cpp"
    code, stdout, err = run_cli(
        ["embed", str(root / "k/k.h"), "-I", str(root), "-o", str(out)], capsys
    )
    assert code == 2 and stdout == ""
    lines = err.strip().splitlines()
    assert len(lines) == 1
    assert f'{root / "k/k.h"}:3: quoted include "k/missing.h" not found' in lines[0]
    assert not out.exists()


def test_embed_usage_errors(
    kernel_tree: Callable[..., Path], capsys: pytest.CaptureFixture[str], tmp_path: Path
) -> None:
    root = kernel_tree(TREE)
    base = ["embed", str(root / "kern/add.h"), "-I", str(root), "-o", str(tmp_path / "o.cpp")]
    assert run_cli([*base, "--jit-namespace", "not a ns"], capsys)[0] == 2
    assert run_cli([*base, "-D", "9X"], capsys)[0] == 2
    assert run_cli(["embed", str(root / "nope.h"), "-o", str(tmp_path / "o.cpp")], capsys)[0] == 2
    code, out, _ = run_cli(["embed", "--help"], capsys)
    assert code == 0 and "Examples:" in out


def test_named_preambles(
    kernel_tree: Callable[..., Path], capsys: pytest.CaptureFixture[str], tmp_path: Path
) -> None:
    """``--preamble NAME=HEADER``: a preamble under a chosen name, several headers inlined into
    it in order (as a tree's [build.preambles]), after the positional HEADERs; the text read
    back is the headers' inlined text, each file once."""
    root = kernel_tree(TREE)
    out = tmp_path / "named.cpp"
    args = ["embed", str(root / "common/util.h"), "-I", str(root), "-o", str(out)]
    both = [f"--preamble=arith={root / 'kern/add.h'}", f"--preamble=arith={root / 'kern/mul.h'}"]
    code, _, err = run_cli([*args, *both], capsys)
    assert code == 0, err
    text = out.read_text()
    assert "const std::string& util();" in text and "const std::string& arith();" in text
    util, arith = _compile_and_dump(out, ["common/util.h", "kern/add.h, kern/mul.h"])
    alone = inline_preamble([root / "kern/add.h", root / "kern/mul.h"], [root]).text
    assert arith == alone and util == inline_preamble([root / "common/util.h"], [root]).text
    assert arith.count("#define UTIL 3") == 1  # util.h once, though both include it
    for bad, words in [
        ("--preamble=util=" + str(root / "kern/add.h"), "'util' names two preambles"),
        ("--preamble=9x=" + str(root / "kern/add.h"), "'9x' is not a C++ function name"),
        ("--preamble=nothing", "expected NAME=HEADER"),
    ]:
        code, _, err = run_cli([*args, bad], capsys)
        assert code == 2 and words in err and err.count("\n") == 1, err


def test_generator_entry_point_fails_with_exit_2(
    kernel_tree: Callable[..., Path], tmp_path: Path
) -> None:
    import os
    import sys

    import builder

    root = kernel_tree({"k.h": '#include "gone.h"\n'})
    env = {**os.environ, "PYTHONPATH": str(Path(builder.__file__).parent.parent)}
    proc = subprocess.run(
        [
            sys.executable,
            "-m",
            "builder.jit",
            "embed",
            str(root / "k.h"),
            "-o",
            str(tmp_path / "o.cpp"),
        ],
        capture_output=True,
        text=True,
        check=False,
        env=env,
        cwd=tmp_path,
    )
    assert proc.returncode == 2
    assert proc.stderr.startswith("error: ") and "k.h:1:" in proc.stderr
