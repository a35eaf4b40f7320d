"""A catalog's host library sources without CMake (the one tree JIT path): kernel-table strings,
escapes, empty selections, the facts in embed.json, and the namespace rule."""

from __future__ import annotations

import re
import subprocess
from pathlib import Path
from typing import Any

import pytest

from builder.cmake_build.cmake import find_tool
from builder.cmake_build.plan import make_plan
from builder.cmake_build.plan_model import BuildRequest
from builder.cmake_build.tree_jit import generate
from builder.errors import UsageError
from builder.jit.generate import embed_headers, render_standalone
from builder.jit.literals import cxx_string
from builder.jit.preamble import Preamble
from builder.jit.writer import TableUnit, table_pieces
from builder.kernels.bounded_run import find_compiler
from builder.resources import cmake_dir, metal_src_dir
from builder.settings.text_rules import CXX_IDENTIFIER, CXX_KEYWORDS, CXX_NAMESPACE, valid_namespace

HOST_INCLUDE = metal_src_dir() / "host" / "include"


def _cxx() -> str:
    """The host compiler ``check`` would use (scripts/setup.sh installs g++): missing is a
    failure, not a skip."""
    return find_compiler().path


def test_table_pieces_cut_at_entries_under_the_limit() -> None:
    kernels = tuple((f"fam_v_op{i}_float32", f"fam_v, float, Op{i}") for i in range(300))
    unit = TableUnit("fam", "fam", Preamble((), ()), kernels)
    text = "".join(f"{name}\0{arguments}\0" for name, arguments in kernels)
    pieces = table_pieces(unit, compress=False, limit=1000)
    assert len(pieces) > 1
    assert "".join(p.text for p in pieces) == text
    assert all(p.raw_bytes <= 1000 and p.text.endswith("\0") for p in pieces)
    assert all(p.stored_bytes == p.raw_bytes + 1 for p in pieces)
    assert "\0fam_v_op7_float32\0fam_v, float, Op7\0" in text
    (packed,) = table_pieces(unit, compress=True)
    assert packed.compressed and packed.text == text and packed.stored_bytes < len(text) // 4


def _catalog_library(
    out: Path, families: tuple[str, ...], dtypes: tuple[str, ...] = (), compress: bool = False
) -> dict[str, Any]:
    """A catalog selection's host library sources, written by the one tree JIT path."""
    request = BuildRequest().replace(
        kernels=families, dtypes=dtypes, jit=("*",), compress=compress, build_dir=out / "build"
    )
    facts, _ = generate(make_plan(request), out)
    return facts


def test_string_escapes_survive_the_compiler(tmp_path: Path) -> None:
    tricky = 'a"b\\c?d??=e\té\x01' + "7"  # quotes, backslash, trigraph-like, non-ASCII, digit
    source = tmp_path / "s.cpp"
    source.write_text(
        "#include <cstdio>\n#include <cstring>\n"
        f"static const char s[] = {cxx_string(tricky)};\n"
        "int main() { std::fwrite(s, 1, sizeof(s) - 1, stdout); return 0; }\n",
        encoding="utf-8",
    )
    exe = tmp_path / "s"
    subprocess.run([_cxx(), "-std=c++17", str(source), "-o", str(exe)], check=True)
    assert subprocess.run([str(exe)], capture_output=True, check=True).stdout == tricky.encode()


@pytest.mark.parametrize("compress", [False, True])
def test_a_family_with_no_kernels_compiles(compress: bool, tmp_path: Path) -> None:
    facts = _catalog_library(tmp_path, ("arange",), ("bool",), compress)
    [unit] = facts["units"]
    assert unit["host_names"] == [] and unit["registry_bytes"] == 0
    for source in (tmp_path / "arange.cpp", tmp_path / "_shared_preambles.cpp"):
        subprocess.run(
            [
                _cxx(),
                "-std=c++17",
                "-Wall",
                "-Wextra",
                "-Werror",
                "-fsyntax-only",
                "-I",
                str(HOST_INCLUDE),
                str(source),
            ],
            check=True,
        )


def test_shared_pieces_are_counted_once(tmp_path: Path) -> None:
    facts = _catalog_library(tmp_path, ("unary", "arange", "softmax"))
    units = facts["units"]
    registry = sum(int(u["registry_bytes"]) for u in units)
    assert facts["registry_bytes"] == registry
    assert all(u["embedded_bytes"] == u["preamble_bytes"] + u["registry_bytes"] for u in units)
    shared_bytes = sum(int(s["bytes"]) for s in facts["shared"])
    assert facts["embedded_bytes"] == sum(int(u["embedded_bytes"]) for u in units) + shared_bytes
    shared = {s["name"] for s in facts["shared"]}
    source = (tmp_path / "_shared_preambles.cpp").read_text(encoding="utf-8")
    assert shared and all(f"char {name}[] = " in source for name in shared)
    for unit in units:  # a unit stores no shared piece itself
        own = (tmp_path / f"{unit['name']}.cpp").read_text(encoding="utf-8")
        assert not any(f" {name}[]" in own for name in shared)


NAMES = [
    "metal_jit",
    "a::b",
    "_x::y9::Z",
    "",
    "9a",
    "a::",
    "::a",
    "a:b",
    "a::::b",
    "a b",
    "a-b",
    "a::9",
    "metal_jit\n",
    "é",
    "int",
    "a::class",
    "xor_eq::b",
    "char8_t",
    "final",  # contextual: `namespace final {` compiles
    "module::import",
    "Int::inta",
]


@pytest.mark.parametrize("module_name", ["MetalJit.cmake", "MetallibEmbed.cmake"])
def test_namespace_rule_is_the_same_in_python_and_cmake(tmp_path: Path, module_name: str) -> None:
    """embed --namespace (Python), metallib_add_jit_library(NAMESPACE) / FAMILIES and
    metallib_embed_headers(NAMESPACE) (CMake) accept exactly the same names: both modules ask
    MetallibPython.cmake's _metallib_namespace_problem, whose pattern and keywords are Python's,
    and CMake, running that function, agrees with Python on names either side of the rule."""
    module = (cmake_dir() / module_name).read_text(encoding="utf-8")
    shared = (cmake_dir() / "MetallibPython.cmake").read_text(encoding="utf-8")
    stated = dict(re.findall(r'^\s*set\((cxx_identifier) "([^"]*)"\)$', module, re.MULTILINE))
    assert stated["cxx_identifier"] == CXX_IDENTIFIER
    assert '_metallib_namespace_problem(problem "${arg_NAMESPACE}")' in module
    if module_name == "MetalJit.cmake":
        assert 'family MATCHES "^${cxx_identifier}$"' in module
    patterns = dict(
        re.findall(r'^\s*set\((cxx_identifier|cxx_namespace) "([^"]*)"\)$', shared, re.MULTILINE)
    )
    assert patterns["cxx_namespace"].replace("${cxx_identifier}", CXX_IDENTIFIER) == CXX_NAMESPACE
    keywords = re.search(r"set\(cxx_keywords\s([^)]*)\)", shared)
    assert keywords is not None and set(keywords.group(1).split()) == CXX_KEYWORDS
    script = tmp_path / "names.cmake"
    lines = [f'include("{cmake_dir() / "MetallibPython.cmake"}")']
    lines += [f'set({k} "{v}")' for k, v in stated.items()]
    for i, name in enumerate(NAMES):
        lines.append(f"set(name{i} [==[{name}]==])")
        lines.append(f'_metallib_namespace_problem(problem "${{name{i}}}")')
        lines.append(f'if(NOT problem)\n  message("{i} ns")\nendif()')
        lines.append(f'if(name{i} MATCHES "^${{cxx_identifier}}$")\n  message("{i} id")\nendif()')
    script.write_text("\n".join(lines) + "\n", encoding="utf-8")
    run = subprocess.run(
        [find_tool("cmake"), "-P", str(script)], capture_output=True, text=True, check=True
    )
    by_cmake = set(run.stderr.split("\n"))
    for i, name in enumerate(NAMES):
        assert (f"{i} ns" in by_cmake) == valid_namespace(name), name
        assert (f"{i} id" in by_cmake) == (re.fullmatch(CXX_IDENTIFIER, name) is not None), name
    assert {valid_namespace(n) for n in NAMES} == {True, False}


def test_a_namespace_is_refused_exactly_when_the_compiler_refuses_it(tmp_path: Path) -> None:
    """The reference is g++ itself: ``namespace NAME {}`` (nested names as written) compiles
    for every name the rule accepts and fails for every C++20 keyword it refuses (one file per
    keyword, one g++ run: each file must have its own error)."""
    accepted = [n for n in NAMES if valid_namespace(n)] + ["override", "import", "std_"]
    ok = tmp_path / "ok.cpp"
    ok.write_text("".join(f"namespace {n} {{ int x{i}; }}\n" for i, n in enumerate(accepted)))
    files = {}
    for keyword in sorted(CXX_KEYWORDS):
        assert not valid_namespace(keyword) and not valid_namespace(f"app::{keyword}"), keyword
        files[keyword] = tmp_path / f"kw_{keyword}.cpp"
        files[keyword].write_text(f"namespace app::{keyword} {{ int x; }}\n")
    run = [_cxx(), "-std=c++20", "-fsyntax-only"]
    done = subprocess.run([*run, str(ok)], capture_output=True, text=True, check=False)
    assert done.returncode == 0, done.stderr
    done = subprocess.run(
        [*run, *map(str, files.values())], capture_output=True, text=True, check=False
    )
    refused = set(re.findall(r"kw_(\w+)\.cpp:\d+:\d+: error:", done.stderr))
    assert refused == CXX_KEYWORDS, sorted(CXX_KEYWORDS - refused)


def test_embed_refuses_a_namespace_outside_the_rule(tmp_path: Path) -> None:
    header = tmp_path / "k.h"
    header.write_text("int k;\n")
    for name in ("a::", "a b", "metal_jit\n"):
        with pytest.raises(ValueError, match="namespace must be a C\\+\\+ namespace such as"):
            render_standalone([], name, "k.h")
        with pytest.raises(UsageError, match="namespace must be a C\\+\\+ namespace such as"):
            embed_headers([header], [tmp_path], namespace=name)
    assert "namespace a::b {" in embed_headers([header], [tmp_path], namespace="a::b")[0]
