"""The run-time sources a Mach-O host library returns from ``const char* name()`` functions.

Every check compares ``host_strings`` with an extraction written here from LLVM's own tools:
``llvm-nm`` for each function's address (or ``llvm-objdump --function-starts`` in a stripped
binary), ``llvm-objdump -d`` text for the ``adrp``/``add`` (or ``lea``) target, and the string
read from the file at the offset ``llvm-objdump --section-headers`` gives for ``__cstring``.
"""

from __future__ import annotations

import json
import re
from pathlib import Path

import pytest
from binaries import cxx_dylib, lipo, nm_addresses
from clirun import run_cli
from support.llvm_strings import function_starts, independent_sources, is_metal_text, wheel_member

from builder.errors import BinaryFormatError
from builder.size.host_strings import demangle_plain, host_strings


@pytest.mark.realdata
def test_mlx_metal_preambles_match_llvm(tmp_path: Path) -> None:
    """libmlx.dylib of mlx-metal 0.32.1: the 12 preambles of ``mlx::core::metal``."""
    dylib = wheel_member("mlx-metal", "0.32.1", "libmlx.dylib", tmp_path)
    symbols = {a: n for n, a in nm_addresses(dylib).items()}
    ours = host_strings(dylib, "mlx::core::metal")
    assert ours is not None
    wanted = {
        a: v
        for a, v in independent_sources(
            dylib, None, {a: n for a, n in symbols.items() if n.startswith("__ZN3mlx4core5metal")}
        ).items()
        if re.fullmatch(r"__ZN3mlx4core5metal\d+\w+Ev", v[0] or "")
    }
    assert {s.address: (s.offset, s.size) for s in ours} == {
        a: (where, len(raw)) for a, (_, where, raw) in wanted.items()
    }
    assert {s.function for s in ours} == {
        "mlx::core::metal::" + re.sub(r"^\d+", "", (n or "")[19:-2]) for n, _, _ in wanted.values()
    }
    # The figures (12 preambles, 123,132 B) count the text without its NUL.
    assert (len(ours), sum(s.size - 1 for s in ours)) == (12, 123_132)


@pytest.mark.realdata
def test_executorch_stripped_delegate_matches_llvm(tmp_path: Path) -> None:
    """executorch 1.5.1's MLX delegate keeps no local symbols: its functions are found by
    ``LC_FUNCTION_STARTS``, unnamed, and a source is a string of Metal source."""
    dylib = wheel_member("executorch", "1.5.1", "libexecutorch_backend_mlx.dylib", tmp_path)
    starts = dict.fromkeys(function_starts(dylib))
    named = {a: n for n, a in nm_addresses(dylib).items()}
    found = independent_sources(dylib, None, {a: named.get(a) for a in starts})
    wanted = {a: v for a, v in found.items() if v[0] is None and is_metal_text(v[2])}
    ours = host_strings(dylib)
    assert ours is not None and all(s.function is None for s in ours)
    assert {s.address: (s.offset, s.size) for s in ours} == {
        a: (where, len(raw)) for a, (_, where, raw) in wanted.items()
    }
    assert (len(ours), sum(s.size - 1 for s in ours)) == (41, 882_123)


SOURCE = """
namespace demo { namespace jit {
const char* alpha() { return "kernel void alpha() {}\\n// alpha"; }
const char* beta() { return "#include <metal_stdlib>\\nusing namespace metal;\\n"; }
const char* gamma_one_line() { return "no line break here"; }
}
const char* outside() { return "outside\\nthe namespace"; }
int answer(int x) { return x + 1; }
}
const char* global_source() { return "global\\nsource"; }
"""


def _dylib(tmp: Path, arch: str) -> Path:
    source = tmp / "host.cpp"
    source.write_text(SOURCE)
    return cxx_dylib(tmp / f"libhost.{arch}.dylib", [source], arch=arch)


@pytest.mark.parametrize("arch", ["arm64", "x86_64"])
def test_synthetic_dylib_namespace_and_sources(tmp_path: Path, arch: str) -> None:
    dylib = _dylib(tmp_path, arch)
    symbols = {a: n for n, a in nm_addresses(dylib).items()}
    found = independent_sources(dylib, None, symbols)
    by_name = {n: (where, raw) for _, (n, where, raw) in found.items()}
    ours = host_strings(dylib, "demo::jit")
    assert ours is not None
    assert {s.function: (s.offset, s.size) for s in ours} == {
        "demo::jit::" + n: (by_name[f"__ZN4demo3jit{len(n)}{n}Ev"][0], len(raw))
        for n, raw in [
            ("alpha", b"kernel void alpha() {}\n// alpha\0"),
            ("beta", b"#include <metal_stdlib>\nusing namespace metal;\n\0"),
            ("gamma_one_line", b"no line break here\0"),
        ]
    }
    data = dylib.read_bytes()
    assert all(
        data[s.offset : s.offset + s.size]
        == by_name[f"__ZN4demo3jit{len(s.function or '') - 11}{(s.function or '')[11:]}Ev"][1]
        for s in ours
    )
    # Without a namespace: every plain function whose string is Metal source; text of several
    # lines that is not (outside, global_source) is left out.
    assert {s.function for s in host_strings(dylib) or []} == {
        "demo::jit::alpha",
        "demo::jit::beta",
    }
    assert host_strings(dylib, "other") == []


def test_fat_binary_lists_each_architecture(tmp_path: Path) -> None:
    thin = [_dylib(tmp_path, arch) for arch in ("x86_64", "arm64")]
    fat = lipo(tmp_path / "libhost.dylib", thin)
    ours = host_strings(fat, "demo::jit") or []
    assert sorted({s.arch for s in ours}) == ["arm64", "x86_64"]
    for arch in ("arm64", "x86_64"):
        symbols = {a: n for n, a in nm_addresses(fat, arch).items()}
        found = independent_sources(fat, arch, symbols)
        wanted = {(where, len(raw)) for n, where, raw in found.values() if "4demo3jit" in (n or "")}
        assert {(s.offset, s.size) for s in ours if s.arch == arch} == wanted


def test_neither_macho_nor_elf_gives_none(tmp_path: Path) -> None:
    path = tmp_path / "x.bin"
    path.write_bytes(b"not a binary" + bytes(60))
    assert host_strings(path) is None
    # An ELF file is read now (tests/size/test_host_elf.py): a malformed one names its byte.
    path.write_bytes(b"\x7fELF" + bytes(60))
    with pytest.raises(BinaryFormatError, match="byte offset 4 .* malformed: ELF class 0"):
        host_strings(path)


@pytest.mark.parametrize(
    ("symbol", "parts"),
    [
        ("__ZN3mlx4core5metal5utilsEv", ["mlx", "core", "metal", "utils"]),
        ("__Z21get_prebuilt_preamblev", ["get_prebuilt_preamble"]),
        ("__ZL4selfv", ["self"]),
        ("__ZNK3mlx4core4Cosh4nameEv", None),  # a const member function takes ``this``
        ("__ZN3mlx4core5metal5utilsEi", None),  # takes an int
        ("__ZN3mlx4core5metal99shortEv", None),  # length past the end
        ("_main", None),
    ],
)
def test_demangle_plain(symbol: str, parts: list[str] | None) -> None:
    assert demangle_plain(symbol) == parts


def test_arm64_page_below_the_function() -> None:
    """ADRP's immhi:immlo is signed: a literal pages below the code is reached too."""
    from builder.size.host_strings import _arm64_target

    adrp = 0x90000000 | 3 << 29 | 0x7FFFF << 5  # adrp x0, #-1 page
    add = 0x91000000 | 0x10 << 10  # add x0, x0, #16
    body = b"".join(w.to_bytes(4, "little") for w in (adrp, add, 0xD65F03C0))
    assert _arm64_target(body, 0x5004) == 0x4010
    assert _arm64_target(body[:8] + b"\0\0\0\0", 0x5004) is None  # not ret


def test_sources_command_json_and_table(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    """``sources`` writes what ``host_strings`` finds, as JSON (-o) and a table."""
    dylib = _dylib(tmp_path, "arm64")
    symbols = {a: n for n, a in nm_addresses(dylib).items()}
    found = independent_sources(dylib, None, symbols)
    out = tmp_path / "sources.json"
    code, _, err = run_cli(
        ["sources", str(dylib), "--jit-namespace", "demo::jit", "-o", str(out)], capsys
    )
    assert code == 0, err
    doc = json.loads(out.read_text())
    assert doc["kind"] == "sources" and doc["namespace"] == "demo::jit"
    rows = {r["function"]: (r["offset"], r["bytes"]) for r in doc["host_sources"]}
    assert rows == {
        "demo::jit::" + n[13:-2].lstrip("0123456789"): (where, len(raw))
        for n, where, raw in found.values()
        if n and n.startswith("__ZN4demo3jit")
    }
    assert doc["bytes"] == sum(b for _, b in rows.values())
    code, table, _ = run_cli(["sources", str(dylib), "--format", "table"], capsys)
    assert code == 0 and "demo::jit::alpha" in table and "demo::jit::gamma_one_line" not in table
    assert "demo::outside" not in table  # text of two lines, but no Metal


@pytest.mark.parametrize(
    ("content", "args", "message"),
    [
        (b"not a binary at all", [], "not a Mach-O or ELF binary"),
        (b"MTLB" + bytes(60), [], "(a metallib: 'report' measures it)"),
        (b"\xcf\xfa\xed\xfe" + bytes(12), [], "truncated: the Mach-O header, from byte 0"),
        (b"\x7fELF" + bytes(60), [], "ELF"),
        (None, ["--jit-namespace", "a b"], "--jit-namespace must be a C++ namespace"),
    ],
)
def test_sources_bad_input_exits_2(
    tmp_path: Path,
    capsys: pytest.CaptureFixture[str],
    content: bytes | None,
    args: list[str],
    message: str,
) -> None:
    path = tmp_path / "lib.dylib"
    path.write_bytes(content if content is not None else b"\xcf\xfa\xed\xfe")
    code, out, err = run_cli(["sources", str(path), *args], capsys)
    assert code == 2 and out == "" and message in err
