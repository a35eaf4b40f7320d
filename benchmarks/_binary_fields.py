"""Where the fields of a (valid) seed binary are, for ``fuzz_binaries.py`` to mutate them.

A field is (file offset, width in bytes, byte order). Read from the seed's own headers with
``int.from_bytes``, written for the seeds this project builds and the real ones it reads: thin
64-bit Mach-O (the header's counts, every 4- and 8-byte word of every load command, the first
nlist entries of ``LC_SYMTAB``, bytes of the link-edit data that load commands point at:
function starts, string table), fat Mach-O (the fat header and each slice's fields), and 64-bit
little-endian ELF (the header's table offsets and counts, every section header's fields, the
first symbols of each symbol table, bytes of its string table).
"""

from __future__ import annotations

from typing import Literal

Order = Literal["little", "big"]
Field = tuple[int, int, Order]

_LINKEDIT = {0x26, 0x29, 0x1D, 0x1E, 0x2B, 0x33, 0x34}
"""Load commands made of (dataoff, datasize): function starts, data in code, code signature,
segment split info, dylib code-sign drs, dyld exports trie, dyld chained fixups."""


def fields(data: bytes) -> list[Field]:
    """The seed's fields (empty for what is neither Mach-O nor ELF)."""
    magic = data[:4]
    if magic == b"\xca\xfe\xba\xbe":
        return _fat(data)
    if magic == b"\xcf\xfa\xed\xfe":
        return _macho(data, 0)
    if magic == b"\x7fELF" and data[4:6] == b"\x02\x01":
        return _elf(data)
    return []


def _u(data: bytes, at: int, width: int, order: Order = "little") -> int:
    return int.from_bytes(data[at : at + width], order)


def _fat(data: bytes) -> list[Field]:
    found: list[Field] = [(4, 4, "big")]
    for index in range(min(_u(data, 4, 4, "big"), 16)):
        at = 8 + 20 * index
        found += [(at + 4 * k, 4, "big") for k in range(5)]
        offset, size = _u(data, at + 8, 4, "big"), _u(data, at + 12, 4, "big")
        if data[offset : offset + 4] == b"\xcf\xfa\xed\xfe":
            found += _macho(data[: offset + size], offset)
    return found


def _macho(data: bytes, base: int) -> list[Field]:
    found: list[Field] = [(base + 16, 4, "little"), (base + 20, 4, "little")]
    at = base + 32
    for _ in range(min(_u(data, base + 16, 4), 500)):
        command, size = _u(data, at, 4), _u(data, at + 4, 4)
        if size < 8 or at + size > len(data):
            break
        found += [(at + o, 4, "little") for o in range(0, size, 4)]
        found += [(at + o, 8, "little") for o in range(8, size - 7, 8)]
        if command == 0x2:  # LC_SYMTAB: symoff, nsyms, stroff, strsize
            symbols, count = base + _u(data, at + 8, 4), _u(data, at + 12, 4)
            for entry in range(min(count, 32)):
                here = symbols + 16 * entry
                found += [(here, 4, "little"), (here + 4, 1, "little"), (here + 8, 8, "little")]
            found += _bytes(base + _u(data, at + 16, 4), _u(data, at + 20, 4))
        elif command in _LINKEDIT:
            found += _bytes(base + _u(data, at + 8, 4), _u(data, at + 12, 4))
        at += size
    return found


def _elf(data: bytes) -> list[Field]:
    found: list[Field] = [(o, 8, "little") for o in (24, 32, 40)]
    found += [(o, 2, "little") for o in (54, 56, 58, 60, 62)]
    headers, count = _u(data, 40, 8), _u(data, 60, 2)
    for index in range(min(count, 64)):
        at = headers + 64 * index
        if at + 64 > len(data):
            break
        found += [(at + o, 4, "little") for o in (0, 4, 40, 44)]
        found += [(at + o, 8, "little") for o in (8, 16, 24, 32, 48, 56)]
        if _u(data, at + 4, 4) in (2, 11):  # SHT_SYMTAB, SHT_DYNSYM
            table = _u(data, at + 24, 8)
            for entry in range(1, min(_u(data, at + 32, 8) // 24, 32)):
                here = table + 24 * entry
                found += [(here, 4, "little"), (here + 6, 2, "little")]
                found += [(here + 8, 8, "little"), (here + 16, 8, "little")]
        elif _u(data, at + 4, 4) == 3:  # SHT_STRTAB
            found += _bytes(_u(data, at + 24, 8), _u(data, at + 32, 8))
    return found


def _bytes(offset: int, size: int) -> list[Field]:
    """Up to 32 single bytes spread over ``[offset, offset + size)``."""
    step = max(1, size // 32)
    return [(offset + k, 1, "little") for k in range(0, min(size, 32 * step), step)]
