"""Find the metallibs inside any file: a Mach-O (thin or fat) or ELF binary, or anything else.

A library is found by its own header: the magic ``MTLB`` and, at +16, the library's size. Each
candidate is then proven by parsing it whole: the reader's checks (every region and span in
bounds, nothing overlapping) and ``verify``'s without the module hashes (every byte tiled by a
section and a function, every module wrapper, metadata and reflection chunk well formed). The
magic alone proves nothing (Mach-O binaries hold dozens of ``MTLBinaryArchive`` strings), and
random bytes behind a right header do not pass. The hashes are left to ``verify``, as they are
for a ``.metallib`` on its own: a library with a damaged module is found, numbered and
reported, and ``verify`` names the module; hashing here would read every library's modules for
a ``report`` that never reads them (for torch's libtorch_cpu.dylib, 212 MB).

The search is one pass over the file. With the C extension (``find_bytes``) it reads the file
with ``pread`` into one buffer; without it, it runs ``mmap.find`` window by window and drops the
pages behind the cursor (``MADV_DONTNEED``). Either way peak memory does not grow with the file,
and a proven library is skipped over whole: bytes inside it are never searched.

Each library is numbered in file order (``#1``, ``#2``), and where the file has sections
(``binary_sections``) it says which one holds it and the symbol that starts there, if any. Its
identity, the name that survives releases that reorder libraries, is made from those
(``builder.metallib.identity``: symbol, else section, else the number).
"""

from __future__ import annotations

import mmap
import os
from collections.abc import Callable
from dataclasses import dataclass

from builder.files.reading import open_regular
from builder.metallib.binary_sections import check_complete
from builder.metallib.errors import MetallibError
from builder.metallib.native import native_module
from builder.metallib.structs import HEADER_SIZE, MAGIC, U64, Span

__all__ = ["Embedded", "Location", "find_metallibs"]

# How much of the map is searched before its pages are dropped again (without the extension).
_WINDOW = 32 << 20


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
    """Its name in the binary across releases (``builder.metallib.identity``)."""


def find_metallibs(path: str | os.PathLike[str]) -> list[Embedded]:
    """Every metallib in ``path``, proven, in file order (empty when there is none)."""
    name = os.fspath(path)
    try:
        check_complete(name)  # a binary cut short is refused, not searched
        with open_regular(name, "the binary") as handle:
            fd = handle.fileno()
            size = os.fstat(fd).st_size
            if size < HEADER_SIZE:
                return []
            native = native_module()
            if native is not None:  # pread into one buffer, nothing mapped
                find_bytes = native.find_bytes
                spans = _proven_spans(
                    name,
                    size,
                    lambda at: int(find_bytes(fd, MAGIC, at, size)),
                    lambda hit: U64.unpack(os.pread(fd, U64.size, hit + 16))[0],
                )
            else:
                with mmap.mmap(fd, 0, access=mmap.ACCESS_READ) as mapped:
                    spans = _proven_spans(
                        name,
                        size,
                        _mapped_search(mapped, size),
                        lambda hit: U64.unpack_from(mapped, hit + 16)[0],
                    )
    except OSError as exc:
        raise MetallibError(f"{name}: cannot read: {exc.strerror or exc}") from None
    return _located(name, spans)


def _proven_spans(
    name: str, size: int, find: Callable[[int], int], declared_at: Callable[[int], int]
) -> list[tuple[Span, str, int]]:
    """Every proven library: ``find(at)`` is the next magic from ``at`` (-1: none),
    ``declared_at(hit)`` the size its header declares."""
    found: list[tuple[Span, str, int]] = []
    at = 0
    while at <= size - HEADER_SIZE:
        hit = find(at)
        if hit < 0 or hit > size - HEADER_SIZE:
            break
        declared = declared_at(hit)
        proof = _prove(name, hit, declared) if HEADER_SIZE <= declared <= size - hit else None
        if proof is None:
            at = hit + 1
        else:
            found.append((Span(hit, declared), *proof))
            at = hit + declared  # nothing inside a proven library is searched
    return found


def _mapped_search(mapped: mmap.mmap, size: int) -> Callable[[int], int]:
    """``find`` for ``_proven_spans`` without the extension: ``mmap.find`` window by window,
    the pages searched given back behind the cursor."""
    dropped = 0

    def find(at: int) -> int:
        nonlocal dropped
        while at <= size - len(MAGIC):
            end = min(size, at + _WINDOW)
            hit = mapped.find(MAGIC, at, end)
            dropped = _drop(mapped, dropped, end if hit < 0 else hit)
            if hit >= 0:
                return hit
            at = max(at + 1, end - len(MAGIC) + 1)  # a magic may straddle the window's end
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


def _located(name: str, spans: list[tuple[Span, str, int]]) -> list[Embedded]:
    if not spans:
        return []
    from builder.metallib.binary_sections import read_layout

    layout = read_layout(name)
    names = layout.names_at(span.offset for span, _, _ in spans) if layout else {}
    out = []
    for number, (span, version, count) in enumerate(spans, 1):
        location = None
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
        out.append(Embedded(number, span, version, count, location))
    return _identified(out)


def _identified(found: list[Embedded]) -> list[Embedded]:
    """``found`` with each library's identity (``builder.metallib.identity``)."""
    from dataclasses import replace

    from builder.metallib.identity import Place, identities

    places = [
        Place(None, None, None)
        if e.location is None
        else Place(
            e.location.arch,
            e.location.symbol,
            None
            if e.location.section is None
            else ",".join(p for p in (e.location.segment, e.location.section) if p),
        )
        for e in found
    ]
    return [replace(e, identity=i) for e, i in zip(found, identities(places), strict=True)]
