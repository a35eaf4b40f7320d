"""The JIT side of a size report: what each run-time compiled unit costs in the host library.

A unit built JIT has no function in the metallib: its source is embedded in the host library
and compiled at run time. A build whose units are all JIT has no metallib at all, so its
size report must be about the host library instead. The figures are measured, never estimated:

* per unit, the bytes of its symbols in the host library, an ELF ``.so`` or a Mach-O
  ``.dylib`` (``builder.size.jit_sizes``: the symbols whose names hold the unit's
  namespace, and its registry entry; ELF ``st_size``, or in Mach-O each symbol up to the
  next), plus the symbols no unit owns (the runtime, source pieces shared by units) and the
  file bytes in no symbol (headers, symbol and string tables, padding). Together they are the
  host library's file size, as a metallib's functions and container overhead are its file size;
* when the symbols cannot be read (a stripped library, another format, a missing file), the
  embedded source bytes the build recorded in its manifest, and the report says so.

The rows a report shows for them are ``builder.size.compare.jit_breakdown``.

Per-unit bytes of a host JIT library from its symbol table: an ELF ``.so`` or Mach-O ``.dylib``.

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

from collections.abc import Iterable, Iterator, Sequence
from dataclasses import dataclass, replace
from pathlib import Path
from typing import Literal

from builder.files.dataclass_json import count, field
from builder.files.reading import UnreadableFile, open_regular
from builder.jit.literals import unit_namespace

__all__ = [
    "ELF_METHOD",
    "MACHO_METHOD",
    "OTHER",
    "HostLibrary",
    "JitUnit",
    "SymbolSizes",
    "measure_host",
    "method_words",
    "source_names",
    "symbol_sizes",
    "unattributed_bytes",
    "unmeasured_reason",
]


@dataclass(frozen=True)
class JitUnit:
    """A unit compiled at run time: its source is embedded in the host library."""

    name: str
    embedded_bytes: int = count()
    """Source bytes stored for it, as the build manifest records them."""
    host_bytes: int | None = count(default=None)
    """Bytes of its symbols in the host library (``builder.size.jit_sizes``); None when not
    measured."""
    kernel_count: int = count(default=0)
    """Instantiations it provides at run time (its host names in the manifest)."""
    embedding: Literal["whole-file", "preamble"] = "preamble"
    """``whole-file`` (an entry file's text, includes inlined) or ``preamble`` (headers the host
    adds instantiation lines to; every catalog family)."""


@dataclass(frozen=True)
class HostLibrary:
    """The host library a build embeds its JIT units in, as measured on disk. Its saved form
    adds the bytes in no symbol (``unattributed_bytes``), which the report's JIT units decide."""

    path: str
    file_size: int = count()
    measured_by: str | None = None
    """How symbol sizes were read (``pyelftools .symtab``, ``Mach-O LC_SYMTAB``); None when they
    could not be."""
    shared_bytes: int | None = count(default=None)
    """Bytes of symbols no unit owns: the runtime and source pieces shared by units."""
    unmatched: tuple[str, ...] = field(omit="always", default=())
    """Of a shipped host library measured by its run-time sources against a kernel tree
    (``builder.size.host_strings``): the rows no header of the tree made. Not saved."""


def measure_host(path: Path, units: Sequence[JitUnit]) -> tuple[list[JitUnit], HostLibrary | None]:
    """``units`` with their bytes in the host library at ``path``, and the library.

    A missing file gives no ``HostLibrary`` (the rows keep the manifest's embedded bytes); a
    file whose symbols cannot be read gives one with ``measured_by`` None.
    """
    if not path.is_file():
        return list(units), None
    symbols = symbol_sizes(path, [unit.name for unit in units])
    size = path.stat().st_size
    if symbols is None:
        return list(units), HostLibrary(str(path), size, None)
    jit = [replace(unit, host_bytes=symbols.by_unit[unit.name]) for unit in units]
    return jit, HostLibrary(str(path), size, symbols.method, symbols.by_unit[OTHER])


def unmeasured_reason(host: HostLibrary | None, jit: Sequence[JitUnit]) -> str | None:
    """None when the host library's symbol sizes cover every JIT unit, else the reason."""
    if host is None:
        return "host library not found"
    if host.measured_by is None or host.shared_bytes is None:
        return (
            f"no symbol sizes in the host library {host.path}: stripped, not made by this "
            "tool, or neither ELF nor Mach-O"
        )
    if any(j.host_bytes is None for j in jit):
        return f"no symbol sizes for some units in the host library {host.path}"
    return None


def unattributed_bytes(host: HostLibrary, jit: Sequence[JitUnit]) -> int:
    """File bytes of the host library in no symbol (headers, tables, padding)."""
    return host.file_size - (host.shared_bytes or 0) - sum(j.host_bytes or 0 for j in jit)


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
