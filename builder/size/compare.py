"""Compare two reports. Pure data in, pure data out (the gates on a comparison:
``builder.size.verdicts``).

Following bloaty's diff mode, a comparison is two rollups joined by group name into one
(``builder.size.rollup.Rollup``: head's measures and base's); the container overhead is one more
row, so the group deltas add up to the file-size difference exactly. Functions are matched by
name: added = head - base, removed = base - head.

The libraries of two targets are paired by name, then by identity (``pair_reports``); a library
on one side only is compared with nothing on the other (``Comparison.change`` ``added`` or
``removed``): all its bytes are growth, or shrinkage.
"""

from __future__ import annotations

from dataclasses import dataclass, replace
from typing import TYPE_CHECKING, NamedTuple

from builder.size.jit_sizes import method_words, unattributed_bytes, unmeasured_reason
from builder.size.rollup import Rollup, join, overhead_row

if TYPE_CHECKING:
    from builder.size.report import Report
    from builder.size.rollup import FunctionRow

OVERHEAD = "[container overhead]"
"""The row of the container's bytes that no function owns, in a report's, a comparison's and
the presets' tables."""

__all__ = [
    "HOST_REST",
    "HOST_SHARED",
    "HOST_UNMAPPED",
    "OVERHEAD",
    "Comparison",
    "FunctionDelta",
    "JitBreakdown",
    "JitComparison",
    "Pair",
    "by_strings",
    "compare_jit",
    "compare_pair",
    "compare_reports",
    "jit_breakdown",
    "jit_what",
    "pair_reports",
]


@dataclass(frozen=True)
class FunctionDelta:
    name: str
    group: str
    base_bytes: int
    head_bytes: int

    @property
    def delta(self) -> int:
        return self.head_bytes - self.base_bytes


@dataclass(frozen=True)
class JitComparison:
    """The JIT units of two builds joined by name (``builder.size.jit_sizes``).

    Host-library symbol bytes when every side with JIT units had its symbols measured (then
    the rows no unit owns follow as overhead rows and the totals are the host libraries' file
    sizes); otherwise the manifests' embedded source bytes on both sides, so like is compared
    with like. A side without JIT units counts as zero."""

    groups: list[Rollup]
    """Units by absolute delta, largest first (a unit's kernels are its function count);
    then the host-library overhead rows."""
    base_total: int
    head_total: int
    host_measured: bool
    base_origin: str | None
    head_origin: str | None
    new_units: list[str]
    """Units JIT in head but not in base."""

    @property
    def delta(self) -> int:
        return self.head_total - self.base_total

    @property
    def percent(self) -> float | None:
        return 100.0 * self.delta / self.base_total if self.base_total else None


@dataclass(frozen=True)
class Comparison:
    base: Report
    head: Report
    groups: list[Rollup]
    """Groups by absolute delta, largest first; the overhead row last."""
    added: list[FunctionRow]
    """Head functions missing from base, largest first."""
    removed: list[FunctionRow]
    """Base functions missing from head, largest first."""
    changed: list[FunctionDelta]
    """Functions in both whose size changed, by absolute delta."""
    jit: JitComparison | None = None
    """The JIT units of either side, measured in the host libraries (None: no JIT unit)."""
    change: str = "paired"
    """``paired``; ``added``: the library is in head only, and ``base`` is nothing (no bytes,
    no functions, its source head's); ``removed``: in base only, ``head`` is nothing."""

    @property
    def library(self) -> Report:
        """The side that holds the library: head, or base for a removed one."""
        return self.base if self.change == "removed" else self.head

    def holds(self, side: Report) -> bool:
        """Whether ``side`` (``base`` or ``head``) holds the library: both, when paired."""
        return self.change == "paired" or side is self.library

    @property
    def jit_only(self) -> bool:
        """Neither side has a metallib (every unit JIT): the host library is what was measured
        and what the gates apply to."""
        return (
            self.jit is not None
            and self.base.source.path is None
            and (self.head.source.path is None)
        )

    @property
    def delta(self) -> int:
        return self.head.file_size - self.base.file_size

    @property
    def percent(self) -> float | None:
        return 100.0 * self.delta / self.base.file_size if self.base.file_size else None

    @property
    def notes(self) -> list[str]:
        """Caveats a reader of the deltas should know (e.g. the two sides grouped differently)."""
        base, head = self.base, self.head
        if (base.by, base.grouping) == (head.by, head.grouping):
            return []
        note = (
            f"base is grouped by {base.by} ({base.grouping}) and head by {head.by} "
            f"({head.grouping}); group deltas compare different groupings"
        )
        return [note]

    @property
    def download_delta(self) -> int | None:
        """Head's modelled download minus base's (None unless both were measured)."""
        base, head = self.base.download, self.head.download
        return None if base is None or head is None else head.total - base.total

    @property
    def download_percent(self) -> float | None:
        delta, base = self.download_delta, self.base.download
        return (
            None if delta is None or base is None or not base.total else 100.0 * delta / base.total
        )

    @property
    def new_groups(self) -> list[str]:
        return [g.name for g in self.groups if not g.overhead and g.base_function_count == 0]


def compare_reports(base: Report, head: Report) -> Comparison:
    """Join two reports by group (the container overhead one more row) and by function name."""
    downloads = base.download is not None and head.download is not None

    def rows(report: Report) -> list[Rollup]:
        dl = report.download.overhead_bytes if report.download else None
        return [*report.groups, overhead_row(OVERHEAD, report.overhead_bytes, dl)]

    groups = join(rows(base), rows(head), downloads=downloads)
    base_fns = {f.name: f for f in base.functions}
    head_fns = {f.name: f for f in head.functions}
    added = sorted((f for n, f in head_fns.items() if n not in base_fns), key=_largest)
    removed = sorted((f for n, f in base_fns.items() if n not in head_fns), key=_largest)
    changed = [
        FunctionDelta(n, f.group, base_fns[n].bytes, f.bytes)
        for n, f in head_fns.items()
        if n in base_fns and base_fns[n].bytes != f.bytes
    ]
    changed.sort(key=lambda d: (-abs(d.delta), d.name))
    return Comparison(base, head, groups, added, removed, changed, compare_jit(base, head))


def compare_jit(base: Report, head: Report) -> JitComparison | None:
    """Join the JIT units of two reports (None when neither has any)."""

    sides = [jit_breakdown(r) for r in (base, head)]
    if sides == [None, None]:
        return None
    host = all(side.host_measured for side in sides if side is not None)
    b, h = jit_breakdown(base, host=host), jit_breakdown(head, host=host)
    groups = join([*b.units, *b.overhead] if b else [], [*h.units, *h.overhead] if h else [])
    known = {r.name for r in b.units} if b else set()
    return JitComparison(
        groups,
        b.total if b else 0,
        h.total if h else 0,
        host,
        b.origin if b else None,
        h.origin if h else None,
        [r.name for r in h.units if r.name not in known] if h else [],
    )


def _largest(fn: FunctionRow) -> tuple[int, str]:
    return (-fn.bytes, fn.name)


def compare_pair(base: Report | None, head: Report | None) -> Comparison:
    """``compare_reports`` of a pair from ``pair_reports``: a library on one side only is
    compared with nothing (``Comparison.change``)."""
    if base is not None and head is not None:
        return compare_reports(base, head)
    if head is not None:
        return replace(compare_reports(_nothing(head), head), change="added")
    assert base is not None
    return replace(compare_reports(base, _nothing(base)), change="removed")


def _nothing(present: Report) -> Report:
    """The other side of a library that one side lacks: no bytes, no functions, no JIT units,
    named by the library it stands against, its download (when measured) nothing either."""
    from builder.size.report import Download

    download = present.download
    if download is not None:
        download = Download(0, [], [], download.model)
    return replace(
        present,
        file_size=0,
        functions=[],
        groups=[],
        overhead=[],
        jit_units=[],
        host_library=None,
        provenance={},
        download=download,
    )


Pair = tuple["Report | None", "Report | None"]
"""Two libraries that are one across two targets; None on the side that lacks it."""


def pair_reports(base: list[Report], head: list[Report]) -> list[Pair]:
    """Match the libraries of two targets, each at most once:

    1. by name (``Source.member``: a wheel path, ``BINARY#IDENTITY``; else the file's path);
    2. left over, by identity alone (a symbol or section, not an ordinal) that names one
       library on each side: the same library in a binary of another name (torch's dylib
       copied under another file name);
    3. one library on each side in all (two files given themselves) pairs directly, unless
       each is named by its own symbol or section and those differ.

    Paired first (in base's order), then head's libraries base lacks, ``(None, head)``, then
    base's that head lacks, ``(base, None)``: none is dropped, so no gate skips one."""
    pairs: list[tuple[Report, Report]] = []
    left_base, left_head = list(base), list(head)
    for key in (_name, _identity):
        head_keys = [key(r) for r in left_head]
        base_keys = [key(r) for r in left_base]
        for b, k in zip(list(left_base), base_keys, strict=True):
            if k is None or base_keys.count(k) > 1 or head_keys.count(k) != 1:
                continue
            h = left_head[head_keys.index(k)]
            pairs.append((b, h))
            left_base.remove(b)
            head_keys.pop(left_head.index(h))
            left_head.remove(h)
    if len(base) == len(head) == 1 and left_base and left_head:
        b, h = left_base[0], left_head[0]
        if _identity(b) is None or _identity(h) is None:
            pairs.append((b, h))
            left_base, left_head = [], []
    order = {id(r): n for n, r in enumerate(base)}
    pairs.sort(key=lambda pair: order[id(pair[0])])
    return [
        *pairs,
        *((None, h) for h in left_head),
        *((b, None) for b in left_base),
    ]


def _name(report: Report) -> str | None:
    return report.source.member or report.source.path


def _identity(report: Report) -> str | None:
    """The identity that names the library across binaries: a symbol or a section (an ordinal
    only says where it is in its own binary)."""
    from builder.metallib.binary_sections import is_ordinal

    identity = report.source.identity
    return None if identity is None or is_ordinal(identity) else identity


# ---------------------------------------------------------------------------------------------
# A report's JIT units as rows that add up, with the sentence saying what was measured. The rows
# are ``Rollup`` nodes like a report's groups (a unit's kernels are its function count, the
# host-library bytes no unit owns are overhead rows), so a comparison joins them as it joins
# groups. ``JitBreakdown.origin`` is the sentence every rendering prints with these rows.

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
    from builder.size.host_strings import STRINGS_METHOD  # not on the report path

    library = report.host_library
    manifest = report.source.manifest or "(no manifest path)"
    why = unmeasured_reason(library, jit) if host else "the other side's symbols could not be read"
    if library is not None and why is None and library.measured_by == STRINGS_METHOD:
        rows = [_row(j.name, j.kernel_count, j.host_bytes or 0, j.embedded_bytes) for j in jit]
        overhead = [overhead_row(HOST_REST, unattributed_bytes(library, jit))]
        total = library.file_size
        tree = report.grouping.partition(":")[2] if report.grouping.startswith("discovery:") else ""
        origin = (
            f"each run-time source's string (a const char* function's literal in __cstring or "
            f".rodata, NUL included; or a Metal translation unit found by its text) in the host "
            f"library {library.path}, not metallib bytes"
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


def jit_what(host_measured: bool) -> str:
    """What a JIT total measures: the host library's symbols, or the embedded source."""
    return "JIT host library" if host_measured else "embedded JIT source"


def by_strings(report: Report) -> bool:
    """``report`` is of a shipped host library, its rows run-time sources found in the binary
    (``builder.size.host_strings``), not a build's units."""
    from builder.size.host_strings import STRINGS_METHOD

    host = report.host_library
    return host is not None and host.measured_by == STRINGS_METHOD
