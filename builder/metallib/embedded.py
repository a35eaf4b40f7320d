"""Find the metallibs inside any file: a Mach-O (thin or fat) or ELF binary, or anything else.

A library is found by its own header: the magic ``MTLB`` and, at +16, the library's size. Each
candidate is then proven by parsing it whole and checking every module's SHA-256 against its
HASH tag (``verify``); the magic alone proves nothing (Mach-O binaries hold dozens of
``MTLBinaryArchive`` strings). The search is one pass over the file's map with ``mmap.find``;
the pages scanned are dropped behind the cursor (``MADV_DONTNEED``) and the hashing reads with
``pread``, so peak memory does not grow with the file. A proven library is skipped over whole:
bytes inside it are never searched.

Each library is numbered in file order (``#1``, ``#2``: a name that stays the same across
releases as long as the order does), and where the file has sections (``binary_sections``) it
says which one holds it and the symbol that starts there, if any.
"""

from __future__ import annotations

import mmap
import os
from dataclasses import dataclass

from builder.files.reading import open_regular
from builder.metallib.errors import MetallibError
from builder.metallib.structs import HEADER_SIZE, MAGIC, U64, Span

__all__ = ["Embedded", "Location", "find_metallibs"]

# How much of the map is searched before its pages are dropped again.
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


def find_metallibs(path: str | os.PathLike[str]) -> list[Embedded]:
    """Every metallib in ``path``, proven, in file order (empty when there is none)."""
    name = os.fspath(path)
    try:
        with open_regular(name, "the binary") as handle:
            size = os.fstat(handle.fileno()).st_size
            if size < HEADER_SIZE:
                return []
            with mmap.mmap(handle.fileno(), 0, access=mmap.ACCESS_READ) as mapped:
                spans = _proven_spans(name, mapped, size)
    except OSError as exc:
        raise MetallibError(f"{name}: cannot read: {exc.strerror or exc}") from None
    return _located(name, spans)


def _proven_spans(name: str, mapped: mmap.mmap, size: int) -> list[tuple[Span, str, int]]:
    """Search ``mapped`` window by window for the magic; prove each hit."""
    found: list[tuple[Span, str, int]] = []
    at = dropped = 0
    while at <= size - HEADER_SIZE:
        end = min(size, at + _WINDOW)
        hit = mapped.find(MAGIC, at, end)
        if hit < 0:
            at = max(at + 1, end - len(MAGIC) + 1)  # a magic may straddle the window's end
        elif hit > size - HEADER_SIZE:
            break
        else:
            declared = U64.unpack_from(mapped, hit + 16)[0]
            fits = HEADER_SIZE <= declared <= size - hit
            proof = _prove(name, hit, declared) if fits else None
            if proof is None:
                at = hit + 1
            else:
                found.append((Span(hit, declared), *proof))
                at = hit + declared
        dropped = _drop(mapped, dropped, min(at, size))
    return found


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
    and every module matches its hash; None otherwise."""
    from builder.metallib import open_metallib, verify  # the function, not its module

    try:
        with open_metallib(name, Span(offset, size)) as lib:
            report = verify(lib)
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
    return out
