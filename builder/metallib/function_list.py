"""Parse the function list into ``FunctionEntry`` records, checking every offset on the way.

This is the hot path of ``list`` and ``report`` (about 15,000 entries in mlx.metallib). Apple's
writer gives every entry the same tag sequence, differing only in the NAME length, so the parser
learns that shape from the first entry and then decodes each entry with one ``struct`` call,
checking that codes and lengths match; any entry that differs takes the general tag walk. The list
is copied once (about 2 % of the file); modules, metadata and reflection stay in the map.
"""

from __future__ import annotations

import operator
import struct
from functools import cached_property
from itertools import repeat
from typing import TYPE_CHECKING, Any, NamedTuple

from builder.metallib.errors import MetallibFormatError
from builder.metallib.model import FunctionEntry
from builder.metallib.structs import MIN_ENTRY_SIZE, U32, Span, read_u32, walk_tags

if TYPE_CHECKING:
    from builder.metallib.reader import Metallib

__all__ = ["FunctionColumns", "FunctionTable", "parse_function_list"]

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


# Decoded values of one entry, as a tuple (cheaper than an object for 15,000 entries):
# (name, type, hash offset, public md offset, private md offset, module offset, mdsz, rflt, version,
#  OFFT payload offset, RFLT payload offset); payload offsets are absolute, for in-place patching.
_Fields = tuple[Any, ...]
NAME, TYPE, HASH_AT, PUB, PRIV, MOD, MDSZ, RFLT, VERSION, OFFT_AT, RFLT_AT = range(11)


def _decode_tags(
    tags: list[tuple[bytes, int, int]], buf: bytes, base: int, entry_at: int, index: int
) -> _Fields:
    """General path: fields from an already walked tag list (offsets relative to ``buf``)."""
    type_: int | None = None
    mdsz = rflt = version = offt_at = rflt_at = hash_at = offsets = None
    name: str | None = None
    for code, at, length in tags:
        want = _FIXED_LENGTHS.get(code)
        if want is not None and length != want:
            raise MetallibFormatError(base + at, f"function {index}: {code.decode()} is {length} bytes, not {want}")
        if code == b"NAME":
            if length == 0 or buf[at + length - 1] != 0:
                raise MetallibFormatError(base + at, f"function {index}: NAME is not NUL-terminated")
            name = buf[at : at + length - 1].decode("utf-8", "replace")
        elif code == b"HASH":
            hash_at = base + at
        elif code == b"OFFT":
            offsets = struct.unpack_from("<QQQ", buf, at)
            offt_at = base + at
        elif code == b"MDSZ":
            mdsz = struct.unpack_from("<Q", buf, at)[0]
        elif code == b"RFLT":
            rflt = struct.unpack_from("<Q", buf, at)[0]
            rflt_at = base + at
        elif code == b"TYPE" and length >= 1:
            type_ = buf[at]
        elif code == b"VERS" and length == 8:
            version = struct.unpack_from("<HHHH", buf, at)
    for value, label in ((name, "NAME"), (hash_at, "HASH"), (offsets, "OFFT")):
        if value is None:
            raise MetallibFormatError(base + entry_at, f"function {index}: entry has no {label} tag")
    return (name, type_, hash_at, *offsets, mdsz, rflt, version, offt_at, rflt_at)  # type: ignore[misc]


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


def parse_function_list(lib: Metallib) -> FunctionTable:
    """Parse and check every entry of ``lib``'s function list."""
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
    buf = bytes(lib.data[start:end])
    limit = len(buf)
    fields: list[_Fields] = []
    entries: list[tuple[int, int]] = []
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
                    tail_abs = start + tail_at
                    decoded = (
                        buf[pos + 10 : tail_at - 1].decode("utf-8", "replace"),
                        type_, tail_abs + hash_rel, pub, priv, mod, mdsz, rflt,
                        values[vers : vers + 4] if vers is not None else None,
                        tail_abs + offt_rel, tail_abs + rflt_rel if rflt_rel is not None else None,
                    )  # fmt: skip
        if decoded is None:
            tags, stop = walk_tags(buf, pos + 4, pos + size, f"function {index} entry", start)
            if stop != pos + size:
                raise MetallibFormatError(
                    start + stop - 4, f"function {index}: ENDT at {start + stop - 4}, entry ends at {start + pos + size}"
                )
            decoded = _decode_tags(tags, buf, start, pos, index)
            if shape is None:
                shape = _Shape.learn(tags)
                if shape is not None:  # hoisted for the loop
                    vers = shape.where.get(b"VERS")
                    tail_unpack, tail_size = shape.struct.unpack_from, shape.size
                    check, expect, pick = shape.check, shape.expect, shape.pick
                    hash_rel, offt_rel, rflt_rel = shape.hash_rel, shape.offt_rel, shape.rflt_rel
        fields.append(decoded)
        entries.append((start + pos, size))
        pos += size
    if pos != limit:
        raise MetallibFormatError(start + pos, f"function list entries end at {start + pos}, header says {end}")
    return FunctionTable(lib, fields, entries, (buf, start))


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
    """The checked parse of a function list; entries and columns are built from it on demand."""

    def __init__(
        self, lib: Metallib, fields: list[_Fields], entries: list[tuple[int, int]],
        function_list: tuple[bytes, int],
    ) -> None:  # fmt: skip
        h = lib.header
        self.fields = fields
        self.entries = entries
        self.function_list = function_list
        self.public = _chunk_spans(fields, entries, PUB, h.public_metadata, "public metadata")
        self.private = _chunk_spans(fields, entries, PRIV, h.private_metadata, "private metadata")
        self.reflection = _reflection_spans(lib, fields, entries)
        self.modules = _module_spans(fields, entries, h.bitcode)

    def functions(self) -> list[FunctionEntry]:
        make = FunctionEntry
        function_list = self.function_list
        return [
            make(index, f[NAME], f[TYPE], entry, function_list, f[HASH_AT], pub, priv, mod, refl,
                 f[VERSION], (f[OFFT_AT], f[RFLT_AT]))
            for index, (f, entry, pub, priv, mod, refl) in enumerate(
                zip(self.fields, self.entries, self.public, self.private, self.modules, self.reflection)
            )
        ]  # fmt: skip

    @cached_property
    def columns(self) -> FunctionColumns:
        second = operator.itemgetter(1)
        return FunctionColumns(
            names=[f[NAME] for f in self.fields],
            types=[f[TYPE] for f in self.fields],
            entry_bytes=list(map(second, self.entries)),
            public_md_bytes=list(map(second, self.public)),
            private_md_bytes=list(map(second, self.private)),
            module_bytes=list(map(second, self.modules)),
            reflection_bytes=list(map(second, self.reflection)),
            module_offsets=list(map(operator.itemgetter(0), self.modules)),
            versions=[f[VERSION] for f in self.fields],
        )


def _module_spans(
    fields: list[_Fields], entries: list[tuple[int, int]], bitcode: Span
) -> list[tuple[int, int]]:
    """Absolute module spans; checked in bulk, with the per-entry walk below naming any error."""
    bc_off, bc_size = bitcode
    offsets = list(map(operator.itemgetter(MOD), fields))
    sizes = list(map(operator.itemgetter(MDSZ), fields))
    if offsets and None not in sizes:
        ends = list(map(operator.add, offsets, sizes))
        if max(ends) <= bc_size and all(map(operator.le, ends[:-1], offsets[1:])):
            return list(zip(map(operator.add, offsets, repeat(bc_off)), sizes))
    spans = []
    module_end = 0
    count = len(fields)
    for index, f in enumerate(fields):
        module_off = f[MOD]
        mdsz = f[MDSZ]
        if mdsz is None:  # older writers: next module's offset minus this one
            mdsz = (fields[index + 1][MOD] if index + 1 < count else bc_size) - module_off
        if module_off > bc_size or mdsz < 0 or mdsz > bc_size - module_off:
            raise MetallibFormatError(
                entries[index][0],
                f"function {f[NAME]!r}: module {module_off}+{mdsz} runs past the bitcode section "
                f"({bc_size} bytes)",
            )
        if module_off < module_end:
            raise MetallibFormatError(
                entries[index][0],
                f"function {f[NAME]!r}: module at {module_off} overlaps the previous one (ends at {module_end})",
            )
        module_end = module_off + mdsz
        spans.append((bc_off + module_off, mdsz))
    return spans


def _chunk_spans(
    fields: list[_Fields], entries: list[tuple[int, int]], which: int, section: Span, what: str
) -> list[tuple[int, int]]:
    """Chunk i runs from its OFFT offset to the next function's (or to the section end)."""
    starts = list(map(operator.itemgetter(which), fields))
    stops = starts[1:] + [section.size]
    base, limit = section
    spans = list(zip(map(operator.add, starts, repeat(base)), map(operator.sub, stops, starts)))
    if not all(map(operator.le, starts, stops)) or stops[-1:] and max(stops) > limit:
        for index, (start, stop) in enumerate(zip(starts, stops)):
            if start > stop or stop > limit:
                raise MetallibFormatError(
                    entries[index][0],
                    f"function {fields[index][NAME]!r}: {what} chunk {start}..{stop} is out of order "
                    f"or past the section ({limit} bytes)",
                )
    return spans


def _reflection_spans(
    lib: Metallib, fields: list[_Fields], entries: list[tuple[int, int]]
) -> list[tuple[int | None, int]]:
    rlst = lib.reflection_list
    if rlst is None:
        for index, f in enumerate(fields):
            if f[RFLT] is not None:
                raise MetallibFormatError(
                    entries[index][0], f"function {f[NAME]!r} has an RFLT tag but there is no RLST"
                )
        return [(None, 0)] * len(fields)
    count = read_u32(lib.data, rlst.offset, "reflection list count")
    if count * 16 > rlst.size:
        raise MetallibFormatError(rlst.offset, f"reflection count {count} does not fit the {rlst.size}-byte list")
    # A chunk runs to the next function's RFLT (or the list end); its own size field is checked
    # by verify, so listing never touches the reflection pages.
    starts = [(index, f[RFLT]) for index, f in enumerate(fields) if f[RFLT] is not None]
    spans: list[tuple[int | None, int]] = [(None, 0)] * len(fields)
    previous_end = 4
    for k, (index, rel) in enumerate(starts):
        stop = starts[k + 1][1] if k + 1 < len(starts) else rlst.size
        if rel < previous_end or stop > rlst.size or stop - rel < 16:
            raise MetallibFormatError(
                entries[index][0],
                f"function {fields[index][NAME]!r}: reflection chunk {rel}..{stop} overlaps another, "
                f"is shorter than 16 bytes or lies outside the reflection list ({rlst.size} bytes)",
            )
        previous_end = stop
        spans[index] = (rlst.offset + rel, stop - rel)
    return spans
