"""A Mach-O file's images (the thin file, or each slice of a fat one), read within the file.

The fat header and each image's header are read here with ``struct`` (a few fixed fields); the
load commands by macholib. macholib copies every section's bytes into memory while it walks the
load commands (386 MB for torch's libtorch_cpu.dylib) and seeks wherever a command points, so it
reads the file through ``_HeadersOnly``: the image's header and load commands, in order, and
nothing else (any other read returns nothing). Its work is then bounded by the load commands'
size, which is checked against the file first. Every part the load commands declare (segments,
sections, the symbol and string tables, the link-edit data) is then checked against the end of
the file and of its slice (``structs.refuse_outside``) before anything reads it.

macholib's symbol-table reader builds an object per entry (36 s for the 430,434 entries of
libtorch_cpu.dylib), so the entries, 16 bytes each at the place ``LC_SYMTAB`` gives, are
unpacked here with ``struct``. Measurements: docs/performance.md, "Binary formats".
"""

from __future__ import annotations

import os
import struct
from collections.abc import Iterator
from typing import IO, Any

from builder.errors import BinaryFormatError
from builder.files.reading import open_regular
from builder.metallib.structs import Extent, Image, Layout, Section, Symbol, refuse_outside

__all__ = ["MACHO_MAGICS", "macho_layout"]

MACHO_MAGICS = frozenset(
    {b"\xcf\xfa\xed\xfe", b"\xce\xfa\xed\xfe", b"\xfe\xed\xfa\xcf", b"\xfe\xed\xfa\xce"}
)
"""The first four bytes of a thin Mach-O image: 64- and 32-bit, either byte order."""
_LITTLE = {b"\xcf\xfa\xed\xfe", b"\xce\xfa\xed\xfe"}
_WIDE = {b"\xcf\xfa\xed\xfe", b"\xfe\xed\xfa\xcf"}
_FAT_ARCH = struct.Struct(">IIII4x")  # cputype, cpusubtype, offset, size, align (mach-o/fat.h)
_FAT_ARCH64 = struct.Struct(">IIQQ8x")  # the same with 64-bit offset and size, align, reserved
_NLIST64 = struct.Struct("<IBBHQ")  # n_strx, n_type, n_sect, n_desc, n_value (mach-o/nlist.h)
_NLIST32 = struct.Struct("<IBBHI")
_N_STAB, _N_TYPE, _N_SECT = 0xE0, 0x0E, 0x0E
_ZEROFILL = (0x1, 0xC, 0x12)  # S_ZEROFILL, S_GB_ZEROFILL, S_THREAD_LOCAL_ZEROFILL
_ENDLESS = 1 << 64  # the slice size macholib is told: it checks nothing against it
_PARSE_ERRORS = (ValueError, struct.error, OSError, EOFError, KeyError, IndexError, TypeError)


def macho_layout(path: str, handle: IO[bytes], size: int, *, fat: bool) -> Layout:
    """The images of the Mach-O file open as ``handle`` (``size`` bytes); raises
    ``TruncatedBinaryError`` or ``BinaryFormatError`` when a part of it lies outside it."""
    fd = handle.fileno()
    extents: list[Extent] = []
    images: list[Image] = []
    for cputype, base, length in _slices(path, fd, size) if fat else [(None, 0, size)]:
        limit = base + length
        of = f" of the {_arch(cputype)} slice" if cputype is not None else ""
        if cputype is not None:
            extents.append(Extent(f"the {_arch(cputype)} slice", base, length, size))
        head = os.pread(fd, 32, base) if base < size else b""
        if len(head) >= 4 and head[:4] not in MACHO_MAGICS:
            raise BinaryFormatError(
                base,
                f"malformed: no Mach-O header{of} (its first bytes: {head[:4].hex(' ')})",
                path,
            )
        wide = head[:4] in _WIDE
        header = Extent(f"the Mach-O header{of}", base, 32 if wide else 28, limit)
        if len(head) < header.size:
            extents.append(header)
            continue
        order = "<" if head[:4] in _LITTLE else ">"
        commands = Extent(
            f"the load commands{of}", base, header.size + _u32(head, 20, order), limit
        )
        extents.append(commands)
        if commands.end <= min(size, limit):
            _walk(path, fd, commands, header.size, _u32(head, 16, order), order, of)
            image, parts = _image(path, fd, commands, of, wide, length)
            images.append(image)
            extents += parts
    refuse_outside(path, extents, size)
    return Layout("fat Mach-O" if fat else "Mach-O", images)


def _u32(data: bytes, at: int, order: str) -> int:
    return int(struct.unpack_from(order + "I", data, at)[0])


def _arch(cputype: int) -> str:
    from macholib.mach_o import CPU_TYPE_NAMES  # type: ignore[import-untyped]

    return str(CPU_TYPE_NAMES.get(cputype, str(cputype))).lower()


def _slices(path: str, fd: int, size: int) -> list[tuple[int, int, int]]:
    """(cputype, offset, size) of each slice the fat header lists (fewer than 64: ``file_kind``)."""
    magic, count = struct.unpack(">II", os.pread(fd, 8, 0))
    entry = _FAT_ARCH64 if magic == 0xCAFEBABF else _FAT_ARCH
    table = Extent(f"the fat header ({count} slices)", 0, 8 + count * entry.size, size)
    refuse_outside(path, [table], size)
    data = os.pread(fd, count * entry.size, 8)
    return [(cputype, offset, length) for cputype, _, offset, length in entry.iter_unpack(data)]


class _HeadersOnly:
    """The file as macholib sees it: one image's header and load commands (``[start, end)``),
    read in order from the start (the header twice); every other read (a section's data, which
    it only keeps, or a command pointing elsewhere) returns nothing. Positions are kept here,
    not in the file, so a seek anywhere is no error."""

    def __init__(self, fd: int, start: int, end: int) -> None:
        self.fd, self.start, self.end = fd, start, end
        self.pos = self.next = start

    def seek(self, offset: int, whence: int = 0) -> int:
        self.pos = offset + (self.pos if whence == 1 else _ENDLESS if whence == 2 else 0)
        return self.pos

    def tell(self) -> int:
        return self.pos

    def read(self, size: int = -1) -> bytes:
        at, size = self.pos, max(size, 0)
        self.pos += size
        again = at == self.start and self.next - self.start <= 32  # the header, read twice
        if not (again or at == self.next) or at + size > self.end:
            return b""
        self.next = at + size
        return os.pread(self.fd, size, at)


def _walk(
    path: str, fd: int, commands: Extent, first: int, count: int, order: str, of: str
) -> None:
    """Check that the ``count`` load commands tile the bytes the header gives them (each of 8
    bytes at least, none past the last), as a loader reads them, before macholib does."""
    data = os.pread(fd, commands.size - first, commands.start + first)
    at = 0
    for number in range(count):
        size = _u32(data, at + 4, order) if at + 8 <= len(data) else 0
        if size < 8 or at + size > len(data):
            raise BinaryFormatError(
                commands.start + first + at,
                f"malformed: load command {number}{of} (cmdsize {size}) does not fit in the "
                f"{len(data)} bytes of load commands the header gives",
                path,
            )
        at += size
    if at != len(data):
        raise BinaryFormatError(
            commands.start + first + at,
            f"malformed: the {count} load commands{of} end here, not at the end of the "
            f"{len(data)} bytes the header gives them",
            path,
        )


def _load_commands(path: str, fd: int, commands: Extent, of: str) -> Any:
    """macholib's header of the image whose header and load commands are ``commands``."""
    from macholib.MachO import MachO  # type: ignore[import-untyped]

    macho = MachO.__new__(MachO)  # its __init__ opens the path itself; load_header takes the file
    macho.graph, macho.fat, macho.headers = None, None, []
    macho.filename, macho.loader_path = path, "@loader_path"
    macho.allow_unknown_load_commands = True
    try:
        reader = _HeadersOnly(fd, commands.start, commands.end)
        macho.load_header(reader, commands.start, _ENDLESS)
    except _PARSE_ERRORS as exc:
        said = str(exc.args[0]) if len(exc.args) == 1 else type(exc).__name__
        raise BinaryFormatError(
            commands.start, f"malformed: the load commands{of} do not parse ({said})", path
        ) from None
    return macho.headers[0]


def _image(
    path: str, fd: int, commands: Extent, of: str, wide: bool, length: int
) -> tuple[Image, list[Extent]]:
    """The image whose load commands are ``commands``, and the parts of the file they declare."""
    from macholib.mach_o import (
        LC_FUNCTION_STARTS,
        LC_NAMES,
        LC_SYMTAB,
        dyld_info_command,
        linkedit_data_command,
    )

    header = _load_commands(path, fd, commands, of)
    base, limit = commands.start, commands.limit

    def _part(what: str, start: int, size: int) -> list[Extent]:
        return [Extent(what, start, size, limit)] if size else []

    sections: list[Section] = []
    parts: list[Extent] = []
    segments: dict[str, tuple[int, int]] = {}
    symtab, starts = None, None
    for load, command, data in header.commands:
        if isinstance(data, list):  # a segment and its sections
            segment = _text(command.segname)
            segments.setdefault(segment, (base + command.fileoff, command.filesize))
            parts += _part(f"segment {segment}{of}", base + command.fileoff, command.filesize)
            for s in data:
                where = Section(
                    _text(s.segname), _text(s.sectname), base + s.offset, s.size, s.addr
                )
                if (s.flags & 0xFF) in _ZEROFILL or not command.filesize:  # no bytes in the file
                    where = Section(where.segment, where.name, 0, 0, s.addr)
                else:
                    parts += _part(f"section {where.label}{of}", where.offset, s.size)
                sections.append(where)
        elif load.cmd == LC_SYMTAB:
            symtab = command
            what = f"the symbol table{of} (LC_SYMTAB, {command.nsyms} entries)"
            parts += _part(what, base + command.symoff, command.nsyms * (16 if wide else 12))
            parts += _part(
                f"the string table{of} (LC_SYMTAB)", base + command.stroff, command.strsize
            )
        elif isinstance(command, linkedit_data_command):
            name = LC_NAMES.get(load.cmd, f"load command {load.cmd:#x}")
            parts += _part(f"the {name} data{of}", base + command.dataoff, command.datasize)
            if load.cmd == LC_FUNCTION_STARTS:
                starts = (base + command.dataoff, command.datasize)
        elif isinstance(command, dyld_info_command):
            for kind in ("rebase", "bind", "weak_bind", "lazy_bind", "export"):
                what = f"the {kind} information{of} (in {LC_NAMES.get(load.cmd)})"
                start, count = getattr(command, f"{kind}_off"), getattr(command, f"{kind}_size")
                parts += _part(what, base + start, count)
    arch = _arch(header.header.cputype)
    table = None if symtab is None else _MachOSymbols(path, base, symtab, sections, wide)
    reader = _starts(path, segments, starts)
    return Image(arch, base, length, sections, table, reader), parts


def _starts(
    path: str, segments: dict[str, tuple[int, int]], data: tuple[int, int] | None
) -> _FunctionStarts | None:
    """The reader of ``LC_FUNCTION_STARTS`` when its data lies in ``__LINKEDIT`` (as a linker
    writes it) and there is a ``__TEXT`` segment to count from; None otherwise."""
    text, linkedit = segments.get("__TEXT"), segments.get("__LINKEDIT")
    if data is None or text is None or linkedit is None:
        return None
    if not linkedit[0] <= data[0] <= data[0] + data[1] <= linkedit[0] + linkedit[1]:
        return None
    return _FunctionStarts(path, text, data)


class _FunctionStarts:
    """``LC_FUNCTION_STARTS``: ULEB128 deltas, the first from the ``__TEXT`` segment's start
    (mach-o/loader.h), ended by a zero."""

    def __init__(self, path: str, text: tuple[int, int], data: tuple[int, int]) -> None:
        self.path, self.text, self.data = path, text, data

    def offsets(self) -> Iterator[int]:
        """Each start, decoded from 64 KiB at a time: it ends at a zero delta, at the end of the
        data, at a delta of more than 64 bits or at one that leaves the ``__TEXT`` segment."""
        at, end = self.text[0], self.text[0] + self.text[1]
        value, shift = 0, 0
        with open_regular(self.path, "the binary") as handle:
            handle.seek(self.data[0])
            left = self.data[1]
            while left > 0:
                block = handle.read(min(left, 1 << 16))
                if not block:
                    return
                left -= len(block)
                for byte in block:
                    value |= (byte & 0x7F) << shift
                    shift += 7
                    if byte & 0x80:
                        if shift >= 64:
                            return
                        continue
                    at += value
                    if value == 0 or at >= end:
                        return
                    yield at
                    value, shift = 0, 0


class _MachOSymbols:
    """An image's ``LC_SYMTAB``: nlist entries and their strings, read from the file on use
    (both checked to lie inside the image before this is made)."""

    def __init__(self, path: str, base: int, symtab: Any, sections: list[Section], wide: bool):
        self.path, self.base, self.sections = path, base, sections
        self.symoff, self.nsyms = symtab.symoff, symtab.nsyms
        self.stroff, self.strsize = symtab.stroff, symtab.strsize
        self.entry = _NLIST64 if wide else _NLIST32

    def _table(self, handle: Any) -> bytes:
        handle.seek(self.base + self.symoff)
        table: bytes = handle.read(self.nsyms * self.entry.size)
        return table[: len(table) - len(table) % self.entry.size]

    def _entries(self, table: bytes) -> list[tuple[int, int, int]]:
        """(file offset, section number, string index) of each defined section symbol; debug
        (stab) entries are not symbols of the image."""
        sections, found = self.sections, []
        for strx, kind, sect, _, value in self.entry.iter_unpack(table):
            if kind & _N_STAB or kind & _N_TYPE != _N_SECT or not 0 < sect <= len(sections):
                continue
            section = sections[sect - 1]
            if section.size and section.address <= value < section.address + section.size:
                found.append((section.offset + value - section.address, sect, strx))
        return found

    def _name(self, handle: Any, strx: int) -> str:
        if strx >= self.strsize:
            return ""
        handle.seek(self.base + self.stroff + strx)
        raw = handle.read(min(4096, self.strsize - strx))
        return str(raw.split(b"\0", 1)[0].decode("utf-8", "replace"))

    def names_at(self, wanted: set[int]) -> dict[int, str]:
        """A search of the table's bytes for each wanted address (as n_value packs it), not a
        walk of its entries: the table of a large binary holds hundreds of thousands."""
        size, value_at = self.entry.size, self.entry.size - (8 if self.entry is _NLIST64 else 4)
        packing = struct.Struct("<Q" if self.entry is _NLIST64 else "<I")
        names: dict[int, str] = {}
        with open_regular(self.path, "the binary") as handle:
            table = self._table(handle)
            for offset in sorted(wanted):
                section = next((s for s in self.sections if s.offset <= offset < s.end), None)
                address = None if section is None else section.address + offset - section.offset
                if address is None or address >= 1 << (8 * packing.size):
                    continue  # no section, or an address n_value cannot hold
                needle = packing.pack(address)
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
            found = sorted(self._entries(self._table(handle)))
            handle.seek(self.base + self.stroff)
            strings = handle.read(self.strsize)
        ends: dict[int, int] = {}
        out = []
        for offset, sect, strx in reversed(found):
            end = ends.get(sect, self.sections[sect - 1].end)
            if offset < end:
                ends[sect] = offset
            stop = strings.find(b"\0", strx)
            name = strings[strx : stop if stop >= 0 else len(strings)]
            out.append(Symbol(name.decode("utf-8", "replace"), offset, end - offset))
        out.reverse()
        return out


def _text(raw: bytes) -> str:
    return raw.rstrip(b"\0").decode("utf-8", "replace")
