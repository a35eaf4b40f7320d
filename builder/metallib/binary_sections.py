"""Where bytes sit in a Mach-O (thin or fat) or ELF file: its sections and symbols, as file offsets.

The embedded-metallib finder uses this to say where each library it found sits (segment, section,
the symbol that names it), and to refuse a binary that was cut short; the JIT side uses
``symbols`` and ``function_starts`` to measure a host library's strings.

Every part of a binary its headers declare (a fat file's slices, load commands, segments,
sections, symbol and string tables, an ELF file's header tables and sections) is checked to lie
inside the file before anything reads it: one that runs past the end is ``TruncatedBinaryError``,
naming the part, where it would end and the file's size; one outside its slice, or load commands
that do not parse, ``BinaryFormatError``. Both are one line and exit 2 (docs/security.md). Mach-O
is read by ``binary_macho`` (macholib on the load commands only), ELF here (:func:`elf_layout`);
what they return is ``structs``'s.

An embedded library's identity: a name for it that stays the same across releases.

Position is no identity: releases add, remove and reorder the libraries of a binary
(metal-linalg 2.10.0's first library is ``QR_Unblocked``, 2.19.0's ``QR_Streaming_AMX_Reduced``).
So a library inside a binary is named by the first of these that names it alone in the binary:

1. the symbol that starts at it (``_metal_linalg_QR_Unblocked_metallib``);
2. its section (``__TEXT,metal_basic``; ELF: ``.rodata``), when no other library is in it;
3. its ordinal, its number in file order from 1 (``3``): all that is left to name it by.

A symbol or section that names libraries in several slices of a fat binary, one in each, is
qualified by the slice's architecture (``__TEXT,metal@arm64``). Symbols the assembler makes
(mapping symbols ``$d``, ``ltmp3``, ``.L…``) name a place, not a library, and are passed over.
The ordinal only says where a library is: ``compare`` pairs by it only within files of the same
name (``builder.size.compare.pair_reports``). An identity never holds ``#``,
is never empty and is never all digits unless it is the ordinal, so ``FILE#IDENTITY`` splits at
its last ``#`` and ``#3`` always means the third library.

An ELF file's sections and symbols, read within the file.

The ELF header, the program and section header tables and the symbol tables are fixed-size
records (the System V ABI's ``Elf32_*``/``Elf64_*``), unpacked here with ``struct`` so that
every table is checked against the end of the file before it is read: pyelftools seeks wherever
a header points and fails in its own ways on a hostile file (a ``.symtab`` at offset 2^63, an
entry size of zero). pyelftools names the machine (``x64``, ``aarch64``) once the headers are
known to be inside the file.
"""

from __future__ import annotations

import os
import re
import struct
from collections.abc import Callable, Sequence
from typing import IO, NamedTuple

from builder.errors import BinaryFormatError
from builder.files.reading import open_regular
from builder.metallib.binary_macho import MACHO_MAGICS, macho_layout
from builder.metallib.structs import Extent, Image, Layout, Section, Symbol, refuse_outside

__all__ = [
    "Image",
    "Layout",
    "Place",
    "Section",
    "Symbol",
    "check_complete",
    "elf_layout",
    "file_kind",
    "identities",
    "is_ordinal",
    "not_a_metallib",
    "read_layout",
]


_FAT = {b"\xca\xfe\xba\xbe", b"\xca\xfe\xba\xbf"}
_ELF = b"\x7fELF"


def file_kind(head: bytes) -> str | None:
    """What the first bytes of a file say it is, in words for an error message (None: unknown)."""
    if head[:4] in MACHO_MAGICS:
        return "a Mach-O binary"
    if head[:4] in _FAT:
        # Java class files share 0xCAFEBABE; their next field (a version) is large.
        count = struct.unpack_from(">I", head, 4)[0] if len(head) >= 8 else 0
        return "a fat (universal) Mach-O binary" if 0 < count < 64 else None
    if head[:4] == _ELF:
        return "an ELF binary"
    if head[:4] in (b"PK\x03\x04", b"PK\x05\x06"):
        return "a zip archive (a wheel is read when its name ends in .whl)"
    if head[:4] == b"\x0b\x17\xc0\xde" or head[:4] == b"BC\xc0\xde":
        return "LLVM bitcode (an .air file), not a library"
    if head[:2] == b"MZ":
        return "a Windows (PE) binary"
    if head[:1] in (b"{", b"["):
        return "text (JSON?); a saved report is read when its name ends in .json"
    return None


def not_a_metallib(head: bytes) -> str:
    """What a file that does not start with the magic is, and what to do: one line. The bytes
    are written as hex digits once (a ``repr`` would be escaped again on the way to stderr)."""
    shown = " ".join(f"{b:02x}" for b in head[:4]) or "nothing"
    kind = file_kind(head)
    what = f"; it is {kind}" if kind else ""
    if kind and ("Mach-O" in kind or "ELF" in kind):
        what += " (give it as a TARGET to report, list, verify or slim: they find its metallibs)"
    return f"not a metallib: its magic (first 4 bytes) is {shown}, not MTLB (4d 54 4c 42){what}"


def read_layout(path: str | os.PathLike[str]) -> Layout | None:
    """The sections of a Mach-O or ELF file (None for a file of another kind: the finder then
    still finds metallibs, without saying where they sit). Raises ``TruncatedBinaryError`` or
    ``BinaryFormatError`` for a binary whose headers point outside it."""
    name = os.fspath(path)
    with open_regular(name, "the binary") as handle:
        head = handle.read(8)
        size = os.fstat(handle.fileno()).st_size
        if head[:4] in MACHO_MAGICS or (head[:4] in _FAT and file_kind(head) is not None):
            return macho_layout(name, handle, size, fat=head[:4] in _FAT)
        if head[:4] == _ELF:
            return elf_layout(name, handle, size)
    return None


def check_complete(path: str | os.PathLike[str]) -> None:
    """Refuse a Mach-O or ELF file that was cut short or whose headers point outside it
    (``TruncatedBinaryError``, ``BinaryFormatError``): what such a file holds cannot be told, and a
    metallib the cut took would go unseen. Any other file passes."""
    read_layout(path)


class Place(NamedTuple):
    """What a binary says about where one library sits (None: the binary does not say)."""

    arch: str | None
    symbol: str | None
    section: str | None
    """``SEGMENT,section`` (Mach-O) or the section's name (ELF)."""


def identities(places: Sequence[Place]) -> list[str]:
    """The identity of each library of one binary, given in file order (see the module)."""
    chosen: list[str | None] = [None] * len(places)
    rules: tuple[Callable[[Place], str | None], ...] = (
        lambda p: p.symbol,
        lambda p: p.section,
    )
    for rule in rules:
        holders: dict[str, list[int]] = {}
        for index, place in enumerate(places):
            key = rule(place)
            if key is not None and _usable(key):
                holders.setdefault(key, []).append(index)
        for key, indices in holders.items():
            archs = [places[i].arch for i in indices]
            if len(indices) == 1:
                names = [key]
            elif None not in archs and len(set(archs)) == len(indices):
                names = [f"{key}@{arch}" for arch in archs]
            else:
                continue  # it names several libraries of one slice: not theirs alone
            for index, name in zip(indices, names, strict=True):
                if chosen[index] is None:
                    chosen[index] = name
    out = [name or str(number) for number, name in enumerate(chosen, 1)]
    repeated = {name for name in out if out.count(name) > 1}  # a symbol spelt like another's
    return [str(n) if name in repeated else name for n, name in enumerate(out, 1)]


def is_ordinal(identity: str) -> bool:
    """Whether ``identity`` is a library's number in file order (nothing else names it)."""
    return identity.isdigit()


# Symbols the assembler makes, which name a place, not a library: AArch64/ARM mapping symbols
# (``$d``, ``$x.12``), Mach-O section-start temporaries (``ltmp3``), ELF local labels (``.L…``).
_ASSEMBLER = re.compile(r"\$[adtx](\..*)?|ltmp[0-9]+|\.L.*", re.DOTALL)


def _usable(name: str) -> bool:
    return (
        bool(name)
        and "#" not in name
        and not name.isdigit()
        and name.isprintable()
        and not _ASSEMBLER.fullmatch(name)
    )


# e_type ... e_shstrndx after e_ident (16 bytes), for ELFCLASS32 and ELFCLASS64
_HEADER = {1: "HHIIIIIHHHHHH", 2: "HHIQQQIHHHHHH"}
# sh_name, sh_type, sh_flags, sh_addr, sh_offset, sh_size, sh_link (and the rest, unread)
_SECTION = {1: "IIIIIII12x", 2: "IIQQQQI20x"}
# p_type and p_offset ... p_filesz; the order differs between the classes
_PROGRAM = {1: "IIIII12x", 2: "I4xQQQQ16x"}
_SYMBOL = {1: "IIIBBH", 2: "IBBHQQ"}  # Elf32_Sym, Elf64_Sym
_SYMTAB, _DYNSYM, _PT_LOAD = 2, 11, 1
_NO_BYTES = (0, 8)  # SHT_NULL (its other fields mean nothing), SHT_NOBITS (.bss)
_NO_SECTION = (0, 0xFFF1, 0xFFF2)  # SHN_UNDEF, SHN_ABS, SHN_COMMON: no file bytes
_NAME = 4096  # longest section name read


def elf_layout(path: str, handle: IO[bytes], size: int) -> Layout:
    """The sections of the ELF file open as ``handle`` (``size`` bytes); raises
    ``TruncatedBinaryError`` or ``BinaryFormatError`` when a table or section lies outside it."""
    fd = handle.fileno()
    ident = os.pread(fd, 64, 0)
    wide, order = (ident[4:5] or b"\0")[0], (ident[5:6] or b"\0")[0]
    if wide not in (1, 2) or order not in (1, 2):
        raise BinaryFormatError(
            4, f"malformed: ELF class {wide} and data encoding {order} (1 or 2 each)", path
        )
    end = "<" if order == 1 else ">"
    header = struct.Struct(end + _HEADER[wide])
    refuse_outside(path, [Extent("the ELF header", 0, 16 + header.size, size)], size)
    (_, machine, _, _, phoff, shoff, _, _, phentsize, phnum, shentsize, shnum, shstrndx) = (
        header.unpack_from(ident, 16)
    )
    shdr, phdr = struct.Struct(end + _SECTION[wide]), struct.Struct(end + _PROGRAM[wide])
    if shoff and (shnum == 0 or shstrndx == 0xFFFF):  # more than a u16 holds: in section 0
        zeroth = _zeroth(path, fd, size, shoff, shentsize, shdr)
        shnum = shnum or zeroth[5]
        shstrndx = zeroth[6] if shstrndx == 0xFFFF else shstrndx
    extents = [
        *_table(path, "section", shoff, shnum, shentsize, shdr, size),
        *_table(path, "program", phoff, phnum, phentsize, phdr, size),
    ]
    refuse_outside(path, extents, size)
    rows = [shdr.unpack_from(r) for r in _rows(fd, shoff, shnum, shentsize)]
    programs = [phdr.unpack_from(r) for r in _rows(fd, phoff, phnum, phentsize)]
    names = _names(fd, rows, shstrndx, size)
    for number, (p_type, offset, *_, filesize) in enumerate(programs):
        if p_type == _PT_LOAD and filesize:
            extents.append(Extent(f"segment {number} (PT_LOAD)", offset, filesize, size))
    for number, (_, kind, _, _, offset, length, _) in enumerate(rows):
        if kind not in _NO_BYTES and length:
            extents.append(Extent(f"section {names[number] or number}", offset, length, size))
    refuse_outside(path, extents, size)
    sections = [
        Section(None, names[i], offset, length, address)
        for i, (_, kind, _, address, offset, length, _) in enumerate(rows)
        if kind not in _NO_BYTES and names[i]
    ]
    tables = []
    for _, kind, _, _, offset, length, link in rows:
        if kind in (_SYMTAB, _DYNSYM) and 0 < link < len(rows) and rows[link][1] not in _NO_BYTES:
            tables.append((offset, length, rows[link][4], rows[link][5]))
    symbols = _ElfSymbols(path, sections, tables, struct.Struct(end + _SYMBOL[wide]))
    return Layout("ELF", [Image(_machine(handle, machine), 0, size, sections, symbols)])


def _zeroth(
    path: str, fd: int, size: int, shoff: int, entsize: int, shdr: struct.Struct
) -> tuple[int, ...]:
    """Section header 0, which holds the section count and the string table's index when the
    ELF header's fields cannot (``e_shnum`` 0, ``e_shstrndx`` SHN_XINDEX)."""
    if entsize < shdr.size:
        raise BinaryFormatError(
            0, f"malformed: section headers of {entsize} bytes (at least {shdr.size})", path
        )
    refuse_outside(path, [Extent("section header 0", shoff, entsize, size)], size)
    return tuple(shdr.unpack(os.pread(fd, shdr.size, shoff)))


def _table(
    path: str, kind: str, offset: int, count: int, entsize: int, row: struct.Struct, size: int
) -> list[Extent]:
    if not offset or not count:
        return []
    if entsize < row.size:
        raise BinaryFormatError(
            0, f"malformed: {kind} headers of {entsize} bytes (at least {row.size})", path
        )
    return [Extent(f"the {kind} header table ({count} entries)", offset, count * entsize, size)]


def _rows(fd: int, offset: int, count: int, entsize: int) -> list[bytes]:
    """Each entry of a header table already checked to lie inside the file."""
    if not offset or not count:
        return []
    data = os.pread(fd, count * entsize, offset)
    return [data[i : i + entsize] for i in range(0, count * entsize, entsize)]


def _names(fd: int, rows: list[tuple[int, ...]], shstrndx: int, size: int) -> list[str]:
    """Each section's name from the section name table ('' where there is none, or where the
    table does not lie inside the file: the sections' check then refuses it by its number)."""
    if not 0 < shstrndx < len(rows) or rows[shstrndx][1] in _NO_BYTES:
        return [""] * len(rows)
    _, _, _, _, base, length, _ = rows[shstrndx]
    if base + length > size:
        return [""] * len(rows)
    names = []
    for index, *_ in rows:
        raw = os.pread(fd, min(_NAME, length - index), base + index) if index < length else b""
        names.append(raw.split(b"\0", 1)[0].decode("utf-8", "replace"))
    return names


def _machine(handle: IO[bytes], number: int) -> str:
    """pyelftools' name of the machine (``x64``), lower case, read once the header tables are
    known to lie inside the file; the number if it fails."""
    from elftools.common.exceptions import ELFError
    from elftools.elf.elffile import ELFFile

    try:
        return ELFFile(handle).get_machine_arch().lower()
    except (ELFError, ValueError, struct.error, OSError):
        return f"machine {number}"


def _read(handle: IO[bytes], offset: int, size: int) -> bytes:
    """``size`` bytes at ``offset`` of a section checked to lie inside the file (an empty one
    may say any offset: it is not sought)."""
    if not size:
        return b""
    handle.seek(offset)
    return handle.read(size)


class _ElfSymbols:
    """``.symtab`` and ``.dynsym`` (each with its string table), read on use; both checked to
    lie inside the file before this is made."""

    def __init__(
        self,
        path: str,
        sections: list[Section],
        tables: list[tuple[int, int, int, int]],
        entry: struct.Struct,
    ) -> None:
        self.path, self.sections, self.tables, self.entry = path, sections, tables, entry

    def symbols(self) -> list[Symbol]:
        """Every defined symbol with a name and file bytes, by offset."""
        out: set[Symbol] = set()
        wide = self.entry.size == 24
        with open_regular(self.path, "the binary") as handle:
            for offset, length, strings_at, strings_size in self.tables:
                table = _read(handle, offset, length - length % self.entry.size)
                strings = _read(handle, strings_at, strings_size)
                for fields in self.entry.iter_unpack(table):
                    if wide:
                        strx, _, _, shndx, value, size = fields
                    else:
                        strx, value, size, _, _, shndx = fields
                    stop = strings.find(b"\0", strx)
                    name = strings[strx : stop if stop >= 0 else len(strings)]
                    where = self._offset(value) if shndx not in _NO_SECTION and name else None
                    if where is not None:
                        out.add(Symbol(name.decode("utf-8", "replace"), where, size))
        return sorted(out, key=lambda s: (s.offset, s.name))

    def _offset(self, address: int) -> int | None:
        for section in self.sections:
            if section.address and section.address <= address < section.address + section.size:
                return section.offset + address - section.address
        return None

    def names_at(self, wanted: set[int]) -> dict[int, str]:
        names: dict[int, str] = {}
        for symbol in self.symbols():
            if symbol.offset in wanted and symbol.offset not in names:
                names[symbol.offset] = symbol.name
        return names
