"""``embed`` on a kernel tree written by someone else (docs/jit.md, "Untrusted trees"):

- file names holding newlines, quotes, backslashes, ``*/`` or bytes that are not UTF-8 reach the
  generated C++ only escaped: the source builds and runs, the code planted in the names never
  runs, and every name comes back exactly (as the lookup key, and as ``__FILE__`` where the
  run-time compiler reads the ``#line`` markers);
- quoted includes stay inside the ``-I`` folders and the given headers' folders unless allowed;
- ``embed`` never writes over one of its inputs.
"""

from __future__ import annotations

import os
import subprocess
from collections.abc import Callable
from pathlib import Path

import pytest
from clirun import run_cli

from builder.jit.generate import embed_headers, function_names
from builder.jit.literals import cxx_string
from builder.jit.preamble import (
    IncludeError,
    OutsideError,
    anchor_line_markers,
    confine,
    inline_preamble,
)
from builder.kernels.bounded_run import find_compiler

PLANT = 'static int planted{k} = __builtin_puts("PLANTED {k}");'
# Root headers (relative to the include folder) with names meant to break out of a #line string,
# a // comment or a registry key; the planted statement would print when compiled as code.
ROOT_NAMES = [
    f"nl\n{PLANT.format(k=1)}\n",  # newline and quotes: code on a line of its own
    'q"2\\.h',  # quote and backslash
    "bs\\",  # a trailing backslash would splice the next line into a // comment
    f'd\n"{PLANT.format(k=3)}\n/k.metal',  # a folder's name and a .metal file
    "star*/ \t?\x1b.h",  # end of a block comment, tab, '?', ESC
    os.fsdecode(b"raw\xff\xfe.h"),  # not UTF-8
    "new.h",  # a C++ keyword as the stem
    "a-b.h",  # a-b.h and a_b.h give the same identifier
    "a_b.h",
]
INCLUDED = "inc'\\q?.h"  # included by the first root: its name only appears in #line markers
# Each file prints, while the check program starts, the file name and line the compiler saw.
SHOW = 'static int shown{k} = (std::printf("%s%c%d%c", __FILE__, 0, __LINE__, 0), 0);\n'


def _write(root: Path, name: str, text: str) -> Path:
    path = root / name
    path.parent.mkdir(parents=True, exist_ok=True)
    with open(os.fsencode(path), "wb") as handle:
        handle.write(text.encode("utf-8"))
    return path


@pytest.fixture
def hostile_tree(tmp_path: Path) -> Path:
    """The include folder: every root shows where it is; the first includes INCLUDED."""
    root = tmp_path / "tree"
    _write(root, INCLUDED, "#pragma once\n\n" + SHOW.format(k=100))
    for k, name in enumerate(ROOT_NAMES):
        include = f'#include "{INCLUDED}"\n' if k == 0 else ""
        _write(root, name, f"#include <cstdio>\n{include}\n{SHOW.format(k=k)}")
    return root


def _cxx(*args: str) -> None:
    run = subprocess.run(
        [find_compiler().path, "-std=c++17", *args], capture_output=True, text=True, check=False
    )
    assert run.returncode == 0, run.stderr[-3000:]


def _run(exe: Path, *args: str) -> bytes:
    run = subprocess.run([str(exe), *args], capture_output=True, check=False)
    assert run.returncode == 0, run.stderr[-3000:]
    return run.stdout


@pytest.mark.parametrize("api", ["string", "cstring"])
def test_hostile_names_stay_inside_literals_and_round_trip(
    api: str, hostile_tree: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    headers = [hostile_tree / n for n in ROOT_NAMES]
    source = tmp_path / "out" / "pre.cpp"
    code, _, err = run_cli(
        ["embed", *map(str, headers), "-I", str(hostile_tree), "-o", str(source), "--jit-api", api],
        capsys,
    )
    assert code == 0, err
    text = source.read_text(encoding="utf-8")  # valid UTF-8 though a name is not
    assert "PLANTED" in text  # the names are in the source, escaped
    # The host program: reads NUL-separated keys, prints preamble(key) and each function's text.
    functions = function_names(ROOT_NAMES)
    returns = "const std::string&" if api == "string" else "const char*"
    main = tmp_path / "main.cpp"
    main.write_text(
        "#include <cstdio>\n#include <string>\n#include <string_view>\n"
        "namespace metal_jit {\nstd::string_view preamble(std::string_view);\n"
        + "".join(f"{returns} {f}();\n" for f in functions)
        + "}\nstatic void emit(std::string_view t) { std::fwrite(t.data(), 1, t.size(), stdout);"
        " std::fputc(0, stdout); }\n"
        'int main(int, char** argv) {\n  std::FILE* keys = std::fopen(argv[1], "rb");\n'
        "  std::string key;\n  for (int c; (c = std::fgetc(keys)) != EOF;) {\n"
        "    if (c) { key += char(c); continue; }\n"
        "    if (metal_jit::preamble(key).empty()) return 4;\n"
        "    emit(metal_jit::preamble(key));\n    key.clear();\n  }\n"
        + "".join(f"  emit(metal_jit::{f}());\n" for f in functions)
        + "  return 0;\n}\n",
        encoding="utf-8",
    )
    exe = tmp_path / "host"
    _cxx(
        "-Wall",
        "-Wextra",
        "-Werror",
        "-fsanitize=address,undefined",
        str(source),
        str(main),
        "-o",
        str(exe),
    )
    keys = tmp_path / "keys"
    keys.write_bytes(b"".join(os.fsencode(n) + b"\0" for n in ROOT_NAMES))
    out = _run(exe, str(keys))
    assert not out.startswith(b"PLANTED")  # static initializers would print before main
    texts = out.split(b"\0")[:-1]
    assert len(texts) == 2 * len(ROOT_NAMES)
    assert texts[: len(ROOT_NAMES)] == texts[len(ROOT_NAMES) :]  # lookup == function
    want = [p.text.encode() for p in embed_headers(headers, [hostile_tree], api=api)[1]]
    assert texts[: len(ROOT_NAMES)] == want
    # What the run-time compiler sees: each text compiled on its own reports its files' names.
    for k, (name, preamble) in enumerate(zip(ROOT_NAMES, texts[: len(ROOT_NAMES)])):
        check = tmp_path / f"check{k}.cpp"
        check.write_bytes(preamble + b"int main() { return 0; }\n")
        _cxx(str(check), "-o", str(tmp_path / f"check{k}"))
        shown = _run(tmp_path / f"check{k}").split(b"\0")[:-1]
        files = [name, INCLUDED] if k == 0 else [name]
        line = 4 if k == 0 else 3  # the SHOW line in the root; 3 in INCLUDED
        expected = [os.fsencode(files[0]), str(line).encode()]
        if k == 0:
            expected = [os.fsencode(INCLUDED), b"3", *expected]  # included first, then the rest
        assert shown == expected, name  # nothing else printed: no planted code ran


def test_a_name_no_depfile_can_hold_is_one_line_exit_2(
    hostile_tree: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    out, depfile = tmp_path / "pre.cpp", tmp_path / "pre.d"
    code, _, err = run_cli(
        [
            "embed",
            str(hostile_tree / ROOT_NAMES[0]),
            "-I",
            str(hostile_tree),
            "-o",
            str(out),
            "--depfile",
            str(depfile),
        ],
        capsys,
    )
    assert code == 2
    assert len(err.strip().splitlines()) == 1 and "line break" in err
    assert not depfile.exists()


def test_check_units_anchor_escaped_marker_paths(tmp_path: Path) -> None:
    """``check`` anchors markers to the tree; an escaped name stays the same name."""
    name = 'sub/q"\\x\n\xe9?.h'
    anchored = anchor_line_markers(f"#line 3 {cxx_string(name)}\nint a;\n", tmp_path)
    assert anchored == f"#line 3 {cxx_string(tmp_path.resolve().as_posix() + '/' + name)}\nint a;\n"
    absolute = f"#line 1 {cxx_string('/abs/x.h')}\n"
    assert anchor_line_markers(absolute, tmp_path) == absolute


# --- includes confined ----------------------------------------------------------------------


@pytest.fixture
def escaping_tree(tmp_path: Path) -> Callable[[str], Path]:
    """``make(include_line)``: tree/k.h holding that line; a file outside the tree, secret.h
    (tmp/secret.h), and tree/link.h, a symlink to it."""
    (tmp_path / "secret.h").write_text("int secret = 42;\n", encoding="utf-8")
    tree = tmp_path / "tree"
    (tree / "sub").mkdir(parents=True)
    (tree / "link.h").symlink_to(tmp_path / "secret.h")

    def make(line: str) -> Path:
        (tree / "sub" / "k.h").write_text(f"// kernel\n{line}\nint k;\n", encoding="utf-8")
        return tree

    return make


@pytest.mark.parametrize(
    "line",
    [
        '#include "../../secret.h"',
        '#include "{tmp}/secret.h"',
        '#include "../link.h"',
        '#include "' + "../" * 40 + 'etc/passwd"',
    ],
    ids=["relative", "absolute", "symlink", "etc-passwd"],
)
def test_quoted_include_outside_the_tree_is_refused(
    line: str,
    escaping_tree: Callable[[str], Path],
    tmp_path: Path,
    capsys: pytest.CaptureFixture[str],
) -> None:
    tree = escaping_tree(line.format(tmp=tmp_path))
    out = tmp_path / "pre.cpp"
    args = ["embed", str(tree / "sub" / "k.h"), "-I", str(tree), "-o", str(out)]
    code, _, err = run_cli(args, capsys)
    assert code == 2 and not out.exists()
    assert len(err.strip().splitlines()) == 1
    outside = "/etc/passwd" if "passwd" in line else str((tmp_path / "secret.h").resolve())
    assert "k.h:2: quoted include" in err and f"resolves to {outside}, outside" in err
    assert "--allow-outside-includes" in err
    if "passwd" in line:
        return
    code, _, err = run_cli([*args, "--allow-outside-includes"], capsys)
    assert code == 0, err
    assert "int secret = 42;" in out.read_text(encoding="utf-8")


def test_includes_inside_the_folders_and_angle_includes_are_kept(
    escaping_tree: Callable[[str], Path], tmp_path: Path
) -> None:
    """Beside the header and through an -I folder is fine; an angle include is never inlined
    (the run-time compiler resolves it), whatever it names."""
    tree = escaping_tree('#include "../other.h"\n#include </etc/passwd>')
    (tree / "other.h").write_text("int other;\n", encoding="utf-8")
    text = inline_preamble([tree / "sub" / "k.h"], [tree]).text
    assert "int other;" in text and "#include </etc/passwd>\n" in text


def test_python_callers_choose_confinement(escaping_tree: Callable[[str], Path]) -> None:
    from builder.jit.preamble import quoted_includes

    tree = escaping_tree('#include "../../secret.h"')
    header = tree / "sub" / "k.h"
    with pytest.raises(OutsideError):
        inline_preamble([header], [tree])
    with pytest.raises(OutsideError):
        quoted_includes(header, [tree])
    assert "secret = 42" in inline_preamble([header], [tree], allow_outside_includes=True).text
    assert quoted_includes(header, [tree], allow_outside_includes=True)[0].name == "secret.h"


def test_confine(escaping_tree: Callable[[str], Path], tmp_path: Path) -> None:
    tree = escaping_tree("")
    assert confine(tree / "sub" / ".." / "sub" / "k.h", [tree]) == (tree / "sub/k.h").resolve()
    assert confine(tree, [tree]) == tree.resolve()
    for outside in (tree / "link.h", tree / ".." / "secret.h", Path("/etc/passwd")):
        with pytest.raises(OutsideError, match="resolves to .*, outside "):
            confine(outside, [tree, tree / "sub"])
    with pytest.raises(OutsideError):
        confine(tmp_path / "tree2" / "x.h", [tree])  # a sibling whose name starts alike


# --- outputs never replace inputs; line ends as written -------------------------------------


@pytest.mark.parametrize("target", ["-o header", "-o include", "--depfile header", "-o depfile"])
def test_embed_never_writes_over_an_input(
    target: str, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    header, include = tmp_path / "k.h", tmp_path / "common.h"
    header.write_text('#include "common.h"\nint k;\n', encoding="utf-8")
    include.write_text("int common;\n", encoding="utf-8")
    before = {p: p.read_bytes() for p in (header, include)}
    option, what = target.split()
    out, dep = tmp_path / "out.cpp", tmp_path / "out.d"
    chosen = {"header": header, "include": include, "depfile": dep}[what]
    if option == "-o":
        out = chosen
    else:
        dep = chosen
    code, _, err = run_cli(
        ["embed", str(header), "-I", str(tmp_path), "-o", str(out), "--depfile", str(dep)], capsys
    )
    assert code == 2 and len(err.strip().splitlines()) == 1, err
    assert "refusing to write over the input" in err or "name the same file" in err
    assert {p: p.read_bytes() for p in (header, include)} == before
    assert not (tmp_path / "out.cpp").exists()


def test_line_ends_are_kept_and_a_lone_carriage_return_is_refused(tmp_path: Path) -> None:
    crlf = tmp_path / "crlf.h"
    crlf.write_bytes(b"int a;\r\n#pragma once\r\nint b; // x\r\nint c;")
    assert inline_preamble([crlf], [tmp_path]).text == (
        '#line 1 "crlf.h"\nint a;\r\n\nint b; // x\r\nint c;\n'
    )
    lone = tmp_path / "mac.h"
    lone.write_bytes(b"int a;\nint b;\rint c;\n")
    with pytest.raises(IncludeError, match=r"mac.h:2: carriage return without a line feed"):
        inline_preamble([lone], [tmp_path])
