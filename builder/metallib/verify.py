"""Deep checks of a parsed metallib: module hashes, wrappers, metadata and reflection chunks.

The reader already guarantees that every region and span is in bounds and that nothing overlaps;
``verify`` goes further and reads every byte of every function. Problems found here are per
function (a hash mismatch, a malformed chunk, a name that is not valid UTF-8 or holds a NUL) or
per container (bytes that belong to no section or no function), and are reported, not raised, so
the CLI can name every problem at once.
"""

from __future__ import annotations

import operator
import struct
from collections.abc import Callable
from itertools import repeat
from typing import NamedTuple

from builder.metallib.errors import MetallibFormatError
from builder.metallib.hashing import Mode, hash_spans
from builder.metallib.model import FunctionEntry
from builder.metallib.native import native_module
from builder.metallib.reader import Metallib
from builder.metallib.structs import MODULE_WRAPPER_MAGIC, REFLECTION_HEAD, U32, walk_tags

__all__ = ["Problem", "VerifyReport", "verify"]


class Problem(NamedTuple):
    """One thing wrong with one function (or with the container when ``function`` is None)."""

    function: str | None
    offset: int
    message: str


class VerifyReport:
    """What ``verify`` checked and found."""

    def __init__(
        self, file_size: int, format_version: str, function_count: int, hashed_bytes: int = 0,
        problems: list[Problem] | None = None,
    ) -> None:  # fmt: skip
        self.file_size = file_size
        self.format_version = format_version
        self.function_count = function_count
        self.hashed_bytes = hashed_bytes
        self.problems: list[Problem] = problems if problems is not None else []

    def __repr__(self) -> str:
        return (
            f"VerifyReport(file_size={self.file_size}, format_version={self.format_version!r}, "
            f"function_count={self.function_count}, hashed_bytes={self.hashed_bytes}, "
            f"problems={self.problems!r})"
        )

    @property
    def ok(self) -> bool:
        return not self.problems

    @property
    def bad_functions(self) -> list[str]:
        seen: dict[str, None] = {}
        for problem in self.problems:
            if problem.function is not None:
                seen.setdefault(problem.function)
        return list(seen)


def verify(
    lib: Metallib, progress: Callable[[int], None] | None = None, *, parallel: Mode = "auto"
) -> VerifyReport:
    """Check every function of ``lib``; ``progress(n)`` is called with the bytes hashed so far.

    Hashing is most of the work, so it runs on two cores (``hashing.hash_spans``: OpenSSL on two C
    threads with the extension, else a forked worker beside this process; ``parallel`` chooses, for
    tests), beside a quick screen of every function's wrapper and chunks. Only functions that fail
    the screen get the detailed checks, which say what is wrong.
    """
    table = lib._parsed  # bad names are reported here, not raised
    c = table.cols
    report = VerifyReport(lib.file_size, lib.header.format_version_text, len(c.names))
    for bad in table.bad_names:
        report.problems.append(Problem(c.names[bad.function], bad.offset, f"name {bad.reason}"))
    _check_tiling(lib, report)
    digests, suspects = hash_spans(
        lib.data, c.module_offsets, c.module_sizes, lambda: _suspects(lib), mode=parallel, progress=progress
    )
    for index in suspects:
        _check_structure(lib, table.function(index), report)
    buf, base = table.function_list
    hashes = map(operator.add, map(operator.sub, c.entry_offsets, repeat(base)), c.hash_rel)
    stored = b"".join([buf[at : at + 32] for at in hashes])
    if digests != stored:
        for index in range(len(c.names)):
            at = index * 32
            if digests[at : at + 32] != stored[at : at + 32]:
                report.problems.append(
                    Problem(c.names[index], c.module_offsets[index], "module SHA-256 does not match its HASH tag")
                )
    report.hashed_bytes = sum(c.module_sizes)
    if lib.reflection_list is not None:
        declared = U32.unpack_from(lib.data, lib.reflection_list.offset)[0]
        chunks = len(c.reflection_offsets) - c.reflection_offsets.count(None)
        if declared != chunks:
            report.problems.append(
                Problem(None, lib.reflection_list.offset,
                        f"reflection list count {declared} but {chunks} functions have chunks")
            )  # fmt: skip
    report.problems.sort(key=lambda p: p.offset)
    return report


def _check_tiling(lib: Metallib, report: VerifyReport) -> None:
    """Every byte belongs to a section, and inside the function sections to a function.

    Apple's files tile exactly: no gap between sections, nothing after the last, no alignment
    gaps (padding lives inside modules and reflection chunks), metadata chunks and modules back
    to back from their section's start, the first reflection chunk right after the list's count.
    The reader accepts other layouts (``list`` and ``report`` count stray bytes as overhead, a
    rewrite drops them); ``verify`` names the first stray byte of each run.
    """
    sections = lib.sections()
    for index, region in enumerate(lib.regions()):
        if region.name == "gap":
            before = [s.name for s in sections if s.size and s.end <= region.offset]
            where = f"after the {before[-1]}" if before else "at the start of the file"
            last = region.end == lib.file_size
            kind = "trailing bytes" if last else "gap"
            report.problems.append(
                Problem(None, region.offset, f"{kind}: {region.size} bytes {where} belong to no section")
            )
    c = lib._parsed.cols
    h = lib.header
    for what, section, offsets, sizes in (
        ("public metadata", h.public_metadata, c.public_offsets, c.public_sizes),
        ("private metadata", h.private_metadata, c.private_offsets, c.private_sizes),
        ("bitcode", h.bitcode, c.module_offsets, c.module_sizes),
    ):
        _check_filled(what, section.offset, section.end, offsets, sizes, report)
    rlst = lib.reflection_list
    if rlst is not None and rlst.size >= 4:
        chunks, chunk_sizes = c.reflection_offsets, c.reflection_sizes
        if None in chunks:  # functions without a chunk own no bytes of the list
            chunk_sizes = [n for at, n in zip(chunks, chunk_sizes) if at is not None]
            chunks = [at for at in chunks if at is not None]
        _check_filled("reflection list", rlst.offset + 4, rlst.end, chunks, chunk_sizes, report)  # type: ignore[arg-type]
    hdyn = lib.dynamic_header
    if hdyn is not None:
        try:
            _, end = walk_tags(lib.data, hdyn.offset, hdyn.end, "dynamic header")
        except MetallibFormatError as exc:
            report.problems.append(Problem(None, exc.offset, exc.message))
        else:
            if end != hdyn.end:
                report.problems.append(
                    Problem(None, end, f"dynamic header: {hdyn.end - end} bytes after its ENDT belong to no tag")
                )


def _check_filled(
    what: str, start: int, end: int, offsets: list[int], sizes: list[int], report: VerifyReport
) -> None:
    """The pieces (in order, not overlapping: the reader checked) cover ``[start, end)``."""
    if sum(sizes) == end - start and (not offsets or offsets[0] == start):
        return
    cursor = start
    for at, size in zip(offsets, sizes):
        if at > cursor:
            break
        cursor = at + size
    stop = next((at for at in offsets if at > cursor), end)
    report.problems.append(
        Problem(None, cursor, f"{what}: {stop - cursor} bytes at {cursor} belong to no function")
    )


_ZEROS = [memoryview(bytes(n)) for n in range(16)]
_ENDT = memoryview(b"ENDT")


def _suspects(lib: Metallib) -> list[int]:
    """Indices of functions that fail a quick screen of their wrapper and chunks.

    The screen accepts only the common, well-formed shapes (an empty metadata chunk, a canonical
    reflection chunk) in one tight loop (in C when the extension is built: ``_native/screen.c``); everything else gets the detailed checks below, which
    say what is wrong. Same verdicts, a fraction of the time.
    """
    c = lib._parsed.cols
    data = lib.data
    native = native_module()
    if native is not None:
        return native.screen_functions(  # type: ignore[no-any-return]
            data, c.module_offsets, c.module_sizes, c.public_offsets, c.public_sizes,
            c.private_offsets, c.private_sizes, c.reflection_offsets, c.reflection_sizes,
        )  # fmt: skip
    wrapper = _WRAPPER.unpack_from
    head = REFLECTION_HEAD.unpack_from
    magic = MODULE_WRAPPER_MAGIC
    out = []
    rows = zip(
        c.module_offsets, c.module_sizes, c.public_offsets, c.public_sizes, c.private_offsets,
        c.private_sizes, c.reflection_offsets, c.reflection_sizes,
    )  # fmt: skip
    for index, (mod, mod_n, pub, pub_n, priv, priv_n, refl, refl_n) in enumerate(rows):
        if mod_n < 20 or pub_n != 8 or priv_n != 8:
            out.append(index)
            continue
        word, _, start, length, _ = wrapper(data, mod)
        if word != magic or start + length > mod_n or data[pub + 4 : pub + 8] != _ENDT or data[priv + 4 : priv + 8] != _ENDT:
            out.append(index)
            continue
        if refl is not None:
            declared, tag, payload = head(data, refl)
            pad = -(refl + 12) % 16
            end = refl + 12 + payload
            if (
                declared != refl_n or tag != b"RBUF" or payload + 16 != refl_n or pad > payload
                or data[end : end + 4] != _ENDT or data[refl + 12 : refl + 12 + pad] != _ZEROS[pad]
            ):  # fmt: skip
                out.append(index)
    return out


def _check_structure(lib: Metallib, fn: FunctionEntry, report: VerifyReport) -> None:
    _check_wrapper(lib, fn, report)
    (pub, pub_n), (priv, priv_n) = fn._pub, fn._priv
    _check_chunk(lib, fn, "public metadata", pub, pub + pub_n, report)
    _check_chunk(lib, fn, "private metadata", priv, priv + priv_n, report)
    if fn._refl[0] is not None:
        _check_reflection(lib, fn, report)


_WRAPPER = struct.Struct("<5I")


def _check_wrapper(lib: Metallib, fn: FunctionEntry, report: VerifyReport) -> None:
    at, size = fn._mod
    if size < 20:
        report.problems.append(Problem(fn.name, at, f"module of {size} bytes has no wrapper"))
        return
    magic, _, start, length, _ = _WRAPPER.unpack_from(lib.data, at)
    if magic != MODULE_WRAPPER_MAGIC:
        report.problems.append(Problem(fn.name, at, f"module wrapper magic is 0x{magic:08x}"))
    elif start + length > size:
        report.problems.append(Problem(fn.name, at, f"bitcode {start}+{length} runs past the {size}-byte module"))


def _check_chunk(
    lib: Metallib, fn: FunctionEntry, what: str, start: int, end: int, report: VerifyReport
) -> None:
    if end - start == 8 and lib.data[start + 4 : end].tobytes() == b"ENDT":
        return  # the common empty chunk
    if end - start < 8:
        report.problems.append(Problem(fn.name, start, f"{what} chunk of {end - start} bytes is too short"))
        return
    try:
        _, tag_end = walk_tags(lib.data, start + 4, end, f"{what} of {fn.name!r}")
    except MetallibFormatError as exc:
        report.problems.append(Problem(fn.name, exc.offset, exc.message))
        return
    if tag_end != end:
        report.problems.append(
            Problem(fn.name, tag_end, f"{what} chunk ends at {tag_end}, next chunk starts at {end}")
        )


def _check_reflection(lib: Metallib, fn: FunctionEntry, report: VerifyReport) -> None:
    assert fn.reflection is not None
    at, size = fn.reflection
    data = lib.data
    if data[at + 4 : at + 8].tobytes() != b"RBUF":
        report.problems.append(Problem(fn.name, at + 4, "reflection chunk does not start with RBUF"))
        return
    declared = U32.unpack_from(data, at)[0]
    if declared != size:
        report.problems.append(
            Problem(fn.name, at, f"reflection chunk says {declared} bytes, the next RFLT leaves {size}")
        )
        return
    payload = U32.unpack_from(data, at + 8)[0]
    if 16 + payload != size or data[at + 12 + payload : at + 16 + payload].tobytes() != b"ENDT":
        report.problems.append(
            Problem(fn.name, at, f"reflection chunk of {size} bytes holds a {payload}-byte RBUF")
        )
        return
    pad = (-(at + 12)) % 16
    if pad > payload or any(data[at + 12 : at + 12 + pad]):
        report.problems.append(Problem(fn.name, at + 12, "reflection padding is not zero"))
