"""Deep checks of a parsed metallib: module hashes, wrappers, metadata and reflection pieces.

The reader already guarantees that every region and span is in bounds and that nothing overlaps;
``verify`` goes further and reads every byte of every function. Problems found here are per
function (a hash mismatch, a malformed piece, a name that is not valid UTF-8 or holds a NUL) or
per container (bytes that belong to no section or no function), and are reported, not raised, so
the CLI can name every problem at once.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, NamedTuple

from builder.errors import MetallibFormatError
from builder.metallib.native import hash_spans, native_module
from builder.metallib.reader import Metallib
from builder.metallib.structs import (
    MODULE_WRAPPER,
    MODULE_WRAPPER_MAGIC,
    REFLECTION_HEAD,
    U32,
    Span,
    walk_tags,
)
from builder.metallib.table import FunctionEntry, FunctionTable, Piece

if TYPE_CHECKING:
    from builder.metallib.native import Mode

__all__ = ["Problem", "VerifyReport", "verify"]

_STRAY = ("belong to no section", "belong to no function")


class Problem(NamedTuple):
    """One thing wrong with one function (or with the container when ``function`` is None)."""

    function: str | None
    offset: int
    message: str

    @property
    def stray_bytes(self) -> bool:
        """Bytes that belong to no section or no function (``_check_tiling``): a rewrite such as
        ``slim`` lays the file out afresh and leaves them out."""
        return self.function is None and self.message.endswith(_STRAY)


@dataclass
class VerifyReport:
    """What ``verify`` checked and found."""

    file_size: int
    format_version: str
    function_count: int
    hashed_bytes: int = 0
    problems: list[Problem] = field(default_factory=list)

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
    lib: Metallib,
    progress: Callable[[int], None] | None = None,
    *,
    parallel: Mode = "auto",
    hashes: bool = True,
) -> VerifyReport:
    """Check every function of ``lib``; ``progress(n)`` is called with the bytes hashed so far.
    ``hashes=False`` checks everything but the module hashes (``slim`` hashes the modules it
    copies while it writes them).

    Hashing is most of the work, so it runs on both cores with the extension (``native.hash_spans``;
    ``parallel`` chooses the way, for tests), then a quick screen of every function's wrapper and
    pieces runs over pages the hashing brought in. Only functions that fail the screen get the
    detailed checks, which say what is wrong.
    """
    table = lib.columns(accept_bad_names=True)  # bad names are reported here, not raised
    report = VerifyReport(lib.file_size, lib.header.format_version_text, len(table))
    for bad in table.bad_names:
        report.problems.append(Problem(table.names[bad.function], bad.offset, f"name {bad.reason}"))
    _check_tiling(lib, table, report)
    if hashes:
        data, offsets, fd = lib.file_spans(table.module_offsets)
        digests = hash_spans(
            data, offsets, table.module_bytes, fd=fd, mode=parallel, progress=progress
        )
    else:
        digests = table.hashes
    for index in _suspects(lib, table):
        _check_structure(lib, table[index], report)
    if digests != table.hashes:
        for index, name in enumerate(table.names):
            if digests[32 * index : 32 * index + 32] != table.hash(index):
                report.problems.append(
                    Problem(
                        name,
                        table.module_offsets[index],
                        "module SHA-256 does not match its HASH tag",
                    )
                )
    report.hashed_bytes = sum(table.module_bytes) if hashes else 0
    if lib.reflection_list is not None:
        declared = U32.unpack_from(lib.data, lib.reflection_list.offset)[0]
        owners = len(table) - table.reflection_offsets.count(None)
        if declared != owners:
            report.problems.append(
                Problem(
                    None,
                    lib.reflection_list.offset,
                    f"reflection list count {declared} but {owners} functions have reflection",
                )
            )
    report.problems.sort(key=lambda p: p.offset)
    return report


def _check_tiling(lib: Metallib, table: FunctionTable, report: VerifyReport) -> None:
    """Every byte belongs to a section, and inside the function sections to a function.

    Apple's files tile exactly: no gap between sections, nothing after the last, no alignment
    gaps (padding lives inside modules and reflection pieces), metadata pieces and modules back
    to back from their section's start, the first reflection piece right after the list's count.
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
                Problem(
                    None, region.offset, f"{kind}: {region.size} bytes {where} belong to no section"
                )
            )
    h = lib.header
    for what, section, piece in (
        ("public metadata", h.public_metadata, Piece.PUBLIC_MD),
        ("private metadata", h.private_metadata, Piece.PRIVATE_MD),
        ("bitcode", h.bitcode, Piece.MODULE),
    ):
        offsets, sizes = table.offsets(piece), table.sizes(piece)
        _check_filled(what, section.offset, section.end, offsets, sizes, report)  # type: ignore[arg-type]
    rlst = lib.reflection_list
    if rlst is not None and rlst.size >= 4:
        starts, sizes = table.reflection_offsets, table.reflection_bytes
        if None in starts:  # functions without a piece own no bytes of the list
            sizes = [n for at, n in zip(starts, sizes) if at is not None]
            starts = [at for at in starts if at is not None]
        _check_filled("reflection list", rlst.offset + 4, rlst.end, starts, sizes, report)  # type: ignore[arg-type]
    hdyn = lib.dynamic_header
    if hdyn is not None:
        try:
            _, end = walk_tags(lib.data, hdyn.offset, hdyn.end, "dynamic header")
        except MetallibFormatError as exc:
            report.problems.append(Problem(None, exc.offset, exc.message))
        else:
            if end != hdyn.end:
                report.problems.append(
                    Problem(
                        None,
                        end,
                        f"dynamic header: {hdyn.end - end} bytes after its ENDT belong to no tag",
                    )
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


_SCREENED = (Piece.PUBLIC_MD, Piece.PRIVATE_MD, Piece.MODULE, Piece.REFLECTION)
"""The pieces the screen looks at, in ``Piece`` order: offsets and sizes of each, as the C
screen takes them (``csrc/screen.c``)."""


def _suspects(lib: Metallib, table: FunctionTable) -> list[int]:
    """Indices of functions that fail a quick screen of their wrapper and pieces.

    The screen accepts only the common, well-formed shapes (an empty metadata piece, a canonical
    reflection piece) in one tight loop (in C when the extension is built: ``csrc/screen.c``,
    which also passes metadata pieces that hold tags); everything else gets the detailed checks
    below, which say what is wrong. Same verdicts, a fraction of the time.
    """
    data = lib.data
    columns = [
        column for piece in _SCREENED for column in (table.offsets(piece), table.sizes(piece))
    ]
    native = native_module()
    if native is not None:
        return native.screen_functions(data, *columns)  # type: ignore[no-any-return]
    wrapper = MODULE_WRAPPER.unpack_from
    head = REFLECTION_HEAD.unpack_from
    magic = MODULE_WRAPPER_MAGIC
    out = []
    rows = zip(*columns)
    for index, (pub, pub_n, priv, priv_n, mod, mod_n, refl, refl_n) in enumerate(rows):
        if mod_n < 20 or pub_n != 8 or priv_n != 8:
            out.append(index)
            continue
        word, _, start, length, _ = wrapper(data, mod)
        if (
            word != magic
            or start + length > mod_n
            or data[pub + 4 : pub + 8] != _ENDT
            or data[priv + 4 : priv + 8] != _ENDT
        ):
            out.append(index)
            continue
        if refl is not None:
            declared, tag, payload = head(data, refl)
            pad = -(refl + 12) % 16
            end = refl + 12 + payload
            if (
                declared != refl_n
                or tag != b"RBUF"
                or payload + 16 != refl_n
                or pad > payload
                or data[end : end + 4] != _ENDT
                or data[refl + 12 : refl + 12 + pad] != _ZEROS[pad]
            ):
                out.append(index)
    return out


def _check_structure(lib: Metallib, fn: FunctionEntry, report: VerifyReport) -> None:
    _check_wrapper(lib, fn, report)
    _check_piece(lib, fn, "public metadata", fn.public_md.offset, fn.public_md.end, report)
    _check_piece(lib, fn, "private metadata", fn.private_md.offset, fn.private_md.end, report)
    if fn.reflection is not None:
        _check_reflection(lib, fn, fn.reflection, report)


def _check_wrapper(lib: Metallib, fn: FunctionEntry, report: VerifyReport) -> None:
    at, size = fn.module
    if size < 20:
        report.problems.append(Problem(fn.name, at, f"module of {size} bytes has no wrapper"))
        return
    magic, _, start, length, _ = MODULE_WRAPPER.unpack_from(lib.data, at)
    if magic != MODULE_WRAPPER_MAGIC:
        report.problems.append(Problem(fn.name, at, f"module wrapper magic is 0x{magic:08x}"))
    elif start + length > size:
        report.problems.append(
            Problem(fn.name, at, f"bitcode {start}+{length} runs past the {size}-byte module")
        )


def _check_piece(
    lib: Metallib, fn: FunctionEntry, what: str, start: int, end: int, report: VerifyReport
) -> None:
    if end - start == 8 and lib.data[start + 4 : end].tobytes() == b"ENDT":
        return  # the common empty piece
    if end - start < 8:
        report.problems.append(
            Problem(fn.name, start, f"{what} piece of {end - start} bytes is too short")
        )
        return
    try:
        _, tag_end = walk_tags(lib.data, start + 4, end, f"{what} of {fn.name!r}")
    except MetallibFormatError as exc:
        report.problems.append(Problem(fn.name, exc.offset, exc.message))
        return
    if tag_end != end:
        report.problems.append(
            Problem(fn.name, tag_end, f"{what} piece ends at {tag_end}, next piece starts at {end}")
        )


def _check_reflection(lib: Metallib, fn: FunctionEntry, piece: Span, report: VerifyReport) -> None:
    at, size = piece
    data = lib.data
    if data[at + 4 : at + 8].tobytes() != b"RBUF":
        report.problems.append(
            Problem(fn.name, at + 4, "reflection piece does not start with RBUF")
        )
        return
    declared = U32.unpack_from(data, at)[0]
    if declared != size:
        report.problems.append(
            Problem(
                fn.name, at, f"reflection piece says {declared} bytes, the next RFLT leaves {size}"
            )
        )
        return
    payload = U32.unpack_from(data, at + 8)[0]
    if 16 + payload != size or data[at + 12 + payload : at + 16 + payload].tobytes() != b"ENDT":
        report.problems.append(
            Problem(fn.name, at, f"reflection piece of {size} bytes holds a {payload}-byte RBUF")
        )
        return
    pad = (-(at + 12)) % 16
    if pad > payload or any(data[at + 12 : at + 12 + pad]):
        report.problems.append(Problem(fn.name, at + 12, "reflection padding is not zero"))
