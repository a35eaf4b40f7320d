"""The function list: where it lies, and its parse into a ``FunctionTable``.

This is the hot path of every command (about 17,000 entries in mlx.metallib). The native parser
(``csrc/function_list.c``) walks the list and checks every span in one C pass when everything is
in the plain shape Apple's writer produces; otherwise, or without the extension, the reference
parser (``reference.py``) does the same in Python and names any error's byte offset. Nothing is
copied: both read the list through the map, and modules, metadata and reflection stay there too.
"""

from __future__ import annotations

from builder.errors import MetallibFormatError
from builder.metallib.native import native_module
from builder.metallib.structs import MIN_ENTRY_SIZE, Header, Span, read_u32
from builder.metallib.table import FunctionTable

__all__ = ["function_count", "native_table", "parse_function_list"]


def function_count(data: memoryview, header: Header, reflection_list: Span | None) -> int:
    """The function list's count, after the checks that keep a corrupt count (or reflection
    count) from sizing anything: each entry needs 8 bytes, each reflection piece 16."""
    start = header.function_list.offset
    count = read_u32(data, start, "function count")
    if count * MIN_ENTRY_SIZE > header.function_list.size:
        raise MetallibFormatError(
            start,
            f"function count {count} needs at least {count * MIN_ENTRY_SIZE} bytes, "
            f"the function list has {header.function_list.size}",
        )
    if reflection_list is not None:
        declared = read_u32(data, reflection_list.offset, "reflection list count")
        if declared * 16 > reflection_list.size:
            raise MetallibFormatError(
                reflection_list.offset,
                f"reflection count {declared} does not fit the {reflection_list.size}-byte list",
            )
    return count


def native_table(
    data: memoryview, header: Header, reflection_list: Span | None, count: int
) -> FunctionTable | None:
    """The native parser's table; None without the extension or when it declines the list."""
    native = native_module()
    if native is None:
        return None
    start = header.function_list.offset
    found = native.parse_function_list(
        data[start : start + 4 + header.function_list.size],
        start,
        count,
        header.public_metadata,
        header.private_metadata,
        header.bitcode,
        reflection_list,
    )
    return None if found is None else FunctionTable(data, found)


def parse_function_list(
    data: memoryview, header: Header, reflection_list: Span | None
) -> FunctionTable:
    """Parse and check every entry of the function list and the spans it points at.

    Bad names are collected in ``bad_names``, not raised (the native parser declines any list
    with one); every other inconsistency raises ``MetallibFormatError``.
    """
    count = function_count(data, header, reflection_list)
    table = native_table(data, header, reflection_list, count)
    if table is not None:
        return table
    from builder.metallib.reference import reference_table  # imported only when it is needed

    return reference_table(data, header, reflection_list, count)
