"""Byte accounting: every byte of a metallib belongs to one function or to named overhead.

A function owns five pieces: its function-list entry, its public and private metadata pieces, its
bitcode module and its reflection piece. Everything else (the header, the list count, the header
extension, the dynamic header, section framing such as the reflection-list count, and any gap) is
container overhead, named after the region it sits in. The reader's regions tile the file, so

    sum(function bytes) + sum(overhead bytes) == file size

holds by construction; ``Attribution.check`` re-verifies it. Should any of these invariants ever
break, that is a bug in this tool, reported as ``InternalError`` (one line naming the file and
the byte offset, exit 2), never as a made-up number.

Three ways to place the pieces, cheapest first:

* sizes only (default): the reader guarantees that each kind of piece lies in its own section, in
  function order, without overlap (it raises otherwise), so per-function sizes plus one
  "does this kind fit its section" check per kind are enough. This keeps ``report`` fast.
* offsets (``verify=True``): every piece's span is checked to be in order, disjoint and inside
  one region of its own, in one linear pass per kind.
* a bloaty-style range map, when the offsets check fails: pieces sorted by offset, the first to
  cover a byte keeps it, so no byte is ever counted twice.

Every byte of a binary that holds metallibs: each embedded library, then the rest by section.

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

import bisect
import os
from collections.abc import Sequence
from dataclasses import dataclass
from functools import cached_property
from operator import add, itemgetter, le
from typing import TYPE_CHECKING, NamedTuple, cast

from builder.errors import InternalError
from builder.metallib.binary_sections import read_layout
from builder.metallib.table import Piece
from builder.size.rollup import Rollup, overhead_row

if TYPE_CHECKING:
    from builder.metallib import FunctionEntry, Metallib, Region, Span

__all__ = [
    "NO_SECTION",
    "Attribution",
    "BinaryAccount",
    "FunctionBytes",
    "Overhead",
    "account_binary",
    "attribute",
    "binary_accounts",
    "piece_spans",
    "range_map",
]


class FunctionBytes(NamedTuple):
    """The bytes one function owns, per piece (0 for a piece it does not have), in ``Piece`` order.

    A NamedTuple because a report builds tens of thousands of them and a frozen dataclass costs
    several times more to construct.
    """

    position: int
    """The function's index in the function list."""
    name: str
    entry: int
    public_md: int
    private_md: int
    module: int
    reflection: int

    @property
    def bytes(self) -> int:
        return self.entry + self.public_md + self.private_md + self.module + self.reflection

    @property
    def metadata(self) -> int:
        return self.public_md + self.private_md


@dataclass(frozen=True, slots=True)
class Overhead:
    """Bytes no function owns, named after where they are (``header``, ``gap at 1234``...)."""

    name: str
    offset: int
    bytes: int


@dataclass(frozen=True)
class Attribution:
    """Where the bytes of one file went, kept as columns (one list per piece, in file order).

    Columns because a report only sums and zips them; ``functions`` gives the row view.
    """

    file_size: int
    format_version: str
    names: list[str]
    pieces: tuple[list[int], list[int], list[int], list[int], list[int]]
    """Per-function bytes of each piece, in ``Piece`` order."""
    overhead: list[Overhead]
    path: str | None = None
    """The file attributed (named by ``InternalError``)."""

    @classmethod
    def empty(cls) -> Attribution:
        """No metallib at all (a build whose units are all JIT)."""
        return cls(0, "-", [], ([], [], [], [], []), [])

    @cached_property
    def functions(self) -> list[FunctionBytes]:
        return list(map(FunctionBytes._make, zip(range(len(self.names)), self.names, *self.pieces)))

    @property
    def overhead_bytes(self) -> int:
        return sum(item.bytes for item in self.overhead)

    def check(self) -> None:
        """Raise ``InternalError`` unless the totals equal the file size exactly."""
        total = sum(map(sum, self.pieces)) + self.overhead_bytes
        if total != self.file_size:
            raise InternalError(
                f"attributed {total} bytes, the file has {self.file_size}",
                path=self.path,
                offset=self.file_size,
            )


def attribute(lib: Metallib, *, verify: bool = False) -> Attribution:
    """Attribute every byte of ``lib``; see the module docstring for the three placements."""
    regions = lib.regions()
    names = lib.columns().names
    owned = None if verify else _by_sizes(lib, regions)
    if owned is None:
        spans = piece_spans(lib.functions)
        owned = _fast_path(spans, regions)
        if owned is None:
            owned = range_map(spans, regions)
    per_region, sizes = owned
    overhead = []
    for region, used in zip(regions, per_region):
        rest = region.size - used
        if rest < 0:  # cannot happen with the range map; guard the invariant anyway
            raise InternalError(
                f"attribution: functions own {used} bytes of the {region.size}-byte {region.name}",
                path=lib.path,
                offset=region.offset,
            )
        if rest:
            name = region.name if not used else f"{region.name} framing"
            if region.name == "gap":
                name = f"gap at {region.offset}"
            overhead.append(Overhead(name, region.offset, rest))
    entry, public_md, private_md, module, reflection = sizes
    result = Attribution(
        lib.file_size,
        lib.header.format_version_text,
        names,
        (entry, public_md, private_md, module, reflection),
        overhead,
        lib.path,
    )
    result.check()
    return result


def _by_sizes(lib: Metallib, regions: list[Region]) -> tuple[list[int], list[list[int]]] | None:
    """Per-function sizes from the reader's columns; None if a kind overflows its section."""
    table = lib.columns()
    h = lib.header
    section_starts = {
        Piece.ENTRY: h.function_list.offset,
        Piece.PUBLIC_MD: h.public_metadata.offset,
        Piece.PRIVATE_MD: h.private_metadata.offset,
        Piece.MODULE: h.bitcode.offset,
        Piece.REFLECTION: lib.reflection_list.offset if lib.reflection_list else None,
    }
    per_region = [0] * len(regions)
    starts = [r.offset for r in regions]
    for piece in Piece:
        offset, used = section_starts[piece], sum(table.sizes(piece))
        if not used:
            continue
        if offset is None:
            return None
        where = bisect.bisect_right(starts, offset) - 1
        if where < 0 or regions[where].offset != offset or per_region[where]:
            return None
        per_region[where] = used
        if used > regions[where].size:
            return None
    return per_region, [table.sizes(piece) for piece in Piece]


def piece_spans(functions: Sequence[FunctionEntry]) -> list[list[Span | None]]:
    """Every function's span of each piece, one list per ``Piece``."""
    return [[fn.span(piece) for fn in functions] for piece in Piece]


def _fast_path(
    spans: list[list[Span | None]], regions: list[Region]
) -> tuple[list[int], list[list[int]]] | None:
    """Apple's layout: each piece kind in order, disjoint, inside one region of its own.

    Written with ``map`` over whole columns because it runs on every report of a large library.
    """
    per_region = [0] * len(regions)
    starts = [r.offset for r in regions]
    seen_regions: set[int] = set()
    sizes = []
    for kind in spans:
        if None in kind:
            if any(span is not None for span in kind):
                return None
            sizes.append([0] * len(kind))
            continue
        present = cast("list[Span]", kind)
        offsets = list(map(itemgetter(0), present))
        lengths = list(map(itemgetter(1), present))
        ends = list(map(add, offsets, lengths))
        if not all(map(le, ends[:-1], offsets[1:])):
            return None
        sizes.append(lengths)
        total = sum(lengths)
        if not present or not total:
            continue
        where = bisect.bisect_right(starts, offsets[0]) - 1
        if where < 0 or ends[-1] > regions[where].end or where in seen_regions:
            return None
        seen_regions.add(where)
        per_region[where] += total
    return per_region, sizes


def range_map(
    spans: list[list[Span | None]], regions: list[Region]
) -> tuple[list[int], list[list[int]]]:
    """General case: sort every piece by offset; the first piece to cover a byte owns it.

    Pieces that reach past the end of the file are clipped to it (the reader rejects such files,
    but a wrong size must never be reported as measured).
    """
    count = len(spans[0]) if spans else 0
    sizes = [[0] * count for _ in spans]
    pieces = [
        (span.offset, kind, index, span.offset + span.size)
        for kind, kind_spans in enumerate(spans)
        for index, span in enumerate(kind_spans)
        if span is not None and span.size
    ]
    pieces.sort()
    file_end = regions[-1].end if regions else 0
    starts = [r.offset for r in regions]
    per_region = [0] * len(regions)
    covered = 0
    for offset, kind, index, end in pieces:
        begin = max(offset, covered)
        end = min(end, file_end)
        if end <= begin:
            continue
        sizes[kind][index] += end - begin
        covered = end
        where = max(bisect.bisect_right(starts, begin) - 1, 0)
        while begin < end:  # split across regions
            stop = min(end, regions[where].end)
            per_region[where] += stop - begin
            begin = stop
            where += 1
    return per_region, sizes


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
