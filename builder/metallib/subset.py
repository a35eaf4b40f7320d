"""The functions of an existing library chosen for a rewrite (``slim``, an identity rewrite).

Nothing is copied: the parts are the library's own ``FunctionTable`` (or a selection of its
rows) over the memory map, so building them for 17,000 functions costs list arithmetic, and the
writer copies unchanged runs of the source in the kernel.
"""

from __future__ import annotations

from bisect import bisect_right
from collections.abc import Sequence

from builder.metallib.errors import MetallibUnsupportedError
from builder.metallib.parts import Bytes, LibraryParts
from builder.metallib.reader import Metallib
from builder.metallib.structs import OFFSET_TAGS, show_code
from builder.metallib.table import FunctionTable

__all__ = ["parts_from_library"]

_UNSUPPORTED_FUNCTION_TAGS = frozenset({b"SOFF"})


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
    table = lib.columns()
    count = len(table)
    chosen = range(count) if indices is None else sorted(set(indices))
    if len(chosen) and not 0 <= chosen[0] <= chosen[-1] < count:
        raise IndexError(f"function index out of range 0..{count - 1}")
    for index in _entries_containing(lib, table, b"SOFF", chosen):
        if any(code in _UNSUPPORTED_FUNCTION_TAGS for code, _, _ in table[index].tags):
            raise MetallibUnsupportedError(
                f"{lib.display_name}: function {table.names[index]!r} has an SOFF tag (embedded "
                "source); rewriting such libraries is not supported"
            )
    h = lib.header
    rlst = lib.reflection_list
    starts = (
        h.function_list.offset + 4,
        h.public_metadata.offset,
        h.private_metadata.offset,
        h.bitcode.offset,
        rlst.offset + 4 if rlst is not None else 0,
    )
    data = lib.data
    extension: list[tuple[bytes, Bytes]] = [
        (tag.code, data[tag.offset : tag.offset + tag.length]) for tag in lib.extension
    ]
    dynamic = None
    if lib.dynamic_header is not None:
        dynamic = data[lib.dynamic_header.offset : lib.dynamic_header.end]
    return LibraryParts(
        raw_version=h.raw_version,
        extension=extension,
        functions=table.select(chosen),
        starts=starts,
        dynamic_header=dynamic,
        uuid=lib.uuid if len(chosen) == count else None,
        source=lib.file_source(),
    )


def _entries_containing(
    lib: Metallib, table: FunctionTable, needle: bytes, chosen: Sequence[int]
) -> list[int]:
    """Indices of the ``chosen`` entries whose bytes contain ``needle`` (a cheap pre-filter: the
    bytes also occur by chance, e.g. a HASH ending in S before OFFT)."""
    start = lib.header.function_list.offset
    end = start + 4 + lib.header.function_list.size
    offsets = table.entry_offsets
    found: set[int] = set()
    at = lib.find(needle, start, end)
    while at >= 0:
        found.add(bisect_right(offsets, at) - 1)
        at = lib.find(needle, at + 1, end)
    wanted = chosen if isinstance(chosen, range) else set(chosen)
    return sorted(index for index in found if index in wanted)
