"""Find the metallibs inside any file: a Mach-O (thin or fat) or ELF binary, or anything else.

A library is found by its own header: the magic ``MTLB``, then fields that every real library
holds (``plausible_header``: a format version of 1.0 to 9.99, the function list at byte 88, the
header extension, public and private metadata and bitcode after it in this order, each inside
the size the header declares at +16). These checks cost a few comparisons and reject the
magic's text hits (Mach-O binaries hold dozens of ``MTLBinaryArchive`` strings) and random
bytes, so only a header that passes them is proven by parsing it whole: the reader's checks
(every region and span in bounds, nothing overlapping) and ``verify``'s without the module
hashes (every byte tiled by a section and a function, every module wrapper, metadata and
reflection piece well formed). The hashes are left to ``verify``, as they are for a
``.metallib`` on its own: a library with a damaged module is found, numbered and reported, and
``verify`` names the module; hashing here would read every library's modules for a ``report``
that never reads them (for torch's libtorch_cpu.dylib, 212 MB).

A header that passes the checks but declares more bytes than the file has left is a library cut
short (a binary copied in part, ``head -c``): the search refuses the file, naming where the
library starts, where it says it ends and the file's size, rather than report the libraries
before it as all there is. Headers that pass the checks but do not parse whole are counted; past
``METALLIB_BUILDER_MAX_BAD_HEADERS`` (16: no real binary holds one) the file is refused, so a
file built to hold a million such headers costs 16 whole parses, not a million.

The search is one pass over the file, its time linear in the file's size. With the C extension
(``find_header``) it reads the file with ``pread`` into one buffer and checks every magic's
header there; without it, a regular expression finds each magic followed by the function list's
offset (88) in the map, window by window, and drops the pages behind the cursor
(``MADV_DONTNEED``). Either way peak memory does not grow with the file, and a proven library is
skipped over whole: bytes inside it are never searched.

Each library is numbered in file order (``#1``, ``#2``), and where the file has sections
(``binary_sections``) it says which one holds it and the symbol that starts there, if any. Its
identity, the name that survives releases that reorder libraries, is made from those
(``builder.metallib.binary_sections``: symbol, else section, else the number).
"""

from __future__ import annotations

import mmap
import os
import re
import struct
from collections.abc import Callable
from dataclasses import dataclass, replace

from builder.errors import MetallibError, MetallibFormatError
from builder.files.bounds import MAX_BAD_HEADERS
from builder.files.reading import open_regular
from builder.metallib.binary_sections import Layout, Place, identities, read_layout
from builder.metallib.native import native_module
from builder.metallib.structs import HEADER_SIZE, MAGIC, U64, Span

__all__ = ["Embedded", "Location", "find_metallibs", "plausible_header"]

# How much of the map is searched before its pages are dropped again (without the extension).
_WINDOW = 32 << 20

# The header's fields: magic, format version (major, minor), declared size, then the offset
# and size of the function list, public metadata, private metadata and bitcode.
_HEADER = struct.Struct("<4s2xHH6x9Q")
# What the header checks need at least: the magic, the version, the size and the function list's
# offset (a header cut by the end of the file is judged on these).
_PREFIX = 32
# The magic and, 20 bytes on, the function list's offset: what the search without the extension
# looks for (a regular expression searches a map at twice mmap.find's speed, and skips the
# magic's text hits in C).
_CANDIDATE = re.compile(re.escape(MAGIC) + rb"[\x00-\xff]{20}" + re.escape(U64.pack(HEADER_SIZE)))


@dataclass(frozen=True)
class Location:
    """Where a library sits in a binary with sections (file offsets)."""

    kind: str  # "Mach-O", "fat Mach-O", "ELF"
    arch: str
    segment: str | None
    section: str | None
    section_offset: int | None  # the library's offset from the start of its section
    symbol: str | None


@dataclass(frozen=True)
class Embedded:
    """One proven library: its number in file order (from 1), its bytes, what it is."""

    number: int
    span: Span
    format_version: str
    function_count: int
    location: Location | None
    identity: str = ""
    """Its name in the binary across releases (``builder.metallib.binary_sections``)."""


def plausible_header(head: bytes) -> bool:
    """Whether ``head`` (a header's 88 bytes, or at least its first 32 where the file ends
    sooner) could start a metallib: checks that every real library passes (Apple's writers and
    this tool's; format 2.6 to 2.9 seen), made from the header alone, so that a text hit of the
    magic or random bytes never reaches a whole parse. ``csrc/find.c`` makes the same checks."""
    if len(head) < _PREFIX:
        return False
    if len(head) < HEADER_SIZE:  # the regions' fields are not there: the size must hold one
        return _checks(head[:_PREFIX] + bytes(HEADER_SIZE - _PREFIX), whole=False)
    return _checks(head, whole=True)


def _checks(head: bytes, *, whole: bool) -> bool:
    magic, major, minor, declared, list_at, list_size, *spans = _HEADER.unpack_from(head)
    if magic != MAGIC or not 1 <= major <= 9 or minor > 99 or list_at != HEADER_SIZE:
        return False
    cursor = HEADER_SIZE + 8 + list_size  # the u32 count and the list, an ENDT at least
    if whole:
        for offset, size in zip(spans[::2], spans[1::2]):
            if offset < cursor:
                return False
            cursor = offset + size
    return bool(cursor <= declared)


def find_metallibs(path: str | os.PathLike[str]) -> list[Embedded]:
    """Every metallib in ``path``, proven, in file order (empty when there is none); raises
    ``MetallibError`` for a library cut short by the end of the file."""
    name = os.fspath(path)
    try:
        layout = read_layout(name)  # a binary cut short is refused, not searched
        with open_regular(name, "the binary") as handle:
            fd = handle.fileno()
            size = os.fstat(fd).st_size
            if size < _PREFIX:
                return []
            native = native_module()
            if native is not None:  # pread into one buffer, nothing mapped
                find_header = native.find_header
                spans = _proven_spans(
                    name,
                    size,
                    lambda at: int(find_header(fd, at, size)),
                    lambda at, count: os.pread(fd, count, at),
                )
            else:
                with mmap.mmap(fd, 0, access=mmap.ACCESS_READ) as mapped:
                    spans = _proven_spans(
                        name,
                        size,
                        _mapped_search(mapped, size),
                        lambda at, count: mapped[at : at + count],
                    )
    except OSError as exc:
        raise MetallibError(f"{name}: cannot read: {exc.strerror or exc}") from None
    return _located(spans, layout)


def _proven_spans(
    name: str, size: int, find: Callable[[int], int], read: Callable[[int, int], bytes]
) -> list[tuple[Span, str, int]]:
    """Every proven library: ``find(at)`` is the next whole header from ``at`` that passes the
    header checks (-1: none), ``read(at, count)`` the file's bytes there."""
    found: list[tuple[Span, str, int]] = []
    failed = 0
    at = 0
    while (hit := find(at)) >= 0:
        declared = U64.unpack_from(read(hit + 16, 8))[0]
        if declared > size - hit:
            raise _cut_short(name, hit, declared, size)
        proof = _prove(name, hit, declared)
        if proof is None:
            failed += 1
            if failed > MAX_BAD_HEADERS.value():
                raise MetallibFormatError(
                    hit,
                    f"the search stops here: this metallib header and {failed - 1} before it "
                    "pass the header checks but do not parse whole; set "
                    f"{MAX_BAD_HEADERS.variable} to allow more than {failed - 1}",
                    name,
                )
            at = hit + 1
        else:
            found.append((Span(hit, declared), *proof))
            at = hit + declared  # nothing inside a proven library is searched
    tail = max(at, size - HEADER_SIZE + 1)  # headers the end of the file cuts
    if tail + _PREFIX <= size:
        rest = read(tail, size - tail)
        hit = rest.find(MAGIC)
        while 0 <= hit <= len(rest) - _PREFIX:
            if plausible_header(rest[hit:]):
                declared = U64.unpack_from(rest, hit + 16)[0]
                raise _cut_short(name, tail + hit, declared, size)
            hit = rest.find(MAGIC, hit + 1)
    return found


def _cut_short(name: str, offset: int, declared: int, size: int) -> MetallibFormatError:
    return MetallibFormatError(
        offset,
        f"truncated: the metallib here declares {declared} bytes, to byte {offset + declared}, "
        f"but the file ends at {size}",
        name,
    )


def _mapped_search(mapped: mmap.mmap, size: int) -> Callable[[int], int]:
    """``find`` for ``_proven_spans`` without the extension: ``_CANDIDATE`` searched in the map
    window by window, each hit's header checked, the pages searched given back behind the
    cursor."""
    dropped = 0
    search = _CANDIDATE.search

    def find(at: int) -> int:
        nonlocal dropped
        while at <= size - HEADER_SIZE:
            end = min(size, at + _WINDOW)
            match = search(mapped, at, end)
            hit = -1 if match is None else match.start()
            dropped = _drop(mapped, dropped, end if hit < 0 else hit)
            if hit < 0:  # a candidate may straddle the window's end
                at = max(at + 1, end - _PREFIX + 1)
            elif hit <= size - HEADER_SIZE and plausible_header(mapped[hit : hit + HEADER_SIZE]):
                return hit
            else:
                at = hit + 1
        return -1

    return find


def _drop(mapped: mmap.mmap, start: int, end: int) -> int:
    """Give back the pages of ``[start, end)`` once a window's worth has been searched; returns
    where the pages still held begin."""
    if end - start < _WINDOW or not hasattr(mmap, "MADV_DONTNEED"):
        return start
    stop = end - end % mmap.PAGESIZE
    mapped.madvise(mmap.MADV_DONTNEED, start, stop - start)
    return stop


def _prove(name: str, offset: int, size: int) -> tuple[str, int] | None:
    """(format version, function count) when the bytes at ``offset`` parse whole as a metallib
    and pass every check of ``verify`` but the module hashes; None otherwise."""
    from builder.metallib import open_metallib, verify  # the function, not its module

    try:
        with open_metallib(name, Span(offset, size)) as lib:
            report = verify(lib, hashes=False)
            if not report.ok:
                return None
            return lib.header.format_version_text, report.function_count
    except MetallibError:
        return None


def _located(spans: list[tuple[Span, str, int]], layout: Layout | None) -> list[Embedded]:
    """The proven libraries, numbered, each with where it sits in ``layout`` (None: the file
    has no sections to say it) and its identity (``binary_sections.identities``)."""
    if not spans:
        return []
    names = layout.names_at(span.offset for span, _, _ in spans) if layout else {}
    out, places = [], []
    for number, (span, version, count) in enumerate(spans, 1):
        location, place = None, Place(None, None, None)
        image = layout.image_at(span.offset) if layout else None
        if layout is not None and image is not None:
            section = image.section_at(span.offset)
            location = Location(
                layout.kind,
                image.arch,
                section.segment if section else None,
                section.name if section else None,
                span.offset - section.offset if section else None,
                names.get(span.offset),
            )
            place = Place(image.arch, location.symbol, section.label if section else None)
        out.append(Embedded(number, span, version, count, location))
        places.append(place)
    return [replace(e, identity=i) for e, i in zip(out, identities(places), strict=True)]
