"""The strings a Mach-O binary's functions return, extracted with LLVM's own tools: the
independent side of the host-library tests (``builder.size.host_strings`` and what ``report``
makes of it).

``llvm-nm`` gives each function's address (or ``llvm-objdump --function-starts`` in a stripped
binary), ``llvm-objdump -d`` the ``adrp``/``add`` (or ``lea``) target, and the string is read
from the file at the offset ``llvm-objdump --section-headers`` gives for ``__cstring``.
"""

from __future__ import annotations

import hashlib
import json
import re
import subprocess
import zipfile
from collections.abc import Mapping
from pathlib import Path

import pytest
from binaries import cxx_dylib, nm_addresses, tool

from builder.inputs import wheel_cache, wheels
from support.shared import shared_folder

_METAL_WORDS = re.compile(
    r"<metal_[a-z_]+>|\bmetal::|namespace metal\b|\[\[ *(kernel|buffer|thread|host_name)"
    r"|\bkernel void\b|^// Auto generated source for |^#line 1 ",
    re.MULTILINE,
)


def is_metal_text(raw: bytes) -> bool:
    """The test's own reading of "a string is Metal source": text of several lines with a word
    only the Metal Shading Language writes (``<metal_stdlib>``, ``metal::``, ``[[kernel]]``,
    ``[[buffer(0)]]``, ``kernel void``) or a first line naming the header it was made from."""
    text = raw.decode("utf-8", "replace")
    return "\n" in text and _METAL_WORDS.search(text) is not None


__all__ = [
    "function_starts",
    "independent_sources",
    "is_metal_text",
    "mlx_style_host",
    "share_disassembly",
    "wheel_member",
]

_factory: list[pytest.TempPathFactory] = []
"""The run's temporary-path factory, once ``share_disassembly`` has been given it."""


def share_disassembly(factory: pytest.TempPathFactory) -> None:
    """Make each thin binary's disassembly once per test run, for every worker (``_returns``):
    libmlx.dylib (21 MB) takes 11 s of CPU to disassemble, and six tests read it."""
    _factory[:] = [factory]


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
    """``_returns`` of ``starts``. A function's first instructions do not depend on which
    others are asked for, so in a thin binary they are read once for every function it has
    (``LC_FUNCTION_STARTS`` and every symbol), shared by the whole run, and then looked up."""
    if arch is not None or not _factory:
        return _returns(path, starts, arch)
    digest = hashlib.sha256(path.read_bytes()).hexdigest()

    def make(folder: Path) -> None:
        every = dict.fromkeys([*function_starts(path), *nm_addresses(path).values()])
        found = _returns(path, every, None)
        doc = {"read": sorted(every), "returns": sorted(found.items())}
        (folder / "returns.json").write_text(json.dumps(doc))

    doc = json.loads(
        (shared_folder(_factory[0], f"llvm-{digest}", make) / "returns.json").read_text()
    )
    if not set(starts) <= set(doc["read"]):  # an address that is no function start nor symbol
        return _returns(path, starts, arch)
    every_return = dict(doc["returns"])
    return {a: every_return[a] for a in starts if a in every_return}


def _returns(path: Path, starts: Mapping[int, str | None], arch: str | None) -> dict[int, int]:
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


def independent_sources(
    path: Path, arch: str | None, names: Mapping[int, str | None]
) -> dict[int, tuple[str | None, int, bytes]]:
    """Function address -> (symbol, file offset, bytes incl. NUL) of the string each function of
    ``names`` (address -> symbol or None) returns, when its whole body returns one."""
    address, size, offset = _cstring(path, arch)
    data = path.read_bytes()
    out = {}
    for function, target in _targets(path, names, arch).items():
        if address <= target < address + size:
            where = offset + target - address
            out[function] = (names[function], where, data[where : data.index(b"\0", where) + 1])
    return out


def wheel_member(name: str, version: str, member: str, tmp: Path) -> Path:
    try:
        wheel = wheels.download_wheel(name, version, "macosx_14_0_arm64")
    except wheel_cache.DownloadError as exc:
        pytest.skip(f"PACKAGE INDEX UNREACHABLE, real-data test skipped: {exc}")
    with zipfile.ZipFile(wheel) as archive:
        inner = next(n for n in archive.namelist() if n.endswith("/" + member))
        out = tmp / member
        out.write_bytes(archive.read(inner))
    return out


def function_starts(path: Path) -> list[int]:
    """The addresses ``llvm-objdump --function-starts`` lists (a stripped binary's functions)."""
    text = _run([tool("llvm-objdump"), "--macho", "--function-starts", str(path)])
    return [int(a, 16) for a in re.findall(r"^([0-9a-f]{8,})", text, re.MULTILINE)]


def mlx_style_host(
    folder: Path, tree: Mapping[str, str], host: str
) -> tuple[Path, Path, dict[str, tuple[int, bytes]]]:
    """A kernel tree and a host dylib written as MLX's are: ``tree`` (path -> text) written under
    ``folder``, ``host`` (C++ functions in ``mlx::core::metal`` returning sources) compiled into
    ``libhost.dylib``; returns ``folder/kernels``, the dylib, and each function's string (by its
    plain name) as LLVM's tools find it: (file offset, bytes incl. NUL)."""
    for name, text in tree.items():
        (folder / name).parent.mkdir(parents=True, exist_ok=True)
        (folder / name).write_text(text)
    source = folder / "host.cpp"
    source.write_text(host)
    dylib = cxx_dylib(folder / "libhost.dylib", [source])
    names: dict[int, str | None] = {a: n for n, a in nm_addresses(dylib).items()}
    strings = {
        re.sub(r"^__ZN3mlx4core5metal\d+(\w+)Ev$", r"\1", n or ""): (offset, raw)
        for n, offset, raw in independent_sources(dylib, None, names).values()
    }
    return folder / "kernels", dylib, strings
