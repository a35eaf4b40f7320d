"""A report's JIT units as rows that add up, with the sentence saying what was measured.

The rows are ``builder.size.rollup.Rollup`` nodes like a report's groups (a unit's kernels are
its function count, the host-library bytes no unit owns are overhead rows), so a comparison
joins them as it joins groups. ``JitBreakdown.origin`` is the sentence every rendering prints
with these rows.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, NamedTuple

from builder.size.host_strings import STRINGS_METHOD
from builder.size.jit_sizes import method_words, unattributed_bytes, unmeasured_reason
from builder.size.rollup import Rollup, overhead_row

if TYPE_CHECKING:
    from builder.size.report import Report

__all__ = [
    "HOST_REST",
    "HOST_SHARED",
    "HOST_UNMAPPED",
    "JitBreakdown",
    "by_strings",
    "jit_breakdown",
]

HOST_SHARED = "[runtime, shared]"
HOST_UNMAPPED = "[not in any symbol]"
HOST_REST = "[rest of the host library]"
"""A shipped host library measured by its run-time sources: the bytes of no such source."""


class JitBreakdown(NamedTuple):
    """JIT units as rows that add up to ``total``, with the sentence saying what they are.

    Measured (``host_measured``): symbol bytes per unit plus ``overhead`` (shared symbols, bytes
    in no symbol), and ``total`` is the host library's file size. Otherwise: the manifest's
    embedded source bytes, ``overhead`` empty and ``total`` their sum.
    """

    units: list[Rollup]
    """Largest first (ties by name); ``bytes`` are host-library symbol bytes when measured, else
    the manifest's embedded source bytes; ``embedded_bytes`` always the latter."""
    overhead: list[Rollup]
    total: int
    host_measured: bool
    origin: str


def jit_breakdown(report: Report, *, host: bool = True) -> JitBreakdown | None:
    """The JIT units of ``report`` as rows (None when it has none); ``host=False`` takes the
    manifest's embedded bytes even when symbol sizes were measured (to compare like with like
    against a side whose symbols could not be read)."""
    jit = report.jit_units
    if not jit:
        return None
    library = report.host_library
    manifest = report.source.manifest or "(no manifest path)"
    why = unmeasured_reason(library, jit) if host else "the other side's symbols could not be read"
    if library is not None and why is None and library.measured_by == STRINGS_METHOD:
        rows = [_row(j.name, j.kernel_count, j.host_bytes or 0, j.embedded_bytes) for j in jit]
        overhead = [overhead_row(HOST_REST, unattributed_bytes(library, jit))]
        total = library.file_size
        tree = report.grouping.partition(":")[2] if report.grouping.startswith("discovery:") else ""
        origin = (
            f"each run-time source's string (a const char* function's __cstring literal, NUL "
            f"included) in the host library {library.path}, not metallib bytes"
            + (f"; named by the headers of {tree}" if tree else "")
        )
    elif library is not None and why is None:
        rows = [_row(j.name, j.kernel_count, j.host_bytes or 0, j.embedded_bytes) for j in jit]
        overhead = [
            overhead_row(HOST_SHARED, library.shared_bytes or 0),
            overhead_row(HOST_UNMAPPED, unattributed_bytes(library, jit)),
        ]
        total = library.file_size
        origin = (
            f"symbol sizes ({method_words(library.measured_by or '')}) in the host library "
            f"{library.path}, not metallib bytes; embedded source bytes per build "
            f"manifest {manifest}"
        )
    else:
        rows = [_row(j.name, j.kernel_count, j.embedded_bytes, j.embedded_bytes) for j in jit]
        overhead, total = [], sum(r.bytes for r in rows)
        origin = f"embedded source bytes per build manifest {manifest} ({why}), not metallib bytes"
    rows.sort(key=lambda r: (-r.bytes, r.name))
    return JitBreakdown(rows, overhead, total, why is None, origin)


def _row(name: str, kernels: int, size: int, embedded: int) -> Rollup:
    return Rollup(name, kernels, size, 0, embedded_bytes=embedded)


def by_strings(report: Report) -> bool:
    """``report`` is of a shipped host library, its rows run-time sources found in the binary
    (``builder.size.host_strings``), not a build's units."""
    host = report.host_library
    return host is not None and host.measured_by == STRINGS_METHOD
