"""Per-unit bytes of the host JIT library, from its ELF symbol table (pyelftools).

The generator writes one translation unit per unit (``<unit>.cpp``) whose arrays live in an
anonymous namespace, so their symbol names do not say which unit they belong to; the symbol
table does: the local symbols of a translation unit follow its ``STT_FILE`` symbol. A symbol is
therefore counted for a unit when it is local to ``<unit>.cpp`` (a unit named by a path,
such as an entry file ``steel/gemm.metal``, by its last part: compilers record the file name
only, so ``gemm.metal.cpp``, when no other unit ends the same way) or when its name holds the
identifier ``family_<unit>`` (a catalog family's registry entry), whole, or mangled (C++ writes
an identifier after its length, ``13family_arange``, and may follow it by anything). Everything else
is ``(other)``: the runtime, the shared (deduplicated) pieces merged across units. Sizes are
``st_size`` of defined data and function symbols, so they are measured, not estimated; a non-ELF or
stripped library gives None.
"""

from __future__ import annotations

import re
from collections.abc import Iterable
from dataclasses import dataclass
from pathlib import Path

from builder.files.reading import UnreadableFile, open_regular

__all__ = ["OTHER", "SymbolSizes", "symbol_sizes"]

OTHER = "(other)"


@dataclass(frozen=True)
class SymbolSizes:
    """Bytes of defined symbols per unit (plus ``OTHER``), and how they were measured."""

    by_unit: dict[str, int]
    method: str

    @property
    def total(self) -> int:
        return sum(self.by_unit.values())


def _registry_entry(unit: str) -> re.Pattern[str]:
    """The name ``family_<unit>`` in a symbol: a C name, or a length-prefixed mangled one."""
    ident = re.escape(f"family_{unit}")
    return re.compile(rf"(?<![0-9]){len(unit) + 7}{ident}|(?<![A-Za-z0-9_]){ident}(?![A-Za-z0-9_])")


def symbol_sizes(path: Path, units: Iterable[str]) -> SymbolSizes | None:
    """Symbol bytes per unit of the ELF file at ``path``; None without pyelftools or symbols."""
    try:
        from elftools.common.exceptions import ELFError
        from elftools.elf.elffile import ELFFile
        from elftools.elf.sections import SymbolTableSection
    except ImportError:
        return None
    names = list(units)
    by_name = [(f, _registry_entry(f)) for f in names]
    totals = dict.fromkeys([*names, OTHER], 0)
    last = [Path(f).name for f in names]
    by_file = {Path(f).name: f for f in names if last.count(Path(f).name) == 1}
    try:
        with open_regular(path, "the host library") as fh:
            elf = ELFFile(fh)
            table = elf.get_section_by_name(".symtab")
            method = "pyelftools .symtab"
            if not isinstance(table, SymbolTableSection):
                return None
            unit: str | None = None
            for sym in table.iter_symbols():
                kind = sym["st_info"]["type"]
                if kind == "STT_FILE":
                    stem = Path(sym.name).stem
                    unit = stem if stem in totals and stem != OTHER else by_file.get(stem)
                    continue
                if kind not in ("STT_OBJECT", "STT_FUNC") or sym["st_shndx"] == "SHN_UNDEF":
                    continue
                size = int(sym["st_size"])
                if size == 0:
                    continue
                owner = OTHER
                if sym["st_info"]["bind"] == "STB_LOCAL" and unit is not None:
                    owner = unit
                else:
                    owner = next((f for f, rx in by_name if rx.search(sym.name)), OTHER)
                totals[owner] += size
    except (OSError, UnreadableFile, ELFError):
        return None
    return SymbolSizes(totals, method)
