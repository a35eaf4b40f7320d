"""The pure-Python parser of the function list: the reference for every error message.

It does what the native parser (``_native.c``) does and more: where the native parser only
accepts the plain shape, this walk takes every valid list and, for an invalid one, raises
``MetallibFormatError`` naming the byte offset. Apple's writer gives every entry the same tag
sequence, differing only in the NAME length, so the walk learns that shape from the first entry
and decodes each entry with one ``struct`` call, checking that codes and lengths match; any entry
that differs takes the general tag walk.
"""

from __future__ import annotations

import operator
import struct
from itertools import repeat
from typing import TYPE_CHECKING, Any, NamedTuple

from builder.metallib.errors import MetallibFormatError
from builder.metallib.structs import MIN_ENTRY_SIZE, U32, Span, show_code, tag_start, walk_tags

if TYPE_CHECKING:
    from builder.metallib.function_list import BadName, TableColumns
    from builder.metallib.reader import Metallib

__all__ = ["bad_names", "python_columns"]

_NAME_HEAD = struct.Struct("<4sH")
# Fixed-width tags: code -> (payload length, struct format of the payload, values it yields).
_TYPED = {
    b"TYPE": (1, "B", 1),
    b"HASH": (32, "32s", 1),
    b"OFFT": (24, "QQQ", 3),
    b"VERS": (8, "HHHH", 4),
    b"MDSZ": (8, "Q", 1),
    b"RFLT": (8, "Q", 1),
}
_MISSING = (None,)
_FIXED_LENGTHS = {code: spec[0] for code, spec in _TYPED.items() if code != b"TYPE"}


# Decoded values of one entry, as a tuple in ``EntryColumns`` order (cheaper than an object for
# 15,000 entries); the Python parser's rows are transposed into columns at the end.
_Fields = tuple[Any, ...]


def _decode_tags(
    tags: list[tuple[bytes, int, int]], buf: bytes, base: int, entry_at: int, size: int, index: int
) -> _Fields:
    """General path: fields from an already walked tag list (offsets relative to ``buf``)."""
    type_: int | None = None
    mdsz = rflt = version = offt_at = rflt_at = hash_at = offsets = None
    name: str | None = None
    _refuse_repeated_tags(tags, base, index)
    for code, at, length in tags:
        want = _FIXED_LENGTHS.get(code)
        if want is not None and length != want:
            raise MetallibFormatError(base + at, f"function {index}: {code.decode()} is {length} bytes, not {want}")
        if code == b"NAME":
            if length == 0 or buf[at + length - 1] != 0:
                raise MetallibFormatError(base + at, f"function {index}: NAME is not NUL-terminated")
            name = buf[at : at + length - 1].decode("utf-8", "replace")
        elif code == b"HASH":
            hash_at = at - entry_at
        elif code == b"OFFT":
            offsets = struct.unpack_from("<QQQ", buf, at)
            offt_at = at - entry_at
        elif code == b"MDSZ":
            mdsz = struct.unpack_from("<Q", buf, at)[0]
        elif code == b"RFLT":
            rflt = struct.unpack_from("<Q", buf, at)[0]
            rflt_at = at - entry_at
        elif code == b"TYPE" and length >= 1:
            type_ = buf[at]
        elif code == b"VERS" and length == 8:
            version = struct.unpack_from("<HHHH", buf, at)
    for value, label in ((name, "NAME"), (hash_at, "HASH"), (offsets, "OFFT")):
        if value is None:
            raise MetallibFormatError(base + entry_at, f"function {index}: entry has no {label} tag")
    return (  # type: ignore[misc]
        name, type_, base + entry_at, size, hash_at, *offsets, mdsz, rflt, version, offt_at, rflt_at,
    )  # fmt: skip


def _refuse_repeated_tags(tags: list[tuple[bytes, int, int]], base: int, index: int) -> None:
    """An entry holds each tag at most once: with two RFLT (say) a reader and a writer could each
    take a different one, so the entry is ambiguous and refused at the second tag's offset."""
    if len(tags) < 2 or len({code for code, _, _ in tags}) == len(tags):
        return
    first: dict[bytes, int] = {}
    for code, at, _ in tags:
        start = tag_start(code, at)
        if code in first:
            raise MetallibFormatError(
                base + start,
                f"function {index}: second {show_code(code)} tag in one entry (the first is at {base + first[code]})",
            )
        first[code] = start


class _Shape:
    """The tag sequence after NAME shared by most entries, decoded with one struct call."""

    def __init__(self, tail: list[tuple[bytes, int]]) -> None:
        fmt = ["<"]
        expect: list[Any] = []
        check: list[int] = []
        where: dict[bytes, int] = {}
        slot = 0
        for code, length in tail:
            fmt.append("4sH")
            check += [slot, slot + 1]
            expect += [code, length]
            slot += 2
            where[code] = slot
            _, payload_format, values = _TYPED[code]
            fmt.append(payload_format)
            slot += values
        fmt.append("4s")
        check.append(slot)
        expect.append(b"ENDT")
        self.struct = struct.Struct("".join(fmt))
        self.size = self.struct.size
        self.check = operator.itemgetter(*check)
        self.expect = tuple(expect)
        self.hash_rel = self._payload_offset(tail, b"HASH")
        self.offt_rel = self._payload_offset(tail, b"OFFT")
        self.rflt_rel = self._payload_offset(tail, b"RFLT") if b"RFLT" in where else None
        self.where = where
        # ``values`` get one None appended (``_MISSING``): absent optional tags pick it.
        missing = slot + 1
        offt = where[b"OFFT"]
        self.pick = operator.itemgetter(
            where.get(b"TYPE", missing), offt, offt + 1, offt + 2,
            where.get(b"MDSZ", missing), where.get(b"RFLT", missing),
        )  # fmt: skip

    @staticmethod
    def _payload_offset(tail: list[tuple[bytes, int]], code: bytes) -> int:
        at = 0
        for tag, length in tail:
            if tag == code:
                return at + 6
            at += 6 + length
        raise KeyError(code)

    @classmethod
    def learn(cls, tags: list[tuple[bytes, int, int]]) -> _Shape | None:
        """A shape for entries whose first tag is NAME and whose other tags all have fixed widths."""
        if not tags or tags[0][0] != b"NAME":
            return None
        tail = [(code, length) for code, _, length in tags[1:]]
        codes = [code for code, _ in tail]
        if len(set(codes)) != len(codes) or any(
            code not in _TYPED or _TYPED[code][0] != length for code, length in tail
        ):
            return None
        if not {b"HASH", b"OFFT"} <= set(codes):
            return None
        return cls(tail)


class EntryColumns(NamedTuple):
    """The decoded fields of every entry as parallel lists (the Python parser's intermediate).

    ``public``, ``private`` and ``module`` are the OFFT values (relative to their sections),
    ``reflection`` the RFLT value (relative to the RLST list); other offsets are absolute.
    """

    names: list[str]
    types: list[int | None]
    entry_offsets: list[int]
    entry_sizes: list[int]
    hash_rel: list[int]
    public: list[int]
    private: list[int]
    module: list[int]
    module_sizes: list[int | None]
    reflection: list[int | None]
    versions: list[tuple[int, int, int, int] | None]
    offt_rel: list[int]
    rflt_rel: list[int | None]


def python_columns(lib: Metallib, buf: bytes | memoryview, start: int, count: int) -> TableColumns:
    """The checked columns of the function list in ``buf`` (its bytes from the count on, at file
    offset ``start``)."""
    from builder.metallib.function_list import TableColumns

    h = lib.header
    c = _parse_entries(bytes(buf), start, count)  # slicing bytes is what this walk does most
    spans: list[list[Any]] = [
        _chunk_spans(c, c.public, h.public_metadata, "public metadata"),
        _chunk_spans(c, c.private, h.private_metadata, "private metadata"),
        _module_spans(c, h.bitcode),
        _reflection_spans(lib, c),
    ]
    flat: list[list[Any]] = []
    for pairs in spans:
        flat += [list(column) for column in zip(*pairs)] if pairs else [[], []]
    return TableColumns(
        c.names, c.types, c.entry_offsets, c.entry_sizes, c.hash_rel, c.versions,
        c.offt_rel, c.rflt_rel, *flat,
    )  # fmt: skip


def _parse_entries(buf: bytes, start: int, count: int) -> EntryColumns:
    """The pure-Python parser: learned-shape fast path, general tag walk for other entries."""
    end = start + len(buf)
    limit = len(buf)
    rows: list[_Fields] = []
    shape: _Shape | None = None
    vers: int | None = None
    # the learned shape's parts, bound once shape is set
    tail_unpack: Any = None
    check: Any = None
    pick: Any = None
    expect: tuple[Any, ...] = ()
    tail_size = hash_rel = offt_rel = 0
    rflt_rel: int | None = None
    unpack_u32 = U32.unpack_from
    unpack_name = _NAME_HEAD.unpack_from
    pos = 4
    for index in range(count):
        if pos + 4 > limit:
            raise MetallibFormatError(start + pos, f"function {index}: entry starts past the list end {end}")
        size = unpack_u32(buf, pos)[0]
        if size < MIN_ENTRY_SIZE or pos + size > limit:
            raise MetallibFormatError(
                start + pos, f"function {index}: entry size {size} does not fit the list (ends at {end})"
            )
        decoded = None
        if shape is not None and size >= 10:
            code, name_len = unpack_name(buf, pos + 4)
            tail_at = pos + 10 + name_len
            if code == b"NAME" and tail_at + tail_size == pos + size and name_len and buf[tail_at - 1] == 0:
                values = tail_unpack(buf, tail_at) + _MISSING
                if check(values) == expect:
                    type_, pub, priv, mod, mdsz, rflt = pick(values)
                    tail = tail_at - pos  # where the tags after NAME start in the entry
                    decoded = (
                        buf[pos + 10 : tail_at - 1].decode("utf-8", "replace"), type_, start + pos,
                        size, tail + hash_rel, pub, priv, mod, mdsz, rflt,
                        values[vers : vers + 4] if vers is not None else None,
                        tail + offt_rel, tail + rflt_rel if rflt_rel is not None else None,
                    )  # fmt: skip
        if decoded is None:
            tags, stop = walk_tags(buf, pos + 4, pos + size, f"function {index} entry", start)
            if stop != pos + size:
                raise MetallibFormatError(
                    start + stop - 4, f"function {index}: ENDT at {start + stop - 4}, entry ends at {start + pos + size}"
                )
            decoded = _decode_tags(tags, buf, start, pos, size, index)
            if shape is None:
                shape = _Shape.learn(tags)
                if shape is not None:  # hoisted for the loop
                    vers = shape.where.get(b"VERS")
                    tail_unpack, tail_size = shape.struct.unpack_from, shape.size
                    check, expect, pick = shape.check, shape.expect, shape.pick
                    hash_rel, offt_rel, rflt_rel = shape.hash_rel, shape.offt_rel, shape.rflt_rel
        rows.append(decoded)
        pos += size
    if pos != limit:
        raise MetallibFormatError(start + pos, f"function list entries end at {start + pos}, header says {end}")
    if not rows:
        return EntryColumns(*([] for _ in EntryColumns._fields))
    return EntryColumns(*map(list, zip(*rows)))


def bad_names(buf: bytes | memoryview, start: int, columns: TableColumns) -> list[BadName]:
    """The entries whose NAME is not valid UTF-8 or holds a NUL before its terminator.

    The walk decodes names with replacement (fast), so only a name showing U+FFFD or NUL is looked
    at again, in its raw bytes. Each bad name is replaced in ``columns.names`` by an escaped form
    (``\\xff``, ``\\x00``) that tells different byte strings apart; the offset is its first bad byte.
    """
    from builder.metallib.function_list import BadName

    names = columns.names
    joined = "".join(names)
    if "\ufffd" not in joined and "\0" not in joined:
        return []
    found = []
    for index, name in enumerate(names):
        if "\ufffd" not in name and "\0" not in name:
            continue
        at = columns.entry_offsets[index] - start
        tags, _ = walk_tags(buf, at + 4, at + columns.entry_sizes[index], f"function {index} entry", start)
        payload, length = next((p, n) for code, p, n in tags if code == b"NAME")
        raw = bytes(buf[payload : payload + length - 1])
        shown = raw.decode("utf-8", "backslashreplace").replace("\0", "\\x00")
        problem: tuple[int, str] | None = None
        try:
            raw.decode("utf-8")
        except UnicodeDecodeError as exc:
            problem = (exc.start, f"is not valid UTF-8 (byte 0x{raw[exc.start]:02x})")
        nul = raw.find(b"\0")
        if nul >= 0 and (problem is None or nul < problem[0]):
            seen_by_c = raw[:nul].decode("utf-8", "backslashreplace")
            problem = (nul, f"holds a NUL byte before its end (C code reads it as '{seen_by_c}')")
        if problem is not None:
            names[index] = shown
            found.append(BadName(index, start + payload + problem[0], problem[1]))
    return found


def _module_spans(c: EntryColumns, bitcode: Span) -> list[tuple[int, int]]:
    """Absolute module spans; checked in bulk, with the per-entry walk below naming any error."""
    bc_off, bc_size = bitcode
    offsets, sizes = c.module, c.module_sizes
    if offsets and None not in sizes:
        ends = list(map(operator.add, offsets, sizes))
        if max(ends) <= bc_size and all(map(operator.le, ends[:-1], offsets[1:])):
            return list(zip(map(operator.add, offsets, repeat(bc_off)), sizes))  # type: ignore[arg-type]
    spans = []
    module_end = 0
    count = len(offsets)
    for index, (module_off, mdsz) in enumerate(zip(offsets, sizes)):
        if mdsz is None:  # older writers: next module's offset minus this one
            mdsz = (offsets[index + 1] if index + 1 < count else bc_size) - module_off
        if module_off > bc_size or mdsz < 0 or mdsz > bc_size - module_off:
            raise MetallibFormatError(
                c.entry_offsets[index],
                f"function {c.names[index]!r}: module {module_off}+{mdsz} runs past the bitcode section "
                f"({bc_size} bytes)",
            )
        if module_off < module_end:
            raise MetallibFormatError(
                c.entry_offsets[index],
                f"function {c.names[index]!r}: module at {module_off} overlaps the previous one (ends at {module_end})",
            )
        module_end = module_off + mdsz
        spans.append((bc_off + module_off, mdsz))
    return spans


def _chunk_spans(c: EntryColumns, starts: list[int], section: Span, what: str) -> list[tuple[int, int]]:
    """Chunk i runs from its OFFT offset to the next function's (or to the section end)."""
    stops = starts[1:] + [section.size]
    base, limit = section
    spans = list(zip(map(operator.add, starts, repeat(base)), map(operator.sub, stops, starts)))
    if not all(map(operator.le, starts, stops)) or stops[-1:] and max(stops) > limit:
        for index, (start, stop) in enumerate(zip(starts, stops)):
            if start > stop or stop > limit:
                raise MetallibFormatError(
                    c.entry_offsets[index],
                    f"function {c.names[index]!r}: {what} chunk {start}..{stop} is out of order "
                    f"or past the section ({limit} bytes)",
                )
    return spans


def _reflection_spans(lib: Metallib, c: EntryColumns) -> list[tuple[int | None, int]]:
    rlst = lib.reflection_list
    count = len(c.names)
    rel = c.reflection
    if rlst is None:
        for index, value in enumerate(rel):
            if value is not None:
                raise MetallibFormatError(
                    c.entry_offsets[index], f"function {c.names[index]!r} has an RFLT tag but there is no RLST"
                )
        return [(None, 0)] * count
    # A chunk runs to the next function's RFLT (or the list end); its own size field is checked
    # by verify, so listing never touches the reflection pages.
    every = None not in rel
    present = range(count) if every else [i for i, value in enumerate(rel) if value is not None]
    starts: list[int] = rel if every else [rel[i] for i in present]  # type: ignore[assignment, misc]
    stops = starts[1:] + [rlst.size]
    # chunks in order, each at least 16 bytes, the first after the list's count, the last ending at
    # the list end: then none overlaps and all lie inside the list
    if starts and (starts[0] < 4 or not all(map(operator.le, map(operator.add, starts, repeat(16)), stops))):
        previous_end = 4
        for index, rel_start, stop in zip(present, starts, stops):
            if rel_start < previous_end or stop > rlst.size or stop - rel_start < 16:
                raise MetallibFormatError(
                    c.entry_offsets[index],
                    f"function {c.names[index]!r}: reflection chunk {rel_start}..{stop} overlaps another, "
                    f"is shorter than 16 bytes or lies outside the reflection list ({rlst.size} bytes)",
                )
            previous_end = stop
    found = zip(map(operator.add, starts, repeat(rlst.offset)), map(operator.sub, stops, starts))
    if every:
        return list(found)
    spans: list[tuple[int | None, int]] = [(None, 0)] * count
    for index, span in zip(present, found):
        spans[index] = span
    return spans
