"""Generated family sources without CMake: registry-string pools, escapes, empty selections, and
the facts merged into embed.json."""

from __future__ import annotations

import shutil
import subprocess
from pathlib import Path

import pytest

from builder.jit.codegen import Kernel, _cxx_string, pool_pieces, pool_text
from builder.jit.generate import family_source, merge_facts
from builder.resources import metal_src_dir

HOST_INCLUDE = metal_src_dir() / "host" / "include"


def _cxx() -> str:
    found = shutil.which("g++") or shutil.which("clang++")
    if found is None:
        pytest.skip("no host C++ compiler")
    return found


def test_pool_pieces_cut_at_entries_under_the_limit() -> None:
    kernels = [Kernel(f"fam_v_op{i}_float32", f"fam_v, float, Op{i}") for i in range(300)]
    text, offsets = pool_text(kernels)
    pieces = pool_pieces(kernels, compress=False, limit=1000)
    assert len(pieces) > 1
    assert "".join(p.text for p in pieces) == text
    assert all(p.raw_bytes <= 1000 and p.text.endswith("\0") for p in pieces)
    assert all(p.stored_bytes == p.raw_bytes + 1 for p in pieces)
    assert text[offsets[7] :].startswith("fam_v_op7_float32\0fam_v, float, Op7\0")
    (packed,) = pool_pieces(kernels, compress=True)
    assert packed.compressed and packed.text == text and packed.stored_bytes < len(text) // 4


def test_string_escapes_survive_the_compiler(tmp_path: Path) -> None:
    tricky = 'a"b\\c?d??=e\té\x01' + "7"  # quotes, backslash, trigraph-like, non-ASCII, digit
    source = tmp_path / "s.cpp"
    source.write_text(
        "#include <cstdio>\n#include <cstring>\n"
        f"static const char s[] = {_cxx_string(tricky)};\n"
        "int main() { std::fwrite(s, 1, sizeof(s) - 1, stdout); return 0; }\n",
        encoding="utf-8",
    )
    exe = tmp_path / "s"
    subprocess.run([_cxx(), "-std=c++17", str(source), "-o", str(exe)], check=True)
    assert subprocess.run([str(exe)], capture_output=True, check=True).stdout == tricky.encode()


@pytest.mark.parametrize("compress", [False, True])
def test_family_source_with_no_kernels_compiles(compress: bool, tmp_path: Path) -> None:
    generated = family_source(metal_src_dir(), "arange", ["bool"], compress=compress)
    assert generated.kernels == () and generated.pool == ()
    path = tmp_path / "arange.cpp"
    path.write_text(generated.cpp, encoding="utf-8")
    subprocess.run(
        [_cxx(), "-std=c++17", "-Wall", "-Wextra", "-Werror", "-fsyntax-only",
         "-I", str(HOST_INCLUDE), str(path)],
        check=True,
    )  # fmt: skip


def test_merge_counts_shared_pieces_once() -> None:
    root = metal_src_dir()
    facts = [family_source(root, f).facts() for f in ("unary", "arange", "softmax")]
    merged = merge_facts("t", False, True, facts)
    stored: dict[str, int] = {}
    for family in facts:
        for piece in family["pieces"]:  # type: ignore[attr-defined]
            stored[piece["name"]] = piece["bytes"]
    registry = sum(int(f["registry_bytes"]) for f in facts)  # type: ignore[call-overload]
    assert merged["embedded_bytes"] == sum(stored.values()) + registry
    assert merged["registry_bytes"] == registry
    shared = {s["piece"] for s in merged["shared"]}
    assert shared and all(name in stored for name in shared)
