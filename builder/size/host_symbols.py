"""Per-unit bytes of a host JIT library from its symbol table: an ELF ``.so`` or Mach-O ``.dylib``.

**Which unit.** The generator declares every array a unit stores in a namespace named after the unit
(``builder.jit.literals.unit_namespace``: ``mbjit_unit_unary``,
``mbjit_unit_steel2f_gemm2e_metal``), so the unit is spelled in each such symbol's mangled name,
whatever the object format. A symbol counts for a unit when one identifier of its name is that
namespace, or is ``family_<unit>`` (a catalog family's registry entry, which the registry's index
names). Identifiers are read from the Itanium mangling left to right, ``<length><identifier>`` after
``<length>``, so a name that ends in a digit (``12_GLOBAL__N_1`` before ``16mbjit_unit_unary``) is
never read as a length; a C name is its own identifier, and Mach-O's leading ``_`` is dropped first.
Everything else is ``(other)``: the runtime (the registry, the preambles' functions) and the pieces
several units share (stored once). This used to rest on ELF's ``STT_FILE`` symbols (the locals after
``unary.cpp``'s file symbol); Mach-O has none, and the names work for both.

**How big.** ELF: ``st_size`` of the defined data and function symbols that hold file bytes
(``.bss`` holds none), each address once (pyelftools). Mach-O: an nlist entry has no size, so
each defined section symbol extends to the next symbol of its section, or the section's end
(``builder.metallib.binary_sections.Image.symbols``): the padding after an array is its array's,
and every slice of a fat file is counted (the file holds each). Both are measured, not
estimated: the units, ``(other)`` and the bytes in no symbol add up to the file size. A file of
another format, one without a symbol table, or one where no symbol names a unit (stripped of
its local symbols) gives None.
"""

from __future__ import annotations

from collections.abc import Iterable, Iterator
from dataclasses import dataclass
from pathlib import Path

from builder.files.reading import UnreadableFile, open_regular
from builder.jit.literals import unit_namespace

__all__ = [
    "ELF_METHOD",
    "MACHO_METHOD",
    "OTHER",
    "SymbolSizes",
    "method_words",
    "source_names",
    "symbol_sizes",
]

OTHER = "(other)"
ELF_METHOD = "pyelftools .symtab"
MACHO_METHOD = "Mach-O LC_SYMTAB"
_DIGITS = "0123456789"


@dataclass(frozen=True)
class SymbolSizes:
    """Bytes of defined symbols per unit (plus ``OTHER``), and how they were measured."""

    by_unit: dict[str, int]
    method: str

    @property
    def total(self) -> int:
        return sum(self.by_unit.values())


def method_words(method: str) -> str:
    """What a ``measured_by`` value means, for a report's caption."""
    if method == ELF_METHOD:
        return f"ELF st_size, {method}"
    if method == MACHO_METHOD:
        return f"{method}: each symbol up to the next one of its section"
    return method


def source_names(symbol: str) -> Iterator[str]:
    """The identifiers a symbol spells: each ``<length><identifier>`` of an Itanium mangled
    name (``_ZN9metal_jit6detail12family_unaryE`` -> ``metal_jit``, ``detail``,
    ``family_unary``), or the name itself when it is not mangled."""
    if not symbol.startswith("_Z"):
        yield symbol
        return
    at, end = 2, len(symbol)
    while at < end:
        if symbol[at] not in _DIGITS:
            at += 1
            continue
        digits = at
        while digits < end and symbol[digits] in _DIGITS:
            digits += 1
        length = int(symbol[at:digits])
        yield symbol[digits : digits + length]
        at = digits + length


def _owners(units: Iterable[str]) -> dict[str, str]:
    """Identifier -> unit: each unit's namespace and its registry entry ``family_<unit>``."""
    owners: dict[str, str] = {}
    for unit in units:
        owners[unit_namespace(unit)] = unit
        owners[f"family_{unit}"] = unit
    return owners


def _owner(name: str, owners: dict[str, str]) -> str:
    return next((owners[n] for n in source_names(name) if n in owners), OTHER)


def symbol_sizes(path: Path, units: Iterable[str]) -> SymbolSizes | None:
    """Symbol bytes per unit of the ELF or Mach-O file at ``path``; None when they cannot be
    read (another format, no symbol table, no symbol naming a unit). A binary cut short, or
    whose headers point outside it, is refused (``check_complete``: exit 2, one line)."""
    from builder.metallib.binary_sections import check_complete

    names = list(units)
    owners = _owners(names)
    try:
        check_complete(path)
        with open_regular(path, "the host library") as handle:
            head = handle.read(4)
        if head == b"\x7fELF":
            found = _elf_sizes(path, owners)
        else:
            found = _macho_sizes(path, owners)
    except (OSError, UnreadableFile):
        return None
    if found is None:
        return None
    sizes, method = found
    totals = dict.fromkeys([*names, OTHER], 0)
    for owner, size in sizes:
        totals[owner] += size
    if names and not any(totals[n] for n in names):
        return None  # no symbol names a unit: stripped, or not made by this generator
    return SymbolSizes(totals, method)


def _elf_sizes(path: Path, owners: dict[str, str]) -> tuple[list[tuple[str, int]], str] | None:
    """(owner, bytes) of each defined data or function symbol with file bytes, from .symtab."""
    try:
        from elftools.common.exceptions import ELFError
        from elftools.elf.elffile import ELFFile
        from elftools.elf.sections import SymbolTableSection
    except ImportError:
        return None
    found: list[tuple[str, int]] = []
    try:
        with open_regular(path, "the host library") as handle:
            elf = ELFFile(handle)
            table = elf.get_section_by_name(".symtab")
            if not isinstance(table, SymbolTableSection):
                return None
            empty = {i for i, s in enumerate(elf.iter_sections()) if s["sh_type"] == "SHT_NOBITS"}
            seen: set[tuple[int, int]] = set()
            for sym in table.iter_symbols():
                section, size = sym["st_shndx"], int(sym["st_size"])
                if sym["st_info"]["type"] not in ("STT_OBJECT", "STT_FUNC") or not size:
                    continue
                if not isinstance(section, int) or section in empty:
                    continue  # undefined, absolute, common, or in .bss: no file bytes
                where = (section, int(sym["st_value"]))
                if where in seen:  # an alias of a symbol counted already
                    continue
                seen.add(where)
                found.append((_owner(sym.name, owners), size))
    except (ELFError, ValueError):  # a table pyelftools cannot read (entry size 0...)
        return None
    return found, ELF_METHOD


def _macho_sizes(path: Path, owners: dict[str, str]) -> tuple[list[tuple[str, int]], str] | None:
    """(owner, bytes) of each defined section symbol of every slice, sized to the next one."""
    from builder.metallib.binary_sections import read_layout

    layout = read_layout(path)
    if layout is None or "Mach-O" not in layout.kind:
        return None
    found = [
        (_owner(s.name.removeprefix("_"), owners), s.size)
        for image in layout.images
        for s in image.symbols()
        if s.size
    ]
    return (found, MACHO_METHOD) if found else None
