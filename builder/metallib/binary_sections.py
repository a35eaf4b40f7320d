"""Where bytes sit in a Mach-O (thin or fat) or ELF file: its sections and symbols, as file offsets.

The embedded-metallib finder uses this to say where each library it found sits (segment, section,
the symbol that names it), and to refuse a binary that was cut short; the JIT side uses
``symbols`` and ``function_starts`` to measure a host library's strings.

Every part of a binary its headers declare (a fat file's slices, load commands, segments,
sections, symbol and string tables, an ELF file's header tables and sections) is checked to lie
inside the file before anything reads it: one that runs past the end is ``TruncatedBinaryError``,
naming the part, where it would end and the file's size; one outside its slice, or load commands
that do not parse, ``BinaryFormatError``. Both are one line and exit 2 (docs/security.md). Mach-O
is read by ``binary_macho`` (macholib on the load commands only), ELF by ``binary_elf``; what
they return is ``binary_layout``'s.
"""

from __future__ import annotations

import os
import struct

from builder.files.reading import open_regular
from builder.metallib.binary_elf import elf_layout
from builder.metallib.binary_layout import Image, Layout, Section, Symbol
from builder.metallib.binary_macho import MACHO_MAGICS, macho_layout

__all__ = ["Image", "Layout", "Section", "Symbol", "check_complete", "file_kind", "read_layout"]

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
