"""An ELF file's sections and symbols, read within the file.

The ELF header, the program and section header tables and the symbol tables are fixed-size
records (the System V ABI's ``Elf32_*``/``Elf64_*``), unpacked here with ``struct`` so that
every table is checked against the end of the file before it is read: pyelftools seeks wherever
a header points and fails in its own ways on a hostile file (a ``.symtab`` at offset 2^63, an
entry size of zero). pyelftools names the machine (``x64``, ``aarch64``) once the headers are
known to be inside the file.
"""

from __future__ import annotations

import os
import struct
from typing import IO

from builder.errors import BinaryFormatError
from builder.files.reading import open_regular
from builder.metallib.structs import Extent, Image, Layout, Section, Symbol, refuse_outside

__all__ = ["elf_layout"]

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
