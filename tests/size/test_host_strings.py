"""The run-time sources a Mach-O host library returns from ``const char* name()`` functions.

Every check compares ``host_strings`` with an extraction written here from LLVM's own tools:
``llvm-nm`` for each function's address (or ``llvm-objdump --function-starts`` in a stripped
binary), ``llvm-objdump -d`` text for the ``adrp``/``add`` (or ``lea``) target, and the string
read from the file at the offset ``llvm-objdump --section-headers`` gives for ``__cstring``.
"""

from __future__ import annotations

import json
import re
import subprocess
import zipfile
from collections.abc import Mapping
from pathlib import Path

import pytest
from binaries import lipo, nm_addresses, tool
from clirun import run_cli

from builder.inputs import wheel_cache, wheels
from builder.size.host_strings import demangle_plain, host_strings


def _run(args: list[str]) -> str:
    done = subprocess.run(args, capture_output=True, text=True, check=False)
    assert done.returncode == 0, done.stderr
    return done.stdout


def _slice_offset(path: Path, arch: str | None) -> int:
    if arch is None:
        return 0
    text = _run([tool("llvm-objdump"), "--macho", "--universal-headers", str(path)])
    slices = dict(re.findall(r"architecture (\S+)\n(?:.*\n)*?\s+offset (\d+)", text))
    return int(slices[arch])


def _cstring(path: Path, arch: str | None) -> tuple[int, int, int]:
    """(address, size, file offset) of ``__TEXT,__cstring`` by ``llvm-objdump``."""
    args = [tool("llvm-objdump"), "--macho", "--section-headers"]
    args += [f"--arch={arch}"] if arch else []
    text = _run([*args, str(path)])
    found = re.search(r"\d+\s+__cstring\s+([0-9a-f]+)\s+([0-9a-f]+)", text)
    assert found is not None, text
    size, address = found.groups()
    headers = _run([tool("llvm-objdump"), "--macho", "--private-headers", *args[3:], str(path)])
    block = re.search(r"sectname __cstring\n\s+segname __TEXT\n(?:.*\n)*?\s+offset (\d+)", headers)
    assert block is not None, headers
    return int(address, 16), int(size, 16), _slice_offset(path, arch) + int(block.group(1))


def _disassembly(path: Path, arch: str | None, wanted: set[int]) -> dict[int, str]:
    """Address -> instruction text (operands as ``llvm-objdump -d`` prints them) at each of
    ``wanted``, from one disassembly of the whole file, read as it streams."""
    if arch:  # one slice of a fat file, cut out by llvm-lipo (addresses are the slice's)
        thin = path.with_name(f"{path.name}.{arch}")
        _run([tool("llvm-lipo"), "-thin", arch, str(path), "-output", str(thin)])
        path = thin
    args = [tool("llvm-objdump"), "-d", "--no-show-raw-insn", "--print-imm-hex"]
    line_rx = re.compile(r"^\s*([0-9a-f]+):\s+(.*)$")
    found = {}
    with subprocess.Popen([*args, str(path)], stdout=subprocess.PIPE, text=True) as proc:
        assert proc.stdout is not None
        for line in proc.stdout:
            match = line_rx.match(line)
            if match and int(match.group(1), 16) in wanted:
                text = match.group(2).split("<")[0].split("//")[0].split("#", 1)
                op = text[0] if not text[0].rstrip().endswith(",") else "#".join(text)
                found[int(match.group(1), 16)] = re.sub(r"\s+", " ", op).strip()
    assert proc.returncode == 0
    return found


def _targets(path: Path, starts: Mapping[int, str | None], arch: str | None) -> dict[int, int]:
    """Function address -> the address its first instructions return, from the disassembly:
    ``adrp x0, P`` + ``add x0, x0, #I`` + ``ret``, or ``leaq D(%rip), %rax`` + ``retq``, also
    inside ``pushq %rbp; movq %rsp, %rbp`` ... ``popq %rbp``; only functions whose whole body
    is that."""
    steps = (0, 1, 4, 8, 11, 12)  # arm64: 0/4/8; x86-64: lea 0 (7 B), ret 7; framed 1, 4, 11, 12
    code = _disassembly(path, arch, {a + d for a in starts for d in (*steps, 7)})
    found = {}
    for address in starts:
        op = [code.get(address + d, "") for d in (0, 4, 8)]
        add = re.fullmatch(r"add x0, x0, #(0x[0-9a-f]+|\d+)", op[1])
        if op[0].startswith("adrp x0, ") and add and op[2] == "ret":
            found[address] = int(op[0].split(", ")[1], 16) + int(add.group(1), 0)
            continue
        framed = code.get(address) == "pushq %rbp" and code.get(address + 1) == "movq %rsp, %rbp"
        at = 4 if framed else 0
        lea = re.fullmatch(r"leaq (-?0x[0-9a-f]+)\(%rip\), %rax", code.get(address + at, ""))
        tail = [code.get(address + at + 7), code.get(address + at + 8)] if framed else []
        ends = tail == ["popq %rbp", "retq"] if framed else code.get(address + 7) == "retq"
        if lea and ends:
            found[address] = address + at + 7 + int(lea.group(1), 16)  # RIP: the next one
    return found


def _independent(
    path: Path, arch: str | None, names: Mapping[int, str | None]
) -> dict[int, tuple[str | None, int, bytes]]:
    """Function address -> (symbol, file offset, bytes incl. NUL) of each string it returns."""
    address, size, offset = _cstring(path, arch)
    data = path.read_bytes()
    out = {}
    for function, target in _targets(path, names, arch).items():
        if address <= target < address + size:
            where = offset + target - address
            out[function] = (names[function], where, data[where : data.index(b"\0", where) + 1])
    return out


def _wheel_member(name: str, version: str, member: str, tmp: Path) -> Path:
    try:
        wheel = wheels.download_wheel(name, version, "macosx_14_0_arm64")
    except wheel_cache.DownloadError as exc:
        pytest.skip(f"PACKAGE INDEX UNREACHABLE, real-data test skipped: {exc}")
    with zipfile.ZipFile(wheel) as archive:
        inner = next(n for n in archive.namelist() if n.endswith("/" + member))
        out = tmp / member
        out.write_bytes(archive.read(inner))
    return out


@pytest.mark.realdata
def test_mlx_metal_preambles_match_llvm(tmp_path: Path) -> None:
    """libmlx.dylib of mlx-metal 0.32.1: the 12 preambles of ``mlx::core::metal``."""
    dylib = _wheel_member("mlx-metal", "0.32.1", "libmlx.dylib", tmp_path)
    symbols = {a: n for n, a in nm_addresses(dylib).items()}
    ours = host_strings(dylib, "mlx::core::metal")
    assert ours is not None
    wanted = {
        a: v
        for a, v in _independent(
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
    ``LC_FUNCTION_STARTS``, unnamed, and a source is a string holding a line break."""
    dylib = _wheel_member("executorch", "1.5.1", "libexecutorch_backend_mlx.dylib", tmp_path)
    text = _run([tool("llvm-objdump"), "--macho", "--function-starts", str(dylib)])
    starts = {int(a, 16): None for a in re.findall(r"^([0-9a-f]{8,})", text, re.MULTILINE)}
    named = {a: n for n, a in nm_addresses(dylib).items()}
    found = _independent(dylib, None, {a: named.get(a) for a in starts})
    wanted = {a: v for a, v in found.items() if v[0] is None and b"\n" in v[2]}
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
    obj, out = tmp / f"host.{arch}.o", tmp / f"libhost.{arch}.dylib"
    target = f"{arch}-apple-macos14"
    _run([tool("clang"), "-target", target, "-O2", "-c", "-x", "c++", str(source), "-o", str(obj)])
    _run(
        [tool("ld64.lld"), "-dylib", "-arch", arch, "-platform_version", "macos", "14.0", "14.0"]
        + [str(obj), "-o", str(out)]
    )
    return out


@pytest.mark.parametrize("arch", ["arm64", "x86_64"])
def test_synthetic_dylib_namespace_and_sources(tmp_path: Path, arch: str) -> None:
    dylib = _dylib(tmp_path, arch)
    symbols = {a: n for n, a in nm_addresses(dylib).items()}
    found = _independent(dylib, None, symbols)
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
    # Without a namespace: every plain function whose string is source text (a line break).
    assert {s.function for s in host_strings(dylib) or []} == {
        "demo::jit::alpha",
        "demo::jit::beta",
        "demo::outside",
        "global_source",
    }
    assert host_strings(dylib, "other") == []


def test_fat_binary_lists_each_architecture(tmp_path: Path) -> None:
    thin = [_dylib(tmp_path, arch) for arch in ("x86_64", "arm64")]
    fat = lipo(tmp_path / "libhost.dylib", thin)
    ours = host_strings(fat, "demo::jit") or []
    assert sorted({s.arch for s in ours}) == ["arm64", "x86_64"]
    for arch in ("arm64", "x86_64"):
        symbols = {a: n for n, a in nm_addresses(fat, arch).items()}
        found = _independent(fat, arch, symbols)
        wanted = {(where, len(raw)) for n, where, raw in found.values() if "4demo3jit" in (n or "")}
        assert {(s.offset, s.size) for s in ours if s.arch == arch} == wanted


def test_not_macho_gives_none(tmp_path: Path) -> None:
    path = tmp_path / "x.bin"
    path.write_bytes(b"\x7fELF" + bytes(60))
    assert host_strings(path) is None


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
    found = _independent(dylib, None, symbols)
    out = tmp_path / "sources.json"
    code, _, err = run_cli(
        ["sources", str(dylib), "--namespace", "demo::jit", "-o", str(out)], capsys
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
    assert code == 0 and "demo::outside" in table and "demo::jit::gamma_one_line" not in table


@pytest.mark.parametrize(
    ("content", "args", "message"),
    [
        (b"not a binary at all", [], "not a Mach-O binary"),
        (b"\xcf\xfa\xed\xfe" + bytes(12), [], "cannot be read"),
        (b"\x7fELF" + bytes(60), [], "ELF"),
        (None, ["--namespace", "a b"], "not a C++ namespace"),
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
