"""The function list: where it lies, and its parse into a checked ``FunctionTable``.

This is the hot path of every command (about 17,000 entries in mlx.metallib). The native parser
(``csrc/function_list.c``) walks the list and checks every span in one C pass when everything is
in the plain shape Apple's writer produces, and declines everything else. The pure-Python parser
here (``reference_table``) is the reference for what a valid list is, and for every error
message: it takes any list, entry by entry and tag by tag, and either returns the table or raises
``MetallibFormatError`` naming the byte offset of the first problem. It is written to be read,
not to be fast; it runs when the extension is not built, is turned off, or declines a list.
Nothing is copied: both read the list through the map, and modules, metadata and reflection stay
there too.

An entry is a u32 size, then tags (``walk_tags``) up to an ``ENDT`` that ends the entry exactly.
NAME (NUL-terminated), HASH (32 bytes) and OFFT (24 bytes: public, private and module offsets,
relative to their sections) are required; TYPE, VERS (8), MDSZ (8, the module's size) and RFLT
(8, the reflection piece's offset in the RLST list) are optional; other tags are kept as they
are. No tag may appear twice. Then the pieces are placed: metadata piece i runs from its offset to
function i+1's (the last to its section's end), module i is MDSZ bytes (older writers: up to the
next module), reflection piece i runs to the next function's RFLT (the last to the list's end).
"""

from __future__ import annotations

from typing import NamedTuple

from builder.errors import MetallibFormatError
from builder.metallib.native import native_module
from builder.metallib.structs import (
    MIN_ENTRY_SIZE,
    OFFT,
    U32,
    U64,
    VERS,
    Header,
    Span,
    read_u32,
    refuse_repeated_tags,
    walk_tags,
)
from builder.metallib.table import BadName, FunctionTable

__all__ = ["function_count", "native_table", "parse_function_list", "reference_table"]


_FIXED_LENGTHS = {b"HASH": 32, b"OFFT": 24, b"VERS": 8, b"MDSZ": 8, b"RFLT": 8}


class _Entry(NamedTuple):
    """What one function-list entry says."""

    name: str
    """Decoded with U+FFFD for bytes that are not UTF-8 (``bad_name`` says what is wrong)."""
    bad_name: BadName | None
    shown_name: str
    """The name with bad bytes escaped (``\\xff``, ``\\x00``), for ``verify`` to report."""
    type: int | None
    version: tuple[int, int, int, int] | None
    hash: bytes
    offset: int
    size: int
    offt_rel: int
    rflt_rel: int | None
    public: int
    private: int
    module: int
    """The OFFT values, relative to their sections."""
    module_size: int | None
    """MDSZ, if the entry has one."""
    reflection: int | None
    """RFLT, relative to the reflection list, if the entry has one."""


def reference_table(
    data: memoryview, header: Header, reflection_list: Span | None, count: int
) -> FunctionTable:
    """Parse and check the ``count`` entries of the function list and the pieces they point at.

    A name that is not valid UTF-8 or holds a NUL is collected in ``bad_names`` (``verify``
    reports it); every other inconsistency raises ``MetallibFormatError``.
    """
    start = header.function_list.offset
    end = start + 4 + header.function_list.size
    entries = []
    pos = start + 4
    for index in range(count):
        entry = _read_entry(data, pos, end, index)
        entries.append(entry)
        pos += entry.size
    if pos != end:
        raise MetallibFormatError(pos, f"function list entries end at {pos}, header says {end}")

    public = _piece_spans(
        entries, [e.public for e in entries], header.public_metadata, "public metadata"
    )
    private = _piece_spans(
        entries, [e.private for e in entries], header.private_metadata, "private metadata"
    )
    modules = _module_spans(entries, header.bitcode)
    reflection = _reflection_spans(entries, reflection_list)

    bad = [e.bad_name for e in entries if e.bad_name is not None]
    names = [e.shown_name if e.bad_name else e.name for e in entries]
    columns = [
        names,
        [e.type for e in entries],
        [e.version for e in entries],
        b"".join(e.hash for e in entries),
        [e.offt_rel for e in entries],
        [e.rflt_rel for e in entries],
        [e.offset for e in entries],
        [e.size for e in entries],
    ]
    for spans in (public, private, modules, reflection):
        columns += [[at for at, _ in spans], [size for _, size in spans]]
    return FunctionTable(data, columns, bad)


def _read_entry(data: memoryview, pos: int, end: int, index: int) -> _Entry:
    """Decode the entry at ``pos``; the list ends at ``end``."""
    if pos + 4 > end:
        raise MetallibFormatError(pos, f"function {index}: entry starts past the list end {end}")
    size = U32.unpack_from(data, pos)[0]
    if size < MIN_ENTRY_SIZE or pos + size > end:
        raise MetallibFormatError(
            pos, f"function {index}: entry size {size} does not fit the list (ends at {end})"
        )
    tags, stop = walk_tags(data, pos + 4, pos + size, f"function {index} entry")
    if stop != pos + size:
        raise MetallibFormatError(
            stop - 4, f"function {index}: ENDT at {stop - 4}, entry ends at {pos + size}"
        )
    refuse_repeated_tags(tags, f"function {index}", " in one entry")

    found: dict[bytes, tuple[int, int]] = {}
    for code, at, length in tags:
        want = _FIXED_LENGTHS.get(code)
        if want is not None and length != want:
            raise MetallibFormatError(
                at, f"function {index}: {code.decode()} is {length} bytes, not {want}"
            )
        if code == b"NAME" and (length == 0 or data[at + length - 1] != 0):
            raise MetallibFormatError(at, f"function {index}: NAME is not NUL-terminated")
        found[code] = (at, length)
    for required in (b"NAME", b"HASH", b"OFFT"):
        if required not in found:
            raise MetallibFormatError(
                pos, f"function {index}: entry has no {required.decode()} tag"
            )

    name_at, name_length = found[b"NAME"]
    raw_name = bytes(data[name_at : name_at + name_length - 1])
    problem = _name_problem(raw_name)
    hash_at = found[b"HASH"][0]
    offt_at = found[b"OFFT"][0]
    public, private, module = OFFT.unpack_from(data, offt_at)
    type_at, type_length = found.get(b"TYPE", (0, 0))
    rflt_at = found[b"RFLT"][0] if b"RFLT" in found else None
    return _Entry(
        name=raw_name.decode("utf-8", "replace"),
        bad_name=None if problem is None else BadName(index, name_at + problem[0], problem[1]),
        shown_name=raw_name.decode("utf-8", "backslashreplace").replace("\0", "\\x00"),
        type=data[type_at] if type_length else None,
        version=VERS.unpack_from(data, found[b"VERS"][0]) if b"VERS" in found else None,
        hash=bytes(data[hash_at : hash_at + 32]),
        offset=pos,
        size=size,
        offt_rel=offt_at - pos,
        rflt_rel=None if rflt_at is None else rflt_at - pos,
        public=public,
        private=private,
        module=module,
        module_size=U64.unpack_from(data, found[b"MDSZ"][0])[0] if b"MDSZ" in found else None,
        reflection=None if rflt_at is None else U64.unpack_from(data, rflt_at)[0],
    )


def _name_problem(raw: bytes) -> tuple[int, str] | None:
    """Where a name (without its terminator) stops being text, and why: its first byte that is
    not valid UTF-8, or a NUL, whichever comes first."""
    problem: tuple[int, str] | None = None
    try:
        raw.decode("utf-8")
    except UnicodeDecodeError as exc:
        problem = (exc.start, f"is not valid UTF-8 (byte 0x{raw[exc.start]:02x})")
    nul = raw.find(b"\0")
    if nul >= 0 and (problem is None or nul < problem[0]):
        seen_by_c = raw[:nul].decode("utf-8", "backslashreplace")
        problem = (nul, f"holds a NUL byte before its end (C code reads it as '{seen_by_c}')")
    return problem


def _piece_spans(
    entries: list[_Entry], starts: list[int], section: Span, what: str
) -> list[tuple[int, int]]:
    """Metadata piece i runs from its offset to function i+1's, the last to the section's end."""
    spans = []
    for index, start in enumerate(starts):
        stop = starts[index + 1] if index + 1 < len(starts) else section.size
        if start > stop or stop > section.size:
            raise MetallibFormatError(
                entries[index].offset,
                f"function {entries[index].name!r}: {what} piece {start}..{stop} is out of order "
                f"or past the section ({section.size} bytes)",
            )
        spans.append((section.offset + start, stop - start))
    return spans


def _module_spans(entries: list[_Entry], bitcode: Span) -> list[tuple[int, int]]:
    """Modules in order, inside the bitcode section, none overlapping the one before."""
    spans = []
    previous_end = 0
    for index, entry in enumerate(entries):
        offset, size = entry.module, entry.module_size
        if size is None:  # older writers: up to the next module's offset
            stop = entries[index + 1].module if index + 1 < len(entries) else bitcode.size
            size = stop - offset
        if offset > bitcode.size or size < 0 or size > bitcode.size - offset:
            raise MetallibFormatError(
                entry.offset,
                f"function {entry.name!r}: module {offset}+{size} runs past the bitcode section "
                f"({bitcode.size} bytes)",
            )
        if offset < previous_end:
            raise MetallibFormatError(
                entry.offset,
                f"function {entry.name!r}: module at {offset} overlaps the previous one "
                f"(ends at {previous_end})",
            )
        previous_end = offset + size
        spans.append((bitcode.offset + offset, size))
    return spans


def _reflection_spans(
    entries: list[_Entry], reflection_list: Span | None
) -> list[tuple[int | None, int]]:
    """Reflection piece i runs from its RFLT to the next function's that has one (the last to
    the list's end): the first after the list's u32 count, each at least 16 bytes. Functions
    without RFLT have none (offset None, size 0). Each piece's own size field is checked by
    ``verify``, so parsing never touches the reflection pages."""
    if reflection_list is None:
        for entry in entries:
            if entry.reflection is not None:
                raise MetallibFormatError(
                    entry.offset, f"function {entry.name!r} has an RFLT tag but there is no RLST"
                )
        return [(None, 0)] * len(entries)
    spans: list[tuple[int | None, int]] = [(None, 0)] * len(entries)
    present = [
        (index, entry.reflection)
        for index, entry in enumerate(entries)
        if entry.reflection is not None
    ]
    stops = [start for _, start in present[1:]] + [reflection_list.size]
    previous_end = 4
    for (index, start), stop in zip(present, stops):
        if start < previous_end or stop > reflection_list.size or stop - start < 16:
            raise MetallibFormatError(
                entries[index].offset,
                f"function {entries[index].name!r}: reflection piece {start}..{stop} "
                "overlaps another, is shorter than 16 bytes or lies outside the reflection list "
                f"({reflection_list.size} bytes)",
            )
        previous_end = stop
        spans[index] = (reflection_list.offset + start, stop - start)
    return spans


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
    return reference_table(data, header, reflection_list, count)
