"""Metal source a binary holds as text, found by what it is rather than by who returns it.

MLX returns each preamble from a ``const char* name()`` function (``builder.size.host_strings``);
other projects keep their Metal source elsewhere in the binary: ggml puts its whole source in a
section with ``.incbin`` (``__DATA,__ggml_metallib`` between ``_ggml_metallib_start`` and
``_ggml_metallib_end``: 608,202 B in pywhispercpp 1.5.1's ``libggml-metal.dylib``), candle keeps
its ``.metal`` files as string constants. Whatever holds it, a translation unit says what it is:
it includes ``<metal_stdlib>`` and defines ``kernel`` (or ``[[kernel]]``) functions.

The search, in every section of an image that holds data (code and zero-fill hold no text; a
section that is itself a metallib is skipped):

1. each ``<metal_stdlib>`` the section holds;
2. the text around it, bounded by the symbols that mark it where the binary has them (a
   ``NAME_start``/``NAME_end`` or ``NAME_begin``/``NAME_end`` pair around it: ggml's), else by
   the nearest bytes that are no text (a C string's NUL; any control byte but tab, line feed, form
   feed and carriage return). A Rust binary stores its string constants back to back without
   NULs, so there one text holds several files and the strings beside them (candle in
   mistralrs-metal 0.8.0: one text of 598,935 B);
3. it counts when it is a translation unit: ``#include <metal_stdlib>`` and at least one kernel.

A string a function returns is Metal source on weaker evidence (MLX's ``ternary_ops`` preamble is
622 bytes of templates): any Metal mark (a ``<metal_…>`` include, ``metal::``, ``using namespace
metal``, a kernel, a Metal attribute such as ``[[buffer(0)]]``) or the header it was made from
named in its first lines. Other text is not: torch 2.14.1's ONNX ``QLinearMatMulDoc`` (1,192 B of
prose) and MLX's CPU ``get_prebuilt_preamble`` (C++ for the host compiler).

Kernels are counted in the text as written, comments left out: each ``kernel`` qualifier
(``kernel void f(``, an instantiation ``[[host_name("f")]] kernel f_t f<float>;``) and each
``[[kernel]]`` attribute. The preprocessor is not run: a macro that makes many kernels counts once.
Standard library only.
"""

from __future__ import annotations

import mmap
import os
import re
from collections.abc import Iterator
from dataclasses import dataclass

from builder.files.reading import open_regular
from builder.metallib.binary_sections import Image, Layout, Section, Symbol
from builder.metallib.structs import MAGIC

__all__ = [
    "MetalText",
    "count_kernels",
    "embedded_metal",
    "is_metal_source",
    "is_translation_unit",
]

_STDLIB = b"<metal_stdlib>"
_INCLUDES_STDLIB = re.compile(rb"#[ \t]*include[ \t]*<metal_stdlib>")
_NOT_TEXT = re.compile(rb"[\x00-\x08\x0b\x0e-\x1f\x7f]")
_COMMENT = re.compile(rb"//[^\n]*|/\*.*?\*/", re.DOTALL)
_KERNEL = re.compile(rb"\[\[\s*kernel\s*\]\]|\bkernel\s+(?=[A-Za-z_])")
_MARK = re.compile(
    rb"#[ \t]*include[ \t]*<metal_|\bmetal::|\busing\s+namespace\s+metal\b"
    rb"|\[\[\s*(?:kernel|host_name|buffer|texture|sampler|threadgroup|thread_|threads_|simd|"
    rb"stage_in|vertex_id|instance_id|position|function_constant)"
)
_HEADER = re.compile(rb'// Auto generated source for [^\s"]+|#line \d+ "[^"\n]+"')
_HEAD = 4096  # a run-time source names its header in its first lines
_CODE = frozenset({"__text", "__stubs", "__stub_helper", "__auth_stubs", "__objc_stubs", ".text"})
_BLOCK = 1 << 16


@dataclass(frozen=True)
class MetalText:
    """One Metal translation unit found by its text: the image's architecture, where it sits
    (address, file offset, bytes; no NUL counted: a section's text has none), the kernels written
    in it, what names its place (the symbol that starts it, else ``SEGMENT,section at 0x…``,
    the file offset) and its section."""

    arch: str
    address: int
    offset: int
    size: int
    kernels: int
    place: str
    section: str


def count_kernels(text: bytes) -> int:
    """The kernels written in ``text``: ``kernel`` qualifiers and ``[[kernel]]`` attributes
    outside comments (see the module)."""
    return len(_KERNEL.findall(_COMMENT.sub(b"", text)))


def is_translation_unit(text: bytes) -> bool:
    """Whether ``text`` is a Metal translation unit: it includes ``<metal_stdlib>`` and writes
    at least one kernel."""
    return _INCLUDES_STDLIB.search(text) is not None and count_kernels(text) > 0


def is_metal_source(text: bytes) -> bool:
    """Whether a string a function returns is Metal source: a Metal mark anywhere, or a header
    named in its first lines (MLX's generator comment, this tool's ``#line``), in text of more
    than one line (see the module)."""
    if b"\n" not in text:
        return False
    if _MARK.search(text) is not None or _HEADER.search(text, 0, _HEAD) is not None:
        return True
    return count_kernels(text) > 0


def _pairs(symbols: list[Symbol], sections: list[Section]) -> list[tuple[int, int, str]]:
    """(start, end, start symbol) of each ``NAME_start``/``NAME_end`` pair (also ``begin``,
    without the underscore) whose end follows its start. A Mach-O symbol at a section's very end
    (ggml's ``_ggml_metallib_end``) sits on no byte of it and is not read: a start symbol whose
    bytes (up to the next symbol) reach its section's end stands for the pair."""
    at = {s.name: s for s in symbols}
    ends = {s.end for s in sections}
    found = []
    for name, symbol in at.items():
        stem = re.sub(r"_?(?:start|begin)$", "", name)
        if stem == name or not stem.strip("_"):
            continue
        partners = [at[e].offset for e in (f"{stem}_end", f"{stem}end") if e in at]
        partners = [end for end in partners if end > symbol.offset]
        if not partners and symbol.size and symbol.offset + symbol.size in ends:
            partners = [symbol.offset + symbol.size]
        if partners:
            found.append((symbol.offset, min(partners), name))
    return found


def _text_bounds(data: mmap.mmap, hit: int, section: Section) -> tuple[int, int]:
    """The text around ``hit`` within ``section``: from after the last byte before it that is
    no text to the first such byte after it."""
    after = _NOT_TEXT.search(data, hit, section.end)
    end = after.start() if after else section.end
    start = hit
    while start > section.offset:
        low = max(section.offset, start - _BLOCK)
        block = data[low:start]
        before = [m.start() for m in _NOT_TEXT.finditer(block)]
        if before:
            return low + before[-1] + 1, end
        start = low
    return section.offset, end


def _data_sections(image: Image, data: mmap.mmap) -> Iterator[Section]:
    for section in image.sections:
        if section.name in _CODE or not section.size or section.end > len(data):
            continue
        if data[section.offset : section.offset + 4] == MAGIC:
            continue  # a metallib (torch's __TEXT,metal_basic): its own reader measures it
        yield section


def embedded_metal(path: str | os.PathLike[str], layout: Layout) -> list[MetalText]:
    """Every Metal translation unit the binary at ``path`` (whose sections are ``layout``)
    holds as text, by image then offset (see the module)."""
    found: list[MetalText] = []
    with open_regular(os.fspath(path), "the binary") as handle:
        if os.fstat(handle.fileno()).st_size == 0:
            return []
        with mmap.mmap(handle.fileno(), 0, access=mmap.ACCESS_READ) as data:
            for image in layout.images:
                pairs: list[tuple[int, int, str]] | None = None
                for section in _data_sections(image, data):
                    hit = data.find(_STDLIB, section.offset, section.end)
                    while hit >= 0:
                        if pairs is None:
                            pairs = _pairs(image.symbols(), image.sections)
                        marked = [p for p in pairs if p[0] <= hit < p[1] <= section.end]
                        start, end = _text_bounds(data, hit, section)
                        place = f"{section.label} at {start:#x}"
                        if marked:
                            start, end, place = min(marked, key=lambda p: p[1] - p[0])
                        text = data[start:end]
                        if is_translation_unit(text):
                            address = section.address + start - section.offset
                            found.append(
                                MetalText(
                                    image.arch,
                                    address,
                                    start,
                                    end - start,
                                    count_kernels(text),
                                    place,
                                    section.label,
                                )
                            )
                        hit = data.find(_STDLIB, max(end, hit + 1), section.end)
    return found
