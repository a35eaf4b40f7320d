"""The function table: every function of a library as columns, and ``FunctionEntry``, a view of one.

A library holds about 17,000 functions, and every command goes through all of them: ``list`` and
``report`` sum sizes, ``verify`` hashes modules, ``slim`` lays out and copies the pieces of the
ones it keeps. So the parsers return one list per field (a column) instead of one object per
function, and the writer consumes the same columns. ``FunctionEntry`` is a row of the table for
code that wants one function at a time; it holds no data of its own.

Offsets are absolute file offsets, sizes are in bytes. ``offt_rel`` and ``rflt_rel`` are where the
OFFT and RFLT payloads lie inside each entry (small numbers, which Python does not allocate), so a
rewrite can patch them; a function without a reflection piece has offset None and size 0.
"""

from __future__ import annotations

import operator
from collections.abc import Iterator, Sequence
from enum import IntEnum
from typing import Any, NamedTuple

from builder.metallib.native import native_module
from builder.metallib.structs import REFLECTION_HEAD, Span, walk_tags

__all__ = ["COLUMNS", "BadName", "FunctionEntry", "FunctionTable", "Piece", "coalesce"]


class Piece(IntEnum):
    """The five pieces a function owns, in file order: its function-list entry, then one piece in
    each of the sections that follow. The C code numbers them the same (``csrc/pieces.h``; a test
    compares the two)."""

    ENTRY = 0
    PUBLIC_MD = 1
    PRIVATE_MD = 2
    MODULE = 3
    REFLECTION = 4

    @property
    def column(self) -> str:
        """The stem of the piece's columns: ``module`` for ``module_offsets``, ``module_bytes``."""
        return self.name.lower()


_DIGEST = 32
_PACKED = frozenset(f"{piece.column}_offsets" for piece in Piece)
_ABSENT = (1 << 64) - 1


class BadName(NamedTuple):
    """A function name that is not valid UTF-8 or holds a NUL before its terminator: ``verify``
    reports it; every other user of the table refuses the library (``Metallib.columns``)."""

    function: int
    """The function's index in the list."""
    offset: int
    """Absolute offset of the name's first bad byte."""
    reason: str
    """What is wrong, after the word "name": ``is not valid UTF-8 (byte 0xff)``."""


class FunctionTable:
    """The checked function list as columns over the library's bytes (``data``).

    The columns are declared below in the order both parsers produce them (``COLUMNS``;
    ``csrc/function_list.c``, ``COL_*``). ``hashes`` is one bytes object: the 32-byte HASH
    payloads of all functions back to back. The pieces' columns come last, two per piece in
    ``Piece`` order (offsets, then sizes).
    """

    names: list[str]
    types: list[int | None]
    versions: list[tuple[int, int, int, int] | None]
    hashes: bytes
    offt_rel: list[int]
    rflt_rel: list[int | None]
    entry_offsets: list[int]
    entry_bytes: list[int]
    public_md_offsets: list[int]
    public_md_bytes: list[int]
    private_md_offsets: list[int]
    private_md_bytes: list[int]
    module_offsets: list[int]
    module_bytes: list[int]
    reflection_offsets: list[int | None]
    reflection_bytes: list[int]
    """Each reflection piece's size as stored: header, padding, FlatBuffer and ENDT."""

    def __init__(
        self, data: memoryview, columns: Sequence[Any], bad_names: Sequence[BadName] = ()
    ) -> None:
        """``columns`` in ``COLUMNS`` order; an offsets column may come packed (bytes of one
        native u64 per function, all ones for "no piece"), as the native parser sends it."""
        if len(columns) != len(COLUMNS):
            raise ValueError(f"a function table has {len(COLUMNS)} columns, got {len(columns)}")
        self._packed: dict[str, bytes] = {}
        for name, column in zip(COLUMNS, columns):
            if name in _PACKED and isinstance(column, bytes):
                self._packed[name] = column
            else:
                setattr(self, name, column)
        self.data = data
        self.bad_names: list[BadName] = list(bad_names)
        """Names that are not valid UTF-8 or hold a NUL (shown escaped in ``names``)."""
        self._runs: dict[Piece, list[tuple[int, int]]] = {}
        self._payloads: tuple[list[int | None], list[bool]] | None = None

    def __getattr__(self, name: str) -> Any:
        """An offsets column that came packed, unpacked into a list on first use: ``list`` and
        ``report`` read only names and sizes, and 17,000 ints fewer per column is a measurable
        share of their run time."""
        packed = self.__dict__.get("_packed")
        if packed is None or name not in packed:
            raise AttributeError(f"{type(self).__name__!r} object has no attribute {name!r}")
        values: list[Any] = memoryview(packed.pop(name)).cast("Q").tolist()
        if _ABSENT in values:
            values = [None if value == _ABSENT else value for value in values]
        setattr(self, name, values)
        return values

    def __len__(self) -> int:
        return len(self.names)

    def __getitem__(self, index: int) -> FunctionEntry:
        if not -len(self) <= index < len(self):
            raise IndexError(f"function index {index} out of range 0..{len(self) - 1}")
        return FunctionEntry(self, index % len(self))

    def __iter__(self) -> Iterator[FunctionEntry]:
        return map(FunctionEntry, [self] * len(self), range(len(self)))

    def as_tuple(self) -> tuple[Any, ...]:
        """Every column, in ``COLUMNS`` order (two parsers agree when these are equal)."""
        return tuple(getattr(self, name) for name in COLUMNS)

    def offsets(self, piece: Piece) -> list[int | None]:
        return getattr(self, f"{piece.column}_offsets")  # type: ignore[no-any-return]

    def sizes(self, piece: Piece) -> list[int]:
        return getattr(self, f"{piece.column}_bytes")  # type: ignore[no-any-return]

    def hash(self, index: int) -> bytes:
        """Function ``index``'s HASH tag: the SHA-256 of its module as stored."""
        return self.hashes[_DIGEST * index : _DIGEST * (index + 1)]

    def select(self, indices: Sequence[int]) -> FunctionTable:
        """The table of the functions at ``indices`` (ascending, distinct), over the same bytes."""
        if len(indices) == len(self):
            return self
        pick = operator.itemgetter(*indices) if len(indices) > 1 else None

        def take(column: list[Any]) -> list[Any]:
            return list(pick(column)) if pick is not None else [column[i] for i in indices]

        columns = [
            b"".join(map(self.hash, indices)) if name == "hashes" else take(getattr(self, name))
            for name in COLUMNS
        ]
        return FunctionTable(self.data, columns)

    # -- what a rewrite needs ---------------------------------------------------------------------
    def runs(self, piece: Piece) -> list[tuple[int, int]]:
        """The ``(start, length)`` runs of the source holding every piece of this kind, pieces
        back to back merged (one run when a whole section is kept); functions without a
        reflection piece have none."""
        if piece not in self._runs:
            offsets, sizes = self.offsets(piece), self.sizes(piece)
            if None in offsets:
                present = [(at, n) for at, n in zip(offsets, sizes) if at is not None]
                offsets, sizes = [at for at, _ in present], [n for _, n in present]
            self._runs[piece] = coalesce(offsets, sizes)  # type: ignore[arg-type]
        return self._runs[piece]

    def in_place(self, piece: Piece, start: int) -> bool:
        """Whether the pieces of this kind fill one run from ``start``: then an output that lays
        them out back to back from there keeps every offset."""
        runs = self.runs(piece)
        return len(runs) == 1 and runs[0][0] == start

    def reflection_payloads(self) -> tuple[list[int | None], list[bool]]:
        """Per function: its reflection FlatBuffer's size (the payload without the alignment
        padding; None without a piece), and whether the piece is canonical: its size field counts
        exactly header, padding, FlatBuffer and ENDT. A canonical piece whose padding stays the
        same is copied unchanged by a rewrite."""
        if self._payloads is None:
            native = native_module()
            compute = native.reflection_pieces if native is not None else _reflection_payloads
            self._payloads = compute(self.data, self.reflection_offsets, self.reflection_bytes)
        return self._payloads

    def flatbuffer(self, index: int) -> memoryview | None:
        """Function ``index``'s reflection FlatBuffer without padding (None without a piece)."""
        at, size = self.reflection_offsets[index], self.reflection_payloads()[0][index]
        if at is None or size is None:
            return None
        start = at + 12 + (-(at + 12) % 16)
        return self.data[start : start + size]


COLUMNS = tuple(FunctionTable.__annotations__)
"""The column names, in the order ``FunctionTable`` declares them (and both parsers give them)."""


def _reflection_payloads(
    data: memoryview, offsets: list[int | None], piece_sizes: list[int]
) -> tuple[list[int | None], list[bool]]:
    """``FunctionTable.reflection_payloads`` in Python (the C form: ``csrc/reflection.c``)."""
    head = REFLECTION_HEAD.unpack_from
    sizes: list[int | None] = []
    canonical: list[bool] = []
    for at, size in zip(offsets, piece_sizes):
        if at is None:
            sizes.append(None)
            canonical.append(True)  # nothing to rewrite
            continue
        declared, _, payload = head(data, at)
        pad = -(at + 12) % 16
        flatbuffer = max(0, min(payload, size - 16) - pad)
        sizes.append(flatbuffer)
        canonical.append(declared == 16 + pad + flatbuffer)
    return sizes, canonical


def coalesce(offsets: list[int], sizes: list[int]) -> list[tuple[int, int]]:
    """``(start, length)`` runs of the pieces at ``offsets``, merged where one piece ends where the
    next starts; empty pieces are skipped (the C form: ``csrc/runs.c``)."""
    native = native_module()
    if native is not None:
        return native.coalesce_runs(offsets, sizes)  # type: ignore[no-any-return]
    runs: list[tuple[int, int]] = []
    start = end = 0
    for offset, size in zip(offsets, sizes):
        if not size:
            continue
        if end > start and offset == end:
            end += size
            continue
        if end > start:
            runs.append((start, end - start))
        start, end = offset, offset + size
    if end > start:
        runs.append((start, end - start))
    return runs


class FunctionEntry:
    """One function: a view of row ``index`` of a ``FunctionTable`` (it copies nothing)."""

    __slots__ = ("index", "table")

    def __init__(self, table: FunctionTable, index: int) -> None:
        self.table = table
        self.index = index

    def __repr__(self) -> str:
        return f"FunctionEntry({self.index}, {self.name!r}, module={self.module})"

    @property
    def name(self) -> str:
        return self.table.names[self.index]

    @property
    def type(self) -> int | None:
        return self.table.types[self.index]

    @property
    def version(self) -> tuple[int, int, int, int] | None:
        """The VERS tag: AIR major, minor, Metal language major, minor (None without one)."""
        return self.table.versions[self.index]

    @property
    def hash(self) -> bytes:
        """The HASH tag: SHA-256 of the module bytes as stored."""
        return self.table.hash(self.index)

    def span(self, piece: Piece) -> Span | None:
        """Where one of the function's pieces lies (None: it has no reflection piece)."""
        at = self.table.offsets(piece)[self.index]
        return None if at is None else Span(at, self.table.sizes(piece)[self.index])

    def stored(self, piece: Piece) -> memoryview:
        """One of the function's pieces as stored (empty: it has no reflection piece)."""
        at = self.table.offsets(piece)[self.index] or 0
        return self.table.data[at : at + self.table.sizes(piece)[self.index]]

    def _span(self, piece: Piece) -> Span:
        """Where a piece every function has lies (all but the reflection piece)."""
        at: int = self.table.offsets(piece)[self.index]  # type: ignore[assignment]
        return Span(at, self.table.sizes(piece)[self.index])

    @property
    def entry(self) -> Span:
        return self._span(Piece.ENTRY)

    @property
    def public_md(self) -> Span:
        return self._span(Piece.PUBLIC_MD)

    @property
    def private_md(self) -> Span:
        return self._span(Piece.PRIVATE_MD)

    @property
    def module(self) -> Span:
        return self._span(Piece.MODULE)

    @property
    def reflection(self) -> Span | None:
        """The whole RBUF piece (None in files without a reflection list)."""
        return self.span(Piece.REFLECTION)

    @property
    def tags(self) -> tuple[tuple[bytes, int, int], ...]:
        """``(code, absolute payload offset, length)`` of every tag, in entry order (no ENDT)."""
        at, size = self.entry
        found, _ = walk_tags(self.table.data, at + 4, at + size, f"function {self.index}")
        return tuple(found)
