"""The function list as checked columns, and ``FunctionEntry`` records built from them.

This is the hot path of ``list``, ``report``, ``verify`` and ``slim`` (about 15,000 entries in
mlx.metallib). The native parser (``_native.c``, through ``builder.metallib.native``) walks the
list and checks every span in one C pass when everything is in the plain shape; otherwise, or
without the extension, ``list_walk`` does the same in Python and names any error's byte offset.
Nothing is copied: the parsers read the list through the map, and modules, metadata and
reflection stay there too (a 3 MB copy costs about 750 page faults, which are dear on a VM).
"""

from __future__ import annotations

from functools import cached_property
from typing import TYPE_CHECKING, NamedTuple

from builder.metallib.errors import MetallibFormatError
from builder.metallib.model import FunctionEntry
from builder.metallib.native import native_module
from builder.metallib.structs import MIN_ENTRY_SIZE, read_u32

if TYPE_CHECKING:
    from builder.metallib.reader import Metallib

__all__ = ["BadName", "FunctionColumns", "FunctionTable", "TableColumns", "native_columns", "parse_function_list"]


class TableColumns(NamedTuple):
    """The checked function list as parallel lists.

    This is what the native parser returns, in this order, and what the Python parser builds.
    Offsets are absolute except the ``*_rel`` ones, which are payload offsets within the entry
    (small numbers, which Python does not allocate: 16,000 fewer objects per column). A function
    without a reflection chunk has offset None and size 0.
    """

    names: list[str]
    types: list[int | None]
    entry_offsets: list[int]
    entry_sizes: list[int]
    hash_rel: list[int]
    versions: list[tuple[int, int, int, int] | None]
    offt_rel: list[int]
    """Where each entry's OFFT payload lies in the entry (the writer patches it)."""
    rflt_rel: list[int | None]
    public_offsets: list[int]
    public_sizes: list[int]
    private_offsets: list[int]
    private_sizes: list[int]
    module_offsets: list[int]
    module_sizes: list[int]
    reflection_offsets: list[int | None]
    reflection_sizes: list[int]


def list_buffer(lib: Metallib) -> tuple[memoryview, int, int]:
    """The function list (from its count on) as a view of the map, not a copy; its file offset and
    the function count, after the checks that keep a corrupt count from sizing anything."""
    h = lib.header
    start = h.function_list.offset
    end = start + 4 + h.function_list.size
    count = read_u32(lib.data, start, "function count")
    if count * MIN_ENTRY_SIZE > h.function_list.size:
        raise MetallibFormatError(
            start,
            f"function count {count} needs at least {count * MIN_ENTRY_SIZE} bytes, "
            f"the function list has {h.function_list.size}",
        )
    rlst = lib.reflection_list
    if rlst is not None:
        declared = read_u32(lib.data, rlst.offset, "reflection list count")
        if declared * 16 > rlst.size:
            raise MetallibFormatError(
                rlst.offset, f"reflection count {declared} does not fit the {rlst.size}-byte list"
            )
    return lib.data[start:end], start, count


def native_columns(lib: Metallib, listed: tuple[memoryview, int, int] | None = None) -> TableColumns | None:
    """The native parser's columns; None without the extension or when it declines the list."""
    native = native_module()
    if native is None:
        return None
    buf, start, count = listed if listed is not None else list_buffer(lib)
    h = lib.header
    found = native.parse_function_list(
        buf, start, count, h.public_metadata, h.private_metadata, h.bitcode, lib.reflection_list
    )
    return TableColumns(*found) if found is not None else None


class BadName(NamedTuple):
    """A function name that is not valid UTF-8 or holds a NUL before its terminator: ``verify``
    reports it; the other users of the table refuse the library (``Metallib._table``)."""

    function: int
    """The function's index in the list."""
    offset: int
    """Absolute offset of the name's first bad byte."""
    reason: str
    """What is wrong, after the word "name": ``is not valid UTF-8 (byte 0xff)``."""


def parse_function_list(lib: Metallib) -> FunctionTable:
    """Parse and check every entry of ``lib``'s function list and the spans it points at.

    Bad names are collected, not raised (see ``BadName``); every other inconsistency raises
    ``MetallibFormatError``. The native parser declines any list with a bad name.
    """
    listed = list_buffer(lib)
    columns = native_columns(lib, listed)
    bad: list[BadName] = []
    if columns is None:
        from builder.metallib.list_walk import bad_names, python_columns  # the fallback

        columns = python_columns(lib, *listed)
        bad = bad_names(listed[0], listed[1], columns)
    return FunctionTable(columns, listed[:2], bad)


class FunctionColumns(NamedTuple):
    """Per-function names and piece sizes as parallel lists: what a size report sums."""

    names: list[str]
    types: list[int | None]
    entry_bytes: list[int]
    public_md_bytes: list[int]
    private_md_bytes: list[int]
    module_bytes: list[int]
    reflection_bytes: list[int]
    module_offsets: list[int]
    versions: list[tuple[int, int, int, int] | None]


class FunctionTable:
    """The checked parse of a function list; ``FunctionEntry`` objects are built on demand."""

    def __init__(
        self, columns: TableColumns, function_list: tuple[memoryview, int], bad_names: list[BadName] | None = None
    ) -> None:
        self.cols = columns
        self.function_list = function_list
        self.bad_names: list[BadName] = bad_names or []
        """Names that are not valid UTF-8 or hold a NUL, with the offset of the first bad byte."""

    def functions(self) -> list[FunctionEntry]:
        make = FunctionEntry
        c = self.cols
        function_list = self.function_list
        return [
            make(index, name, type_, (at, size), function_list, at + hash_rel, (pub, pub_n),
                 (priv, priv_n), (mod, mod_n), (refl, refl_n), version,
                 (at + offt_rel, None if rflt_rel is None else at + rflt_rel))
            for index, (name, type_, at, size, hash_rel, version, offt_rel, rflt_rel, pub, pub_n,
                        priv, priv_n, mod, mod_n, refl, refl_n) in enumerate(zip(*c))
        ]  # fmt: skip

    def function(self, index: int) -> FunctionEntry:
        """One function's record (``functions()`` builds them all)."""
        c = self.cols
        at, rflt_rel = c.entry_offsets[index], c.rflt_rel[index]
        return FunctionEntry(
            index, c.names[index], c.types[index], (at, c.entry_sizes[index]),
            self.function_list, at + c.hash_rel[index],
            (c.public_offsets[index], c.public_sizes[index]),
            (c.private_offsets[index], c.private_sizes[index]),
            (c.module_offsets[index], c.module_sizes[index]),
            (c.reflection_offsets[index], c.reflection_sizes[index]),
            c.versions[index], (at + c.offt_rel[index], None if rflt_rel is None else at + rflt_rel),
        )  # fmt: skip

    @cached_property
    def columns(self) -> FunctionColumns:
        c = self.cols
        return FunctionColumns(
            names=c.names,
            types=c.types,
            entry_bytes=c.entry_sizes,
            public_md_bytes=c.public_sizes,
            private_md_bytes=c.private_sizes,
            module_bytes=c.module_sizes,
            reflection_bytes=c.reflection_sizes,
            module_offsets=c.module_offsets,
            versions=c.versions,
        )


