"""Functions of an existing library, by reference: what ``parts_from_library`` hands the writer.

Nothing is copied: every piece is an offset and a size in the source file, so building the parts
of a 16,000-function library costs list arithmetic, and the writer copies unchanged runs of the
source in the kernel. ``SourceFunctions`` holds them as columns; indexing it gives a
``SourceFunction``, the same function as one object.
"""

from __future__ import annotations

import operator
from bisect import bisect_right
from collections.abc import Callable, Sequence
from typing import Any, overload

from builder.metallib.errors import MetallibUnsupportedError
from builder.metallib.function_list import FunctionTable
from builder.metallib.native import native_module
from builder.metallib.parts import Bytes, LibraryParts
from builder.metallib.reader import Metallib
from builder.metallib.structs import OFFSET_TAGS, REFLECTION_HEAD, show_code, walk_tags

__all__ = ["SourceFunction", "SourceFunctions", "coalesce", "parts_from_library"]

_UNSUPPORTED_FUNCTION_TAGS = frozenset({b"SOFF"})


class SourceFunction:
    """A function of an existing library, by reference: offsets and sizes in the source file.

    This is what ``parts_from_library`` hands the writer. Its data is sliced from the source only
    when asked for; the writer mostly copies source runs by offset, so building the parts of a
    16,000-function library costs a few object creations per function and no data access.
    """

    __slots__ = (
        "_data", "entry", "entry_patch", "module_size", "name", "origin", "private_md_size",
        "public_md_size", "reflection_size",
    )  # fmt: skip

    def __init__(
        self, data: memoryview, name: str, entry: bytes, entry_patch: tuple[int, int | None],
        origin: tuple[int, int, int, int | None], sizes: tuple[int, int, int, int | None],
    ) -> None:  # fmt: skip
        self._data = data
        self.name = name
        self.entry: Bytes | None = entry
        self.entry_patch = entry_patch
        self.origin: tuple[int, int, int, int | None] | None = origin
        self.public_md_size, self.private_md_size, self.module_size, self.reflection_size = sizes

    @property
    def tags(self) -> list[tuple[bytes, Bytes]]:
        """The entry's tags (decoded from the stored entry; the writer copies the entry instead)."""
        assert self.entry is not None
        found, _ = walk_tags(bytes(self.entry), 4, len(self.entry), f"function {self.name!r}")
        return [(code, self.entry[at : at + n]) for code, at, n in found]

    def _slice(self, which: int, size: int) -> memoryview:
        assert self.origin is not None
        start = self.origin[which]
        assert start is not None
        return self._data[start : start + size]

    @property
    def public_md(self) -> memoryview:
        return self._slice(0, self.public_md_size)

    @property
    def private_md(self) -> memoryview:
        return self._slice(1, self.private_md_size)

    @property
    def module(self) -> memoryview:
        return self._slice(2, self.module_size)

    @property
    def reflection(self) -> memoryview | None:
        """The FlatBuffer without its padding, as in ``FunctionParts``."""
        if self.reflection_size is None or self.origin is None or self.origin[3] is None:
            return None
        payload = self.origin[3] + 12
        start = payload + (-payload % 16)
        return self._data[start : start + self.reflection_size]


class SourceFunctions(Sequence[SourceFunction]):
    """Functions of an existing library chosen for a rewrite, as columns (what ``parts_from_library``
    returns): offsets and sizes in the source for every piece, so that the writer lays out and
    copies 16,000 functions with list arithmetic instead of an object each. Indexing gives a
    ``SourceFunction``.
    """

    def __init__(
        self, data: memoryview, names: list[str], entries: tuple[list[int], list[int]],
        patches: tuple[list[int], list[int | None]],
        origins: tuple[list[int], list[int], list[int], list[int | None]],
        sizes: tuple[list[int], list[int], list[int], list[int | None]],
        reflection: tuple[list[int], list[bool]], sections: tuple[int, int, int, int],
    ) -> None:  # fmt: skip
        self.data = data
        self.names = names
        self.entry_offsets, self.entry_sizes = entries
        self.offt_rel, self.rflt_rel = patches
        """Where the OFFT and RFLT payloads lie in each entry (the writer patches them)."""
        self.public_offsets, self.private_offsets, self.module_offsets, self.reflection_offsets = origins
        self.public_sizes, self.private_sizes, self.module_sizes, self.reflection_sizes = sizes
        """``reflection_sizes``: FlatBuffer sizes without padding, None without a chunk."""
        self.sections = sections
        """Source offsets of the public and private metadata, the bitcode section and the
        reflection list (0 without one)."""
        self._runs: dict[int, list[tuple[int, int]]] = {}
        self.chunk_sizes, self.canonical = reflection
        """Each reflection chunk's size in the source, and whether it is canonical
        (``_flatbuffer_sizes``), so it can be copied as is when its padding stays."""

    def __len__(self) -> int:
        return len(self.names)

    def runs(self, which: int) -> list[tuple[int, int]]:
        """The source runs (start, length) holding every public metadata chunk (0), private one
        (1), module (2), reflection chunk (3) or entry (4), pieces back to back merged."""
        if which not in self._runs:
            offsets, sizes = (
                (self.public_offsets, self.public_sizes), (self.private_offsets, self.private_sizes),
                (self.module_offsets, self.module_sizes), (self.reflection_offsets, self.chunk_sizes),
                (self.entry_offsets, self.entry_sizes),
            )[which]  # fmt: skip
            if which == 3 and None in offsets:
                present = [(at, n) for at, n in zip(offsets, sizes) if at is not None]
                offsets, sizes = [at for at, _ in present], [n for _, n in present]
            self._runs[which] = coalesce(offsets, sizes)  # type: ignore[arg-type]
        return self._runs[which]

    def in_place(self, which: int, start: int) -> bool:
        """Whether the pieces of kind ``which`` (see ``runs``) fill one run from ``start``: then a
        library that lays them out back to back from there keeps every offset."""
        runs = self.runs(which)
        return len(runs) == 1 and runs[0][0] == start

    def flatbuffer(self, index: int) -> memoryview:
        """Function ``index``'s reflection FlatBuffer, without padding (it must have one)."""
        at, size = self.reflection_offsets[index], self.reflection_sizes[index]
        assert at is not None and size is not None
        start = at + 12 + (-(at + 12) % 16)
        return self.data[start : start + size]

    @overload
    def __getitem__(self, index: int) -> SourceFunction: ...
    @overload
    def __getitem__(self, index: slice) -> list[SourceFunction]: ...
    def __getitem__(self, index: int | slice) -> SourceFunction | list[SourceFunction]:
        if isinstance(index, slice):
            return [self[i] for i in range(*index.indices(len(self)))]
        at, size = self.entry_offsets[index], self.entry_sizes[index]
        return SourceFunction(
            self.data, self.names[index], bytes(self.data[at : at + size]),
            (self.offt_rel[index], self.rflt_rel[index]),
            (self.public_offsets[index], self.private_offsets[index], self.module_offsets[index],
             self.reflection_offsets[index]),
            (self.public_sizes[index], self.private_sizes[index], self.module_sizes[index],
             self.reflection_sizes[index]),
        )  # fmt: skip


def parts_from_library(lib: Metallib, indices: Sequence[int] | None = None) -> LibraryParts:
    """The parts of ``lib`` for the functions at ``indices`` (all when None), in file order.

    Keeping every function keeps the input's UUID, so the rewrite is byte-identical; a proper
    subset gets ``uuid=None`` and the writer derives a new one from the output's content.
    """
    unsupported = [tag.code for tag in lib.extension if tag.code in OFFSET_TAGS]
    if unsupported:
        names = ", ".join(show_code(code) for code in unsupported)
        raise MetallibUnsupportedError(
            f"{lib.display_name}: cannot rewrite a library with {names} sections "
            "(embedded sources or symbol lists are not supported)"
        )
    table = lib._table
    c = table.cols
    count = len(c.names)
    chosen = range(count) if indices is None else sorted(set(indices))
    if len(chosen) and not 0 <= chosen[0] <= chosen[-1] < count:
        raise IndexError(f"function index out of range 0..{count - 1}")
    for index in _entries_containing(lib, table, b"SOFF", chosen):
        if any(code in _UNSUPPORTED_FUNCTION_TAGS for code, _, _ in table.function(index).tags):
            raise MetallibUnsupportedError(
                f"{lib.display_name}: function {c.names[index]!r} has an SOFF tag (embedded "
                "source); rewriting such libraries is not supported"
            )
    h = lib.header
    rlst = lib.reflection_list.offset if lib.reflection_list is not None else 0
    pick = _picker(chosen, count)
    entry_offsets = pick(c.entry_offsets)
    reflection = pick(c.reflection_offsets)
    chunk_sizes = pick(c.reflection_sizes)
    flatbuffers, canonical = _flatbuffer_sizes(lib.data, reflection, chunk_sizes)
    functions = SourceFunctions(
        lib.data, pick(c.names), (entry_offsets, pick(c.entry_sizes)),
        (pick(c.offt_rel), pick(c.rflt_rel)),
        (pick(c.public_offsets), pick(c.private_offsets), pick(c.module_offsets), reflection),
        (pick(c.public_sizes), pick(c.private_sizes), pick(c.module_sizes), flatbuffers),
        (chunk_sizes, canonical),
        (h.public_metadata.offset, h.private_metadata.offset, h.bitcode.offset, rlst),
    )  # fmt: skip
    data = lib.data
    extension: list[tuple[bytes, Bytes]] = [
        (tag.code, data[tag.offset : tag.offset + tag.length]) for tag in lib.extension
    ]
    dynamic = None
    if lib.dynamic_header is not None:
        dynamic = data[lib.dynamic_header.offset : lib.dynamic_header.end]
    keep_uuid = len(chosen) == count
    return LibraryParts(
        raw_version=h.raw_version,
        extension=extension,
        functions=functions,
        dynamic_header=dynamic,
        uuid=lib.uuid if keep_uuid else None,
        source=(data, lib.fileno()),
    )


def _entries_containing(lib: Metallib, table: FunctionTable, needle: bytes, chosen: Sequence[int]) -> list[int]:
    """Indices of the ``chosen`` entries whose bytes contain ``needle`` (a cheap pre-filter: the
    bytes also occur by chance, e.g. a HASH ending in S before OFFT)."""
    buf, base = table.function_list
    offsets = table.cols.entry_offsets
    found: set[int] = set()
    at = lib.find(needle, base, base + len(buf))
    while at >= 0:
        found.add(bisect_right(offsets, at) - 1)
        at = lib.find(needle, at + 1, base + len(buf))
    wanted = chosen if isinstance(chosen, range) else set(chosen)
    return sorted(index for index in found if index in wanted)


def coalesce(offsets: list[int], sizes: list[int]) -> list[tuple[int, int]]:
    """``(start, length)`` runs of the pieces at ``offsets``, merged where one piece ends where the
    next starts (all of them when a whole section is kept); empty pieces are skipped."""
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


def _picker(chosen: Sequence[int], count: int) -> Callable[[list[Any]], list[Any]]:
    """A function taking the ``chosen`` items of a column (the column itself when all are)."""
    if len(chosen) == count:
        return lambda column: column
    if len(chosen) == 1:
        only = chosen[0]
        return lambda column: [column[only]]
    getter = operator.itemgetter(*chosen)
    return lambda column: list(getter(column))




def _flatbuffer_sizes(
    data: memoryview, offsets: list[int | None], chunk_sizes: list[int]
) -> tuple[list[int | None], list[bool]]:
    """Each reflection chunk's FlatBuffer size (its payload minus the alignment padding) and
    whether the chunk is canonical: its size field counts exactly header, padding, FlatBuffer
    and ENDT. A canonical chunk whose padding stays the same is copied unchanged."""
    native = native_module()
    if native is not None:
        return native.reflection_chunks(data, offsets, chunk_sizes)  # type: ignore[no-any-return]
    head = REFLECTION_HEAD.unpack_from
    sizes: list[int | None] = []
    canonical: list[bool] = []
    for at, size in zip(offsets, chunk_sizes):
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


