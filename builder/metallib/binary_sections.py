"""Where bytes sit in a Mach-O (thin or fat) or ELF file: its sections and symbols, as file offsets.

The embedded-metallib finder uses this to say where each library it found sits (segment, section,
the symbol that names it); the JIT side can use ``symbols`` to measure a host library's strings.

The structure is read by libraries, not by hand: macholib for Mach-O (the fat header, each
slice's header and load commands) and pyelftools for ELF. Both are given only what they need.
macholib copies every section's bytes into memory while it walks the load commands (386 MB for
torch's libtorch_cpu.dylib), so it reads the file through ``_HeadersOnly``, which answers reads
of more than ``_HEADER_READ`` bytes with nothing: memory stays flat in the file's size. Its
symbol-table reader builds an object per entry (36 s for the 430,434 entries of that file), so
the entries, 16 bytes each at the place ``LC_SYMTAB`` gives, are unpacked here with ``struct``.
Measurements and the comparison with LIEF: docs/performance.md, "Binary formats".
"""

from __future__ import annotations

import io
import os
import struct
from collections.abc import Iterable
from dataclasses import dataclass, field
from typing import IO, Any

from builder.files.reading import open_regular

__all__ = ["Image", "Layout", "Section", "Symbol", "file_kind", "read_layout"]

# Reads macholib makes of headers and load commands are far smaller; section data is larger.
_HEADER_READ = 64 * 1024
_MACHO = {b"\xcf\xfa\xed\xfe", b"\xce\xfa\xed\xfe", b"\xfe\xed\xfa\xcf", b"\xfe\xed\xfa\xce"}
_FAT = {b"\xca\xfe\xba\xbe", b"\xca\xfe\xba\xbf"}
_ELF = b"\x7fELF"
_NLIST64 = struct.Struct("<IBBHQ")  # n_strx, n_type, n_sect, n_desc, n_value (mach-o/nlist.h)
_NLIST32 = struct.Struct("<IBBHI")
_N_STAB, _N_TYPE, _N_SECT = 0xE0, 0x0E, 0x0E


@dataclass(frozen=True)
class Section:
    """A section with its place in the file (``offset`` from the start of the file, also in a
    fat file) and in memory (``address``). ELF has no segment names: ``segment`` is None."""

    segment: str | None
    name: str
    offset: int
    size: int
    address: int

    @property
    def end(self) -> int:
        return self.offset + self.size

    @property
    def label(self) -> str:
        return f"{self.segment},{self.name}" if self.segment else self.name


@dataclass(frozen=True)
class Symbol:
    """A defined symbol, at a file offset; ``size`` from ELF, or up to the next symbol of the
    section in Mach-O (which records none)."""

    name: str
    offset: int
    size: int


@dataclass
class Image:
    """One Mach-O image (a fat file holds one per architecture) or the ELF file."""

    arch: str
    offset: int
    size: int
    sections: list[Section]
    table: Any = field(default=None, repr=False)  # its symbol table reader, or None
    starts: Any = field(default=None, repr=False)  # its LC_FUNCTION_STARTS reader, or None

    def section_at(self, offset: int) -> Section | None:
        """The section holding file offset ``offset`` (zero-fill sections hold none)."""
        for section in self.sections:
            if section.offset <= offset < section.end:
                return section
        return None

    def symbols(self) -> list[Symbol]:
        """Every defined symbol with a file offset, sorted by offset (read from the file)."""
        found: list[Symbol] = self.table.symbols() if self.table is not None else []
        return found

    def function_starts(self) -> list[int]:
        """The file offset of each function ``LC_FUNCTION_STARTS`` records (Mach-O only): the
        functions a stripped binary still has, without their names."""
        found: list[int] = self.starts.offsets() if self.starts is not None else []
        return found

    def names_at(self, offsets: Iterable[int]) -> dict[int, str]:
        """The name of a symbol starting exactly at each of ``offsets`` that has one: one pass
        over the table, names read only for those."""
        wanted = set(offsets)
        if self.table is None or not wanted:
            return {}
        names: dict[int, str] = self.table.names_at(wanted)
        return names


@dataclass
class Layout:
    """What ``read_layout`` found: the kind of file and its images."""

    kind: str
    images: list[Image]

    def image_at(self, offset: int) -> Image | None:
        return next((i for i in self.images if i.offset <= offset < i.offset + i.size), None)

    def names_at(self, offsets: Iterable[int]) -> dict[int, str]:
        """``Image.names_at`` over every image."""
        found: dict[int, str] = {}
        wanted = list(offsets)
        for image in self.images:
            found.update(
                image.names_at(o for o in wanted if image.offset <= o < image.offset + image.size)
            )
        return found


def file_kind(head: bytes) -> str | None:
    """What the first bytes of a file say it is, in words for an error message (None: unknown)."""
    if head[:4] in _MACHO:
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


def read_layout(path: str | os.PathLike[str]) -> Layout | None:
    """The sections of a Mach-O or ELF file (None for anything else, or one its library cannot
    read: the finder then still finds metallibs, without saying where they sit)."""
    name = os.fspath(path)
    with open_regular(name, "the binary") as handle:
        head = handle.read(8)
        kind = file_kind(head)
        size = os.fstat(handle.fileno()).st_size
        try:
            if head[:4] in _MACHO or (head[:4] in _FAT and kind is not None):
                return _macho_layout(name, handle, size, fat=head[:4] in _FAT)
            if head[:4] == _ELF:
                return _elf_layout(name, handle, size)
        except (ValueError, struct.error, OSError, EOFError, KeyError, IndexError):
            return None  # a file its library cannot parse: no locations
        except Exception as exc:  # pyelftools' own errors
            if type(exc).__name__ in ("ELFError", "ELFParseError"):
                return None
            raise
    return None


class _HeadersOnly(io.RawIOBase):
    """The file as macholib sees it: reads of headers and load commands reach the file; a read
    of more than ``_HEADER_READ`` bytes (a section's data, which it only keeps) returns nothing."""

    def __init__(self, handle: IO[bytes]) -> None:
        self.handle = handle

    def readable(self) -> bool:
        return True

    def seekable(self) -> bool:
        return True

    def seek(self, offset: int, whence: int = 0) -> int:
        return self.handle.seek(offset, whence)

    def tell(self) -> int:
        return self.handle.tell()

    def read(self, size: int = -1) -> bytes:
        if size < 0 or size > _HEADER_READ:
            self.handle.seek(max(size, 0), 1)
            return b""
        return self.handle.read(size)


def _macho_layout(path: str, handle: IO[bytes], size: int, *, fat: bool) -> Layout:
    from macholib.mach_o import (  # type: ignore[import-untyped]
        CPU_TYPE_NAMES,
        LC_FUNCTION_STARTS,
        LC_SYMTAB,
    )
    from macholib.MachO import MachO  # type: ignore[import-untyped]

    macho = MachO.__new__(MachO)  # its __init__ opens the path itself; load() takes the file
    macho.graph, macho.fat, macho.headers = None, None, []
    macho.filename, macho.loader_path = path, "@loader_path"
    macho.allow_unknown_load_commands = True
    handle.seek(0)
    macho.load(_HeadersOnly(handle))
    images = []
    for header in macho.headers:
        base = header.offset
        sections, symtab, starts, text_file = [], None, None, 0
        for load, command, data in header.commands:
            if load.cmd == LC_SYMTAB:
                symtab = command
            elif load.cmd == LC_FUNCTION_STARTS:
                starts = (command.dataoff, command.datasize)
            elif _text(getattr(command, "segname", b"")) == "__TEXT":
                text_file = command.fileoff
            for s in data if isinstance(data, list) else ():
                zerofill = (s.flags & 0xFF) in (0x1, 0xC, 0x12)  # S_ZEROFILL, GB, TLV
                where, length = (0, 0) if zerofill else (base + s.offset, s.size)
                sections.append(Section(_text(s.segname), _text(s.sectname), where, length, s.addr))
        arch = CPU_TYPE_NAMES.get(header.header.cputype, str(header.header.cputype)).lower()
        wide = header.header.magic in (0xFEEDFACF, 0xCFFAEDFE)
        table = None if symtab is None else _MachOSymbols(path, base, symtab, sections, wide)
        reader = None if starts is None else _FunctionStarts(path, base, base + text_file, starts)
        images.append(Image(arch, base, header.size if fat else size, sections, table, reader))
    return Layout("fat Mach-O" if fat else "Mach-O", images)


class _FunctionStarts:
    """``LC_FUNCTION_STARTS``: ULEB128 deltas, the first from the ``__TEXT`` segment's start
    (mach-o/loader.h), ended by a zero."""

    def __init__(self, path: str, base: int, segment: int, where: tuple[int, int]) -> None:
        self.path, self.base, self.segment = path, base, segment
        self.dataoff, self.datasize = where

    def offsets(self) -> list[int]:
        with open_regular(self.path, "the binary") as handle:
            handle.seek(self.base + self.dataoff)
            data = handle.read(self.datasize)
        found, at, value, shift = [], self.segment, 0, 0
        for byte in data:
            value |= (byte & 0x7F) << shift
            shift += 7
            if byte & 0x80:
                continue
            if value == 0:
                break
            at += value
            found.append(at)
            value, shift = 0, 0
        return found


class _MachOSymbols:
    """An image's ``LC_SYMTAB``: nlist entries and their strings, read from the file on use."""

    def __init__(self, path: str, base: int, symtab: Any, sections: list[Section], wide: bool):
        self.path, self.base, self.sections = path, base, sections
        self.symoff, self.nsyms = symtab.symoff, symtab.nsyms
        self.stroff, self.strsize = symtab.stroff, symtab.strsize
        self.entry = _NLIST64 if wide else _NLIST32

    def _entries(self, handle: IO[bytes]) -> list[tuple[int, int, int]]:
        """(file offset, section number, string index) of each defined section symbol."""
        handle.seek(self.base + self.symoff)
        table = handle.read(self.nsyms * self.entry.size)
        table = table[: len(table) - len(table) % self.entry.size]
        sections, found = self.sections, []
        for strx, kind, sect, _, value in self.entry.iter_unpack(table):
            if kind & _N_STAB or kind & _N_TYPE != _N_SECT or not 0 < sect <= len(sections):
                continue
            section = sections[sect - 1]
            if section.size and section.address <= value < section.address + section.size:
                found.append((section.offset + value - section.address, sect, strx))
        return found

    def _name(self, handle: IO[bytes], strx: int) -> str:
        if strx >= self.strsize:
            return ""
        handle.seek(self.base + self.stroff + strx)
        raw = handle.read(min(4096, self.strsize - strx))
        return raw.split(b"\0", 1)[0].decode("utf-8", "replace")

    def names_at(self, wanted: set[int]) -> dict[int, str]:
        """A search of the table's bytes for each wanted address (as n_value packs it), not a
        walk of its entries: the table of a large binary holds hundreds of thousands."""
        size, value_at = self.entry.size, self.entry.size - (8 if self.entry is _NLIST64 else 4)
        packing = "<Q" if self.entry is _NLIST64 else "<I"
        names: dict[int, str] = {}
        with open_regular(self.path, "the binary") as handle:
            handle.seek(self.base + self.symoff)
            table = handle.read(self.nsyms * size)
            for offset in sorted(wanted):
                section = next((s for s in self.sections if s.offset <= offset < s.end), None)
                if section is None:
                    continue
                needle = struct.pack(packing, section.address + offset - section.offset)
                at = table.find(needle)
                while at >= 0 and offset not in names:
                    if at % size == value_at:
                        strx, kind, sect, _, _ = self.entry.unpack_from(table, at - value_at)
                        is_defined = not kind & _N_STAB and kind & _N_TYPE == _N_SECT
                        if is_defined and self.sections[sect - 1 : sect] == [section]:
                            names[offset] = self._name(handle, strx) or names.get(offset, "")
                    at = table.find(needle, at + 1)
                if not names.get(offset):
                    names.pop(offset, None)
        return names

    def symbols(self) -> list[Symbol]:
        """Each sized up to the next symbol of its section (or the section's end)."""
        with open_regular(self.path, "the binary") as handle:
            found = sorted(self._entries(handle))
            handle.seek(self.base + self.stroff)
            strings = handle.read(self.strsize)
        ends: dict[int, int] = {}
        out = []
        for offset, sect, strx in reversed(found):
            end = ends.get(sect, self.sections[sect - 1].end)
            if offset < end:
                ends[sect] = offset
            name = strings[strx : strings.find(b"\0", strx)] if strx < len(strings) else b""
            out.append(Symbol(name.decode("utf-8", "replace"), offset, end - offset))
        out.reverse()
        return out


def _elf_layout(path: str, handle: IO[bytes], size: int) -> Layout:
    from elftools.elf.elffile import ELFFile

    elf = ELFFile(handle)
    sections = [
        Section(None, s.name, s["sh_offset"], s["sh_size"], s["sh_addr"])
        for s in elf.iter_sections()
        if s["sh_type"] != "SHT_NOBITS" and s.name
    ]
    arch = elf.get_machine_arch().lower()
    return Layout("ELF", [Image(arch, 0, size, sections, _ElfSymbols(path, sections))])


class _ElfSymbols:
    """``.symtab`` and ``.dynsym``, read with pyelftools on use."""

    def __init__(self, path: str, sections: list[Section]) -> None:
        self.path, self.sections = path, sections

    def symbols(self) -> list[Symbol]:
        from elftools.elf.elffile import ELFFile

        out: set[Symbol] = set()
        with open_regular(self.path, "the binary") as handle:
            elf = ELFFile(handle)
            for name in (".symtab", ".dynsym"):
                table = elf.get_section_by_name(name)
                for sym in getattr(table, "iter_symbols", list)():
                    if sym.name and sym["st_shndx"] not in ("SHN_UNDEF", "SHN_ABS", "SHN_COMMON"):
                        where = self._offset(sym["st_value"])
                        if where is not None:
                            out.add(Symbol(sym.name, where, sym["st_size"]))
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


def _text(raw: bytes) -> str:
    return raw.rstrip(b"\0").decode("utf-8", "replace")
