"""Real Mach-O and ELF binaries holding metallibs, made on Linux with Debian's clang and lld
(``.incbin`` in an assembly source, no SDK), and LLVM's own readers as the independent check of
where their sections and symbols are (``llvm-objdump``, ``llvm-readelf``, ``llvm-nm``)."""

from __future__ import annotations

import glob
import re
import shutil
import struct
import subprocess
from pathlib import Path
from typing import NamedTuple

import pytest

__all__ = [
    "LoadCommand",
    "MachOSymbol",
    "cxx_dylib",
    "cxx_elf",
    "elf_header",
    "elf_section_numbers",
    "elf_sections",
    "elf_string_returns",
    "fat_slices",
    "link_dylib",
    "link_elf",
    "lipo",
    "llvm_refusal",
    "load_commands",
    "macho_sections",
    "macho_symbols",
    "nm_addresses",
    "own_header",
    "tool",
]


def tool(name: str) -> str:
    """``name`` on PATH, or Debian's versioned spelling (``ld64.lld-14``, ``/usr/lib/llvm-14/
    bin/llvm-lipo``); skips the test loudly when the package is missing."""
    found = shutil.which(name) or next(
        iter(
            sorted(glob.glob(f"/usr/bin/{name}-[0-9]*"))
            + sorted(glob.glob(f"/usr/lib/llvm-*/bin/{name}"))
        ),
        None,
    )
    if found is None:
        pytest.skip(
            f"{name} not installed (Debian packages clang, lld, llvm: scripts/setup.sh --test)"
        )
    return found


def _run(args: list[str], cwd: Path) -> str:
    done = subprocess.run(args, cwd=cwd, capture_output=True, text=True, check=False)
    assert done.returncode == 0, f"{args[0]}: {done.stderr}"
    return done.stdout


def _incbin(blobs: list[tuple[str, str | None, Path]], folder: Path, pad: int) -> str:
    """Assembly putting each (section, symbol, file) into its section: a named one after
    ``pad`` bytes, an unnamed one as the whole section (as torch keeps its two)."""
    lines = []
    for section, symbol, path in blobs:
        lines.append(f".section {section}")
        if symbol:
            lines.append(".byte " + ", ".join(["7"] * pad))
            lines += [f".globl {symbol}", f"{symbol}:"]
        lines.append(f'.incbin "{path.resolve()}"')
    return "\n".join(lines) + "\n"


def link_dylib(
    out: Path, blobs: list[tuple[str, str | None, Path]], *, arch: str = "arm64", pad: int = 3
) -> Path:
    """A Mach-O dylib for macOS 14 with each metallib of ``blobs`` (section like
    ``__TEXT,metal_basic``, symbol or None, file) and a function, ``_answer``."""
    body = "  mov w0, #42\n  ret\n" if arch == "arm64" else "  movl $42, %eax\n  ret\n"
    source = out.with_suffix(f".{arch}.s")
    text = '.section __TEXT,__cstring\n_decoy: .asciz "MTLBinaryArchive MTLB"\n'
    source.write_text(
        text + _incbin(blobs, out.parent, pad) + f".text\n.globl _answer\n_answer:\n{body}"
    )
    obj = source.with_suffix(".o")
    _run(
        [tool("clang"), "-target", f"{arch}-apple-macos14", "-c", str(source), "-o", str(obj)],
        out.parent,
    )
    _run(
        [tool("ld64.lld"), "-dylib", "-arch", arch, "-platform_version", "macos", "14.0", "14.0"]
        + [str(obj), "-o", str(out)],
        out.parent,
    )
    return out


def lipo(out: Path, thin: list[Path]) -> Path:
    """A fat (universal) binary of the ``thin`` ones, in that order."""
    _run([tool("llvm-lipo"), "-create", *map(str, thin), "-output", str(out)], out.parent)
    return out


def link_elf(out: Path, blobs: list[tuple[str, str | None, Path]], *, pad: int = 1) -> Path:
    """An x86-64 ELF shared object with each metallib of ``blobs`` (section like ``.rodata``)."""
    source = out.with_suffix(".s")
    lines = []
    for section, symbol, path in blobs:
        lines.append(f".section {section}")
        lines.append(".byte " + ", ".join(["7"] * pad))
        if symbol:
            size = path.stat().st_size
            lines += [f".globl {symbol}", f".type {symbol}, @object", f".size {symbol}, {size}"]
            lines.append(f"{symbol}:")
        lines.append(f'.incbin "{path.resolve()}"')
    source.write_text(
        "\n".join(lines) + "\n.text\n.globl answer\nanswer:\n  movl $42, %eax\n  ret\n"
    )
    obj = source.with_suffix(".o")
    _run(
        [tool("clang"), "-target", "x86_64-linux-gnu", "-c", str(source), "-o", str(obj)],
        out.parent,
    )
    _run([tool("ld.lld"), "-shared", str(obj), "-o", str(out)], out.parent)
    return out


def macho_sections(path: Path) -> dict[tuple[str, str, str], tuple[int, int]]:
    """(arch, segment, section) -> (file offset, size), as ``llvm-objdump`` reads them: slice
    offsets from the fat header (``--universal-headers``) plus each section's offset."""
    objdump = tool("llvm-objdump")
    slices = {arch: offset for arch, (offset, _) in fat_slices(path).items()}
    text = _run([objdump, "--macho", "--private-headers", "--arch=all", str(path)], path.parent)
    found: dict[tuple[str, str, str], tuple[int, int]] = {}
    current: dict[str, str] = {}
    arch = next(iter(slices), "")
    for line in text.splitlines():
        head = re.match(r".*\(architecture (\S+)\):$", line)
        if head:
            arch = head.group(1)
        fields = re.findall(r"^\s+(sectname|segname|size|offset) (\S+)$", line)
        for key, value in fields:
            if key == "sectname":
                current = {"sectname": value}
            elif "sectname" in current and key not in current:
                current[key] = value
                if key == "offset":
                    base = int(slices.get(arch, 0))
                    where = (arch or "", current["segname"], current["sectname"])
                    found[where] = (base + int(value), int(current["size"], 16))
                    current = {}
    return found


def fat_slices(path: Path) -> dict[str, tuple[int, int]]:
    """Architecture -> (offset, size) of each slice of a fat file, as ``llvm-objdump --macho
    --universal-headers`` reads the fat header (empty for a thin file)."""
    args = [tool("llvm-objdump"), "--macho", "--universal-headers", str(path)]
    text = _run(args, path.parent)
    found = re.findall(r"architecture (\S+)\n(?:.*\n)*?\s+offset (\d+)\n\s+size (\d+)", text)
    return {arch: (int(offset), int(size)) for arch, offset, size in found}


def elf_sections(path: Path) -> dict[str, tuple[int, int, int]]:
    """Section name -> (file offset, size, address), as ``llvm-readelf -S`` reads them."""
    text = _run([tool("llvm-readelf"), "-S", "-W", str(path)], path.parent)
    found = {}
    for match in re.finditer(
        r"\]\s+(\S+)\s+\S+\s+([0-9a-f]{8,})\s+([0-9a-f]+)\s+([0-9a-f]+)", text
    ):
        name, address, offset, size = match.groups()
        found[name] = (int(offset, 16), int(size, 16), int(address, 16))
    return found


def nm_addresses(path: Path, arch: str | None = None) -> dict[str, int]:
    """Defined symbol -> address, as ``llvm-nm`` reads them (one architecture of a fat file)."""
    args = [tool("llvm-nm"), "--defined-only"] + ([f"--arch={arch}"] if arch else []) + [str(path)]
    found = {}
    for line in _run(args, path.parent).splitlines():
        parts = line.split()
        if len(parts) == 3:
            found[parts[2]] = int(parts[0], 16)
    return found


def cxx_dylib(
    out: Path,
    sources: list[Path],
    *,
    arch: str = "arm64",
    include_dirs: tuple[Path, ...] = (),
    flags: tuple[str, ...] = (),
) -> Path:
    """A Mach-O dylib for macOS 14 of the C++17 ``sources``, compiled by Debian's clang for
    ``arch``-apple-macos14 (and ``flags``, such as ``-g``) and linked by ``ld64.lld``. No Apple
    SDK exists here, so a source that includes a standard header does not compile: the sources
    must need none."""
    objects = []
    for number, source in enumerate(sources):
        obj = out.parent / f"{out.name}.{number}.{arch}.o"
        options = ["-std=c++17", "-O2", "-fPIC", *flags, *(f"-I{d}" for d in include_dirs)]
        target = ["-target", f"{arch}-apple-macos14"]
        _run(
            [tool("clang"), *target, *options, "-c", "-x", "c++", str(source), "-o", str(obj)],
            out.parent,
        )
        objects.append(str(obj))
    _run(
        [tool("ld64.lld"), "-dylib", "-arch", arch, "-platform_version", "macos", "14.0", "14.0"]
        + [*objects, "-o", str(out)],
        out.parent,
    )
    return out


class MachOSymbol(NamedTuple):
    """A defined symbol of a Mach-O image with file bytes, demangled by ``llvm-cxxfilt``, and
    the bytes up to the next symbol of its section (or the section's end)."""

    name: str
    section: str
    address: int
    size: int


def macho_symbols(path: Path, arch: str | None = None) -> list[MachOSymbol]:
    """Every defined symbol of ``path`` (one architecture of a fat file) in a section that holds
    file bytes, sized as Mach-O implies (an nlist entry has no size): the sections' addresses
    and sizes from ``llvm-objdump --macho --private-headers``, the symbols' addresses and
    sections from ``llvm-objdump -t``; of several symbols at one address the first has the
    bytes."""
    picked = [f"--arch={arch}"] if arch else []
    headers = _run(
        [tool("llvm-objdump"), "--macho", "--private-headers", *picked, str(path)], path.parent
    )
    sections: dict[str, tuple[int, int]] = {}
    for block in headers.split("Section\n")[1:]:
        field: dict[str, str] = {}  # the first of each: the block runs on to the next command
        for key, value in re.findall(
            r"^\s+(sectname|segname|addr|size|type) (\S+)", block, re.MULTILINE
        ):
            field.setdefault(key, value)
        if "ZEROFILL" not in field.get("type", ""):
            name = f"{field['segname']},{field['sectname']}"
            sections[name] = (int(field["addr"], 16), int(field["size"], 16))
    table = _run([tool("llvm-objdump"), "-t", *picked, str(path)], path.parent)
    rows = sorted(
        (int(address, 16), section, name)
        for address, section, name in re.findall(
            r"^([0-9a-f]{16}) .{7} (\S+,\S+) (\S+)$", table, re.MULTILINE
        )
        if section in sections
    )
    args = [tool("llvm-cxxfilt"), "-_", *(name for _, _, name in rows)]
    plain = _run(args, path.parent).splitlines() if rows else []
    starts: dict[str, list[int]] = {}
    for address, section, _ in rows:
        starts.setdefault(section, []).append(address)
    found, counted = [], set()
    for (address, section, _), name in zip(rows, plain, strict=True):
        start, size = sections[section]
        end = min((a for a in starts[section] if a > address), default=start + size)
        first = (section, address) not in counted
        counted.add((section, address))
        found.append(MachOSymbol(name, section, address, end - address if first else 0))
    return found


class LoadCommand(NamedTuple):
    """A load command as ``llvm-objdump --macho --private-headers`` lists it: its name, its
    offset from the image's start, its numeric fields (``cmdsize``, ``symoff``, ``nsyms``,
    ``dataoff``, ``fileoff``...; of a segment, its own before its sections') and, of a segment,
    its name and its sections' names, in order."""

    cmd: str
    offset: int
    fields: dict[str, int]
    segname: str
    sectnames: tuple[str, ...]


def load_commands(path: Path, arch: str | None = None) -> list[LoadCommand]:
    """Each load command of ``path`` (one architecture of a fat file), in order. The first
    follows the 32-byte header of a 64-bit image (28 bytes for 32-bit)."""
    picked = [f"--arch={arch}"] if arch else []
    text = _run(
        [tool("llvm-objdump"), "--macho", "--private-headers", *picked, str(path)], path.parent
    )
    at = 32 if "MH_MAGIC_64" in text else 28
    found = []
    for block in re.split(r"^Load command \d+$", text, flags=re.MULTILINE)[1:]:
        fields: dict[str, int] = {}
        for key, value in re.findall(r"^\s*(\w+) (\d+|0x[0-9a-f]+)$", block, re.MULTILINE):
            fields.setdefault(key, int(value, 0))
        command = re.search(r"^\s*cmd (\S+)$", block, re.MULTILINE)
        assert command is not None, block
        segment = re.search(r"^\s*segname (\S+)$", block, re.MULTILINE)
        names = tuple(re.findall(r"^\s*sectname (\S+)$", block, re.MULTILINE))
        found.append(
            LoadCommand(command.group(1), at, fields, segment.group(1) if segment else "", names)
        )
        at += fields["cmdsize"]
    return found


def llvm_refusal(path: Path) -> str:
    """What LLVM's reader says is wrong with ``path`` ('' when it reads it whole): the error of
    ``llvm-objdump --macho --section-headers`` for Mach-O, of ``llvm-objdump --section-headers
    --full-contents`` (every section's bytes read) for ELF."""
    elf = path.read_bytes()[:4] == b"\x7fELF"
    args = [tool("llvm-objdump"), "--section-headers", str(path)]
    args += ["--full-contents"] if elf else ["--macho"]
    done = subprocess.run(args, capture_output=True, text=True, check=False)
    return done.stderr.strip() if done.returncode or done.stderr.strip() else ""


def elf_header(path: Path) -> dict[str, int]:
    """The ELF header's numbers as ``llvm-readelf -h`` states them, by its own words
    (``Start of section headers``, ``Size of section headers``, ``Number of section
    headers``...)."""
    text = _run([tool("llvm-readelf"), "-h", str(path)], path.parent)
    return {
        key.strip(): int(value)
        for key, value in re.findall(r"^\s*([A-Z][\w ]+):\s+(\d+)(?: \(|$)", text, re.MULTILINE)
    }


def elf_section_numbers(path: Path) -> dict[str, int]:
    """Section name -> its index in the section header table, as ``llvm-readelf -S`` lists it."""
    text = _run([tool("llvm-readelf"), "-S", "-W", str(path)], path.parent)
    return {name: int(number) for number, name in re.findall(r"\[\s*(\d+)\] (\S+)", text)}


def own_header(path: Path, offset: int) -> tuple[str, int, int]:
    """(format version, size, function count) as the library at ``offset`` of ``path`` states
    them in its own header, read here with ``struct`` (not by the tool's reader)."""
    with open(path, "rb") as handle:
        handle.seek(offset)
        head = handle.read(92)
    assert head[:4] == b"MTLB"
    major, minor = struct.unpack_from("<HH", head, 6)
    size, list_at = struct.unpack_from("<QQ", head, 16)
    assert list_at == 88
    return f"{major}.{minor}", size, struct.unpack_from("<I", head, 88)[0]


def cxx_elf(
    out: Path, source: Path, *, triple: str = "x86_64-linux-gnu", flags: tuple[str, ...] = ()
) -> Path:
    """An ELF shared library of the C++17 ``source`` (no standard header: ``-nostdlib``),
    compiled by Debian's clang for ``triple`` and linked by lld."""
    args = [tool("clang"), f"--target={triple}", "-std=c++17", "-O2", "-fPIC", *flags]
    _run([*args, "-shared", "-nostdlib", "-fuse-ld=lld", str(source), "-o", str(out)], out.parent)
    return out


_DISASSEMBLED = re.compile(r"^\s*([0-9a-f]+):\s+(.*?)\s*(?:<.*|//.*)?$")


def _elf_returned(path: Path, symbol: str) -> int | None:
    """The address ``symbol``'s whole body returns, by ``llvm-objdump -d``: ``endbr64``?
    ``leaq D(%rip), %rax; retq``, ``adrp x0, P; add x0, x0, #I; ret``, or the ``nop`` and
    ``adr x0, D`` lld relaxes that pair into; None for another body."""
    args = [tool("llvm-objdump"), "-d", "--no-show-raw-insn", "--print-imm-hex"]
    text = _run([*args, f"--disassemble-symbols={symbol}", str(path)], path.parent)
    code = [
        (int(m[1], 16), re.sub(r"\s+", " ", m[2]).strip().split(" # ")[0])
        for m in map(_DISASSEMBLED.match, text.splitlines())
        if m and m[2].strip()
    ]
    ops = [op for _, op in code]
    if ops and ops[0] == "endbr64":
        code, ops = code[1:], ops[1:]
    lea = re.fullmatch(r"leaq (-?0x[0-9a-f]+)\(%rip\), %rax", ops[0]) if ops else None
    if lea and ops[1:2] == ["retq"]:
        return code[1][0] + int(lea[1], 16)  # RIP: the next instruction's address
    adrp = re.fullmatch(r"adrp x0, (0x[0-9a-f]+)", ops[0]) if ops else None
    add = re.fullmatch(r"add x0, x0, #(0x[0-9a-f]+)", ops[1]) if len(ops) > 1 else None
    if adrp and add and ops[2:3] == ["ret"]:
        return int(adrp[1], 16) + int(add[1], 16)
    adr = [(a, op) for a, op in code[:2] if op.startswith("adr x0, #")]
    if adr and sorted(ops[:2]) == sorted([adr[0][1], "nop"]) and ops[2:3] == ["ret"]:
        return adr[0][0] + int(adr[0][1][9:], 16)
    return None


def elf_string_returns(path: Path) -> dict[str, tuple[int, bytes]]:
    """C++ function symbol -> (file offset, bytes incl. NUL) of the ``.rodata`` string its whole
    body returns, for each such function ``llvm-nm -D`` lists (a stripped library keeps its
    exported functions there)."""
    offset, size, address = elf_sections(path)[".rodata"]
    data = path.read_bytes()
    found = {}
    listed = _run([tool("llvm-nm"), "-D", "--defined-only", str(path)], path.parent)
    for line in listed.splitlines():
        symbol = line.split()[-1]
        target = _elf_returned(path, symbol) if symbol.startswith("_Z") else None
        if target is not None and address <= target < address + size:
            where = offset + target - address
            found[symbol] = (where, data[where : data.index(b"\0", where) + 1])
    return found
