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
they return is ``structs``'s.

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
"""

from __future__ import annotations

import os
import re
import struct
from collections.abc import Callable, Sequence
from typing import NamedTuple

from builder.files.reading import open_regular
from builder.metallib.binary_elf import elf_layout
from builder.metallib.binary_macho import MACHO_MAGICS, macho_layout
from builder.metallib.structs import Image, Layout, Section, Symbol

__all__ = [
    "Image",
    "Layout",
    "Place",
    "Section",
    "Symbol",
    "check_complete",
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
