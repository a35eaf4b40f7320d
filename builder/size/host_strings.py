"""Run-time sources a Mach-O or ELF host library returns from ``const char* name()`` functions.

MLX embeds each JIT preamble as a function that returns a string literal. Compiled, such a
function's whole body loads the literal's address and returns it, and the literal sits NUL-ended
in ``__TEXT,__cstring`` (ELF: ``.rodata``, where the linker merges the string sections). Reading
those bodies measures each run-time source in the binary itself, where a build's manifest is not
at hand (a wheel's ``libmlx.dylib``, a Linux wheel's ``.so`` built with ``metallib_embed_headers``).

Two bodies are recognised, each decoded from its encoding alone (no disassembler):

* arm64: ``adrp x0, page; add x0, x0, #off; ret`` (Arm ARM, C6.2.10 ADRP, C6.2.4 ADD
  (immediate), C6.2.219 RET), or ``nop; adr x0, d; ret`` / ``adr x0, d; nop; ret`` where the
  linker relaxed the pair (lld does for a string within 1 MB; C6.2.9 ADR);
* x86-64: ``lea rax, [rip + d32]; ret``, with or without the ``push rbp; mov rbp, rsp`` …
  ``pop rbp`` frame macOS compilers keep (Intel SDM vol. 2, LEA 8D /r with ModRM 0x05 = RIP+disp32),
  after an ``endbr64`` (F3 0F 1E FA) where the compiler adds one (``-fcf-protection``, Ubuntu's
  default).

Functions are found by symbol where the binary has them: a no-argument function (Itanium-mangled
``_ZN…Ev`` or ``_Z…v``; a const member function's ``this`` is an argument) in the namespace asked
for. A stripped binary (executorch's delegate keeps no local symbols) names none; there the
function starts ``LC_FUNCTION_STARTS`` records are read instead (Mach-O only: a stripped ELF
library still names its exported functions in ``.dynsym``). Without a namespace a function
(named or not) counts when its string is Metal source (``builder.size.metal_text.is_metal_source``:
a primitive's ``name()`` returns one word, torch's ONNX ``QLinearMatMulDoc`` 1,192 B of prose).
Sizes are the bytes the file holds, the NUL included.

``run_time_sources`` adds, without a namespace, the Metal translation units no function returns
(ggml's section, candle's string constants: ``builder.size.metal_text``), and counts the kernels
written in every source.

A shipped host library's run-time sources as a report's JIT rows, each named by the header of
a kernel tree it was made from.

``report libmlx.dylib --source-dir TREE``: MLX's host library holds no metallib, but it holds
the preambles its host compiles at run time, each returned by a ``const char* name()``
function. ``builder.size.host_strings`` finds each of those strings in the binary itself (the
function's body, decoded, points at a NUL-ended literal of ``__TEXT,__cstring``); this module
turns them into rows a report shows like a build's JIT units:

* **Which header.** A source names the file it was made from in its first lines: MLX's
  generator writes ``// Auto generated source for mlx/backend/metal/kernels/utils.h``, this
  tool's inliner starts each file's text with ``#line 1 "utils.h"``. That path is looked up as
  a quoted include resolves: under the tree's root, then each ``-I`` folder; failing that, under
  the root with the path's leading folders taken off one at a time (``--source-dir
  mlx/backend/metal/kernels`` without ``-I``). The row is the header as found, relative to the
  folder it was found in (``mlx/backend/metal/kernels/utils.h`` under an include root,
  ``indexing/gather.h`` under the kernels folder).
* **Not in the tree.** A source whose header the tree lacks (another release), or that names
  none (MLX's CPU ``get_prebuilt_preamble``), keeps the name the binary gives it: the header it
  names, its function's C++ name, or ``(unnamed at 0x…)`` in a stripped binary. These are
  listed in ``HostLibrary.unmatched`` for the warning ``report`` prints.
* **Bytes.** What the file holds for the string, its NUL included; sources of one name (the
  slices of a fat file) are added up. The rest of the file is one row: no symbol is read.

Without a tree every row keeps the binary's name. Standard library only.
"""

from __future__ import annotations

import os
import re
import struct
from collections.abc import Iterator, Sequence
from dataclasses import dataclass, replace
from pathlib import Path, PurePosixPath
from typing import IO

from builder.files.reading import open_regular
from builder.metallib.binary_sections import Image, Layout, Section, file_kind, read_layout
from builder.size.jit_sizes import HostLibrary, JitUnit
from builder.size.metal_text import count_kernels, embedded_metal, is_metal_source

__all__ = [
    "STRINGS_METHOD",
    "HostString",
    "demangle_plain",
    "host_strings",
    "measure_host_sources",
    "run_time_sources",
    "source_header",
]


_RET = 0xD65F03C0  # RET (X30)
_NOP = 0xD503201F
_STRING_SECTIONS = frozenset({"__cstring", ".rodata"})  # Mach-O's, ELF's
_TEXT_SECTIONS = frozenset({"__text", ".text"})
_READ = 20  # the longest body recognised: x86-64 with endbr64 and a frame, 4 + 4 + 7 + 2 bytes
_ENDBR64 = b"\xf3\x0f\x1e\xfa"


@dataclass(frozen=True)
class HostString:
    """One function returning a string literal: its C++ name (None when the binary names it
    not), the architecture of its image, and where its string sits (file offset, bytes incl.
    the NUL)."""

    function: str | None
    arch: str
    address: int
    offset: int
    size: int
    kernels: int | None = None
    """Kernels written in it (``builder.size.metal_text.count_kernels``); None: not read."""
    place: str | None = None
    """Of a translation unit no function returns, found by its text
    (``builder.size.metal_text``): the symbol that starts it, else its section and offset."""

    @property
    def label(self) -> str:
        return self.function or self.place or f"(unnamed at {self.address:#x})"


def demangle_plain(symbol: str) -> list[str] | None:
    """The qualified name parts of a no-argument, non-member-const function's Itanium symbol
    (``__ZN3mlx4core5metal5utilsEv`` -> ``["mlx", "core", "metal", "utils"]``); None for any
    other symbol. Only plain source names are read: a template, ABI tag or substitution is
    something else than MLX's preamble functions and gives None."""
    name = symbol[1:] if symbol.startswith("__Z") else symbol  # Mach-O adds one underscore
    if not name.startswith("_Z"):
        return None
    rest = name[2:].removeprefix("L")  # internal linkage at file scope
    nested = rest.startswith("N")
    rest = rest[1:] if nested else rest
    parts: list[str] = []
    while rest and rest[0].isdigit():
        digits = len(rest) - len(rest.lstrip("0123456789"))
        length = int(rest[:digits])
        part, rest = rest[digits : digits + length], rest[digits + length :]
        if len(part) != length:
            return None
        parts.append(part)
        if not nested:
            break
        rest = rest.removeprefix("L")
    if nested:
        if not rest.startswith("E"):
            return None
        rest = rest[1:]
    return parts if parts and rest == "v" else None


def _arm64_target(body: bytes, address: int) -> int | None:
    """The address ``adrp x0, P; add x0, x0, #I; ret`` returns (or the ``adr x0, D`` and
    ``nop`` a linker relaxes the pair into), or None for any other body."""
    if len(body) < 12:
        return None
    adrp, add, ret = (int(word) for word in struct.unpack_from("<III", body))
    relaxed = [(at, w) for at, w in enumerate((adrp, add)) if w & 0x9F00001F == 0x10000000]
    if relaxed and {adrp, add} - {relaxed[0][1]} == {_NOP} and ret == _RET:
        at, adr = relaxed[0]  # ADR x0 (C6.2.9): op=0, bits 28-24 = 10000, PC + immhi:immlo
        offset = ((adr >> 5) & 0x7FFFF) << 2 | (adr >> 29) & 3
        return address + 4 * at + offset - ((offset & 1 << 20) << 1)
    # ADRP: op=1, bits 28-24 = 10000, Rd = x0; ADD (imm, 64-bit): sf=1 op=0 S=0, 100010, Rn=Rd=0
    if adrp & 0x9F00001F != 0x90000000 or add & 0xFF8003FF != 0x91000000 or ret != _RET:
        return None
    page = ((adrp >> 5) & 0x7FFFF) << 2 | (adrp >> 29) & 3  # immhi:immlo, 21 bits signed
    page -= (page & 1 << 20) << 1
    shift = 12 if add >> 22 & 1 else 0  # sh: imm12 << 12
    return (address & ~0xFFF) + (page << 12) + (((add >> 10) & 0xFFF) << shift)


def _x86_64_target(body: bytes, address: int) -> int | None:
    """The address ``lea rax, [rip + d]; ret`` returns (also inside a ``push rbp`` frame, and
    after an ``endbr64``)."""
    start = len(_ENDBR64) if body.startswith(_ENDBR64) else 0
    framed = body.startswith(b"\x55\x48\x89\xe5", start)  # push rbp; mov rbp, rsp
    at = start + (4 if framed else 0)
    tail = b"\x5d\xc3" if framed else b"\xc3"  # pop rbp; ret
    if body[at : at + 3] != b"\x48\x8d\x05" or body[at + 7 : at + 7 + len(tail)] != tail:
        return None
    displacement = int(struct.unpack_from("<i", body, at + 3)[0])
    return address + at + 7 + displacement  # RIP is the next instruction's address


# Mach-O's architecture names, and pyelftools' for ELF (``x64``, ``aarch64``)
_DECODERS = {
    "arm64": _arm64_target,
    "aarch64": _arm64_target,
    "x86_64": _x86_64_target,
    "x64": _x86_64_target,
}


def _section_address(section: Section, offset: int) -> int:
    return section.address + offset - section.offset


def _candidates(image: Image) -> Iterator[tuple[int, str | None]]:
    """(file offset, symbol or None) of each function start: named ones, then unnamed ones."""
    named: dict[int, str] = {}
    for symbol in image.symbols():  # of aliases at one place, a plain function's name wins
        kept = named.get(symbol.offset)
        if kept is None or (demangle_plain(kept) is None and demangle_plain(symbol.name)):
            named[symbol.offset] = symbol.name
    yield from named.items()
    for start in image.function_starts():
        if start not in named:
            yield start, None


def _string_size(handle: IO[bytes], section: Section, offset: int) -> tuple[int, bool] | None:
    """Bytes of the NUL-ended string at ``offset`` of ``section``, the NUL included, and whether
    it holds a line break (maybe source text, not a one-word name)."""
    read = handle.read
    handle.seek(offset)
    size, block, lines = 0, 1 << 16, False
    while offset + size < section.end:
        chunk = read(min(block, section.end - offset - size))
        if not chunk:
            return None
        end = chunk.find(b"\0")
        lines = lines or b"\n" in (chunk if end < 0 else chunk[:end])
        if end >= 0:
            return size + end + 1, lines
        size += len(chunk)
    return None


def host_strings(
    path: str | os.PathLike[str], namespace: str | None = None
) -> list[HostString] | None:
    """Every function of the binary at ``path`` whose whole body returns a string literal,
    in ``namespace`` (``mlx::core::metal``; its nested namespaces too) when one is given.

    None when the file is neither Mach-O nor ELF; the order is the images' then the functions'
    addresses. A file cut short, or whose headers point outside it, is refused (``read_layout``:
    exit 2, one line).
    """
    return _host_strings(path, namespace, _layout(path))


def _layout(path: str | os.PathLike[str]) -> Layout | None:
    """The sections of a Mach-O or ELF file; None for a file of another kind."""
    with open_regular(os.fspath(path), "the host library") as handle:
        kind = file_kind(handle.read(8)) or ""
    return read_layout(path) if "Mach-O" in kind or "ELF" in kind else None


def _host_strings(
    path: str | os.PathLike[str], namespace: str | None, layout: Layout | None
) -> list[HostString] | None:
    """``host_strings`` of a file whose sections are read already (once for every search)."""
    if layout is None:
        return None
    wanted = namespace.split("::") if namespace else None
    found: list[HostString] = []
    with open_regular(os.fspath(path), "the host library") as handle:
        for image in layout.images:
            decode = _DECODERS.get(image.arch)
            text = next((s for s in image.sections if s.name in _TEXT_SECTIONS), None)
            if decode is None or text is None:
                continue
            strings = [s for s in image.sections if s.name in _STRING_SECTIONS and s.size]
            for offset, symbol in _candidates(image):
                if not text.offset <= offset < text.end:
                    continue
                parts = demangle_plain(symbol) if symbol is not None else None
                if symbol is not None and parts is None:
                    continue
                if wanted is not None and (parts is None or parts[:-1][: len(wanted)] != wanted):
                    continue  # outside the namespace, or unnamed: its namespace is unknown
                handle.seek(offset)
                address = _section_address(text, offset)
                target = decode(handle.read(_READ), address)
                section = next(
                    (s for s in strings if target is not None and 0 <= target - s.address < s.size),
                    None,
                )
                if section is None or target is None:
                    continue
                where = section.offset + target - section.address
                measured = _string_size(handle, section, where)
                if measured is None or (wanted is None and not measured[1]):
                    continue  # no string, or (without a namespace) no source text
                size = measured[0]
                if wanted is None:
                    handle.seek(where)
                    if not is_metal_source(handle.read(size - 1)):
                        continue  # text, but no Metal: documentation, C++ for the CPU

                name = "::".join(parts) if parts else None
                found.append(HostString(name, image.arch, address, where, size))
    found.sort(key=lambda s: (s.arch, s.address))
    return found


STRINGS_METHOD = "run-time source strings"
"""``host_library.measured_by`` of a host library measured by its run-time sources."""

_HEAD = 4096  # a source names its header in its first lines
_NAMED = re.compile(rb'// Auto generated source for ([^\s"]{1,512})|#line \d+ "([^"\n]{1,512})"')


def source_header(head: bytes) -> str | None:
    """The header a run-time source says it was made from (its first lines: MLX's comment or
    a ``#line`` marker), as a relative POSIX path; None when it names none, or a path that
    could leave a folder (absolute, ``..``)."""
    found = _NAMED.search(head)
    if found is None:
        return None
    text = (found.group(1) or found.group(2) or b"").decode("utf-8", "replace")
    path = PurePosixPath(text)
    if path.is_absolute() or ".." in path.parts or "\\" in text or not path.parts:
        return None
    return path.as_posix()


def _in_tree(header: str, folders: Sequence[Path]) -> str | None:
    """``header`` as found in the tree (``folders``: its root, then the -I folders): relative to
    the folder holding it; None when no folder holds it."""
    path = PurePosixPath(header)
    for folder in folders:
        if (folder / path).is_file():
            return path.as_posix()
    if folders:
        for start in range(1, len(path.parts)):
            tail = PurePosixPath(*path.parts[start:])
            if (folders[0] / tail).is_file():
                return tail.as_posix()
    return None


def run_time_sources(
    path: str | os.PathLike[str], namespace: str | None = None
) -> list[HostString] | None:
    """``host_strings`` with the kernels written in each string and, without a namespace, every
    Metal translation unit the binary holds that no such function returns (its ``place`` says
    where it sits). None when the file is neither Mach-O nor ELF."""
    layout = _layout(path)
    found = _host_strings(path, namespace, layout)
    if found is None:
        return None
    counted = []
    with open_regular(os.fspath(path), "the host library") as handle:
        for source in found:
            handle.seek(source.offset)
            counted.append(replace(source, kernels=count_kernels(handle.read(source.size))))
    if namespace is None:
        spans = [(s.offset, s.offset + s.size) for s in found]
        for text in embedded_metal(path, layout) if layout is not None else []:
            if any(a <= text.offset < b for a, b in spans):
                continue  # a string a function returns, found again by its text
            counted.append(
                HostString(
                    None, text.arch, text.address, text.offset, text.size, text.kernels, text.place
                )
            )
    counted.sort(key=lambda s: (s.arch, s.address))
    return counted


def measure_host_sources(
    path: Path, folders: Sequence[Path] = ()
) -> tuple[list[JitUnit], HostLibrary] | None:
    """The run-time sources of the Mach-O or ELF host library at ``path`` as JIT rows, named by
    the tree whose root and -I folders are ``folders`` (none: the binary's names), and the host
    library they add up to; None when it holds none (or is neither Mach-O nor ELF)."""
    found = run_time_sources(path)
    if not found:
        return None
    sizes: dict[str, int] = {}
    kernels: dict[str, int] = {}
    whole: set[str] = set()
    unmatched: dict[str, None] = {}
    with open_regular(os.fspath(path), "the host library") as handle:
        for source in found:
            handle.seek(source.offset)
            header = source_header(handle.read(min(source.size, _HEAD)))
            name = _in_tree(header, folders) if header is not None and folders else None
            if name is None:
                name = header or source.label
                if folders:
                    unmatched.setdefault(name)
            sizes[name] = sizes.get(name, 0) + source.size
            kernels[name] = kernels.get(name, 0) + (source.kernels or 0)
            if source.place is not None:
                whole.add(name)
    rows = [
        JitUnit(name, size, size, kernels[name], "whole-file" if name in whole else "preamble")
        for name, size in sizes.items()
    ]
    size = os.path.getsize(path)
    return rows, HostLibrary(str(path), size, STRINGS_METHOD, 0, tuple(unmatched))
