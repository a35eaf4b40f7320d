"""Every byte of a binary that holds metallibs: each embedded library, then the rest by section.

``report libtorch_cpu.dylib`` measures the two metallibs inside the 386 MB file; this module says
where the other bytes are, so the rows add up to the file's size exactly: one row per embedded
library, one per section with the bytes of it no library covers (``__TEXT,__text``, ``.rodata``),
and one for the bytes in no section at all (headers, load commands, ``__LINKEDIT``'s symbol and
string tables, a fat file's header and padding). Sections come from
``builder.metallib.binary_sections`` (macholib, pyelftools); a binary without sections (or a
format neither reads) gets the libraries and one row for the rest.

The rows are ``Rollup`` rows like every other table: a library's row has its function count,
the other rows are overhead rows.
"""

from __future__ import annotations

import os
from collections.abc import Sequence
from dataclasses import dataclass

from builder.metallib.binary_sections import read_layout
from builder.size.rollup import Rollup, overhead_row

__all__ = ["NO_SECTION", "BinaryAccount", "account_binary", "binary_accounts"]

NO_SECTION = "(in no section: headers, load commands, symbol tables)"


@dataclass(frozen=True)
class BinaryAccount:
    """The rows of one binary; they add up to ``file_size``."""

    path: str
    shown: str
    """The binary as tables name it (its path in a wheel, or the target as given)."""
    kind: str
    """``Mach-O``, ``fat Mach-O``, ``ELF`` or ``binary`` (no sections read)."""
    file_size: int
    rows: tuple[Rollup, ...]
    """Libraries first (file order), then sections (file order), then :data:`NO_SECTION`."""

    @property
    def library_bytes(self) -> int:
        return sum(r.bytes for r in self.rows if not r.overhead)


def _outside(start: int, end: int, windows: Sequence[tuple[int, int]]) -> int:
    """Bytes of ``[start, end)`` that no window ``(offset, size)`` covers (windows disjoint)."""
    covered = 0
    for offset, size in windows:
        covered += max(0, min(end, offset + size) - max(start, offset))
    return end - start - covered


def account_binary(
    path: str, libraries: Sequence[tuple[str, int, int, int]], shown: str | None = None
) -> BinaryAccount:
    """The account of the binary at ``path`` holding ``libraries``: (name, offset, size,
    function count) each. Raises AssertionError if the rows do not add up (a bug, not input)."""
    file_size = os.path.getsize(path)
    ordered = sorted(libraries, key=lambda lib: lib[1])
    windows = [(offset, size) for _, offset, size, _ in ordered]
    rows = [Rollup(name, count, size, 0) for name, _, size, count in ordered]
    layout = read_layout(path)
    library_bytes = sum(size for _, size in windows)
    in_sections = covered_in_sections = 0
    kind = "binary"
    if layout is not None:
        kind = layout.kind
        fat = len(layout.images) > 1
        sections = [(image, s) for image in layout.images for s in image.sections]
        for image, section in sorted(sections, key=lambda pair: pair[1].offset):
            rest = _outside(section.offset, section.end, windows)
            in_sections += section.size
            covered_in_sections += section.size - rest
            if rest:
                label = f"{image.arch} {section.label}" if fat else section.label
                rows.append(overhead_row(label, rest))
    # in no section: the file less its sections, less the library bytes outside every section
    rest = file_size - in_sections - (library_bytes - covered_in_sections)
    if rest:
        rows.append(overhead_row(NO_SECTION, rest))
    account = BinaryAccount(path, shown or path, kind, file_size, tuple(rows))
    assert sum(r.bytes for r in account.rows) == file_size, (path, account)
    return account


def binary_accounts(
    libraries: Sequence[tuple[str | None, str, dict[str, object] | None, str, int]],
) -> list[BinaryAccount]:
    """One account per binary among ``libraries``: (path, binary shown as, embedded, name,
    function count) of each measured library, ``embedded`` as ``Source.embedded`` states it
    (None: not in a binary). Binaries in the order their first library comes."""
    by_path: dict[str, list[tuple[str, int, int, int]]] = {}
    names: dict[str, str] = {}
    for path, shown, embedded, name, count in libraries:
        if path is None or embedded is None:
            continue
        offset, size = embedded["offset"], embedded["size"]
        assert isinstance(offset, int) and isinstance(size, int)
        by_path.setdefault(path, []).append((name, offset, size, count))
        names.setdefault(path, shown)
    return [account_binary(path, libs, names[path]) for path, libs in by_path.items()]
