"""Compare two reports and decide the size gates. Pure data in, pure data out.

Following bloaty's diff mode, a comparison is two rollups joined by group name into one
(``builder.size.rollup.Rollup``: head's measures and base's); the container overhead is one more
row, so the group deltas add up to the file-size difference exactly. Functions are matched by
name: added = head - base, removed = base - head.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import TYPE_CHECKING

from builder.size.limits import Limit, shipped_size
from builder.size.rollup import Rollup

if TYPE_CHECKING:
    from builder.size.report import Report
    from builder.size.rollup import FunctionRow

__all__ = [
    "Comparison",
    "FunctionDelta",
    "GateResult",
    "Gates",
    "JitComparison",
    "compare_jit",
    "compare_reports",
    "evaluate_gates",
    "shipped_sizes",
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
    """The JIT families of two builds joined by name (``builder.size.jit_sizes``).

    Host-library symbol bytes when every side with JIT families had its symbols measured (then
    the rows no family owns follow as overhead rows and the totals are the host libraries' file
    sizes); otherwise the manifests' embedded source bytes on both sides, so like is compared
    with like. A side without JIT families counts as zero."""

    groups: list[Rollup]
    """Families by absolute delta, largest first (a family's kernels are its function count);
    then the host-library overhead rows."""
    base_total: int
    head_total: int
    host_measured: bool
    base_origin: str | None
    head_origin: str | None
    new_families: list[str]
    """Families JIT in head but not in base."""

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
    """The JIT families of either side, measured in the host libraries (None: no JIT family)."""

    @property
    def jit_only(self) -> bool:
        """Neither side has a metallib (every family JIT): the host library is what was measured
        and what the gates apply to."""
        return (
            self.jit is not None
            and self.base.source.path is None
            and (self.head.source.path is None)
        )

    @property
    def base_size(self) -> int:
        return self.base.file_size

    @property
    def head_size(self) -> int:
        return self.head.file_size

    @property
    def delta(self) -> int:
        return self.head.file_size - self.base.file_size

    @property
    def percent(self) -> float | None:
        return 100.0 * self.delta / self.base_size if self.base_size else None

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
    """Join two reports by group and by function name."""
    base_groups = {g.name: g for g in base.groups}
    head_groups = {g.name: g for g in head.groups}
    downloads = base.download is not None and head.download is not None

    def download(side: Rollup | None) -> int | None:
        """A group's download bytes, 0 where it is absent; None unless both sides have them."""
        return ((side.download_bytes or 0) if side else 0) if downloads else None

    groups = []
    for name in dict.fromkeys([*base_groups, *head_groups]):
        b, h = base_groups.get(name), head_groups.get(name)
        groups.append(
            Rollup(
                name,
                h.function_count if h else 0,
                h.bytes if h else 0,
                h.bitcode_bytes if h else 0,
                download(h),
                base_function_count=b.function_count if b else 0,
                base_bytes=b.bytes if b else 0,
                base_download_bytes=download(b),
            )
        )
    groups.sort(key=lambda g: (-abs(g.delta), -g.bytes, g.name))
    groups.append(
        Rollup(
            "[container overhead]",
            0,
            head.overhead_bytes,
            0,
            head.download.overhead_bytes if downloads and head.download else None,
            base_function_count=0,
            base_bytes=base.overhead_bytes,
            base_download_bytes=base.download.overhead_bytes
            if downloads and base.download
            else None,
            overhead=True,
        )
    )
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
    """Join the JIT families of two reports (None when neither has any)."""
    from builder.size.jit_rows import jit_breakdown

    sides = [jit_breakdown(r) for r in (base, head)]
    if sides == [None, None]:
        return None
    host = all(side.host_measured for side in sides if side is not None)
    b, h = jit_breakdown(base, host=host), jit_breakdown(head, host=host)
    b_rows = {r.name: r for r in b.families} if b else {}
    h_rows = {r.name: r for r in h.families} if h else {}
    groups = []
    for name in dict.fromkeys([*b_rows, *h_rows]):
        br, hr = b_rows.get(name), h_rows.get(name)
        groups.append(
            Rollup(
                name,
                hr.kernel_count if hr else 0,
                hr.bytes if hr else 0,
                0,
                base_function_count=br.kernel_count if br else 0,
                base_bytes=br.bytes if br else 0,
            )
        )
    groups.sort(key=lambda g: (-abs(g.delta), -g.bytes, g.name))
    b_over = {o.name: o.bytes for o in b.overhead} if b else {}
    h_over = {o.name: o.bytes for o in h.overhead} if h else {}
    for name in dict.fromkeys([*b_over, *h_over]):
        groups.append(
            Rollup(
                name,
                0,
                h_over.get(name, 0),
                0,
                base_function_count=0,
                base_bytes=b_over.get(name, 0),
                overhead=True,
            )
        )
    return JitComparison(
        groups,
        b.total if b else 0,
        h.total if h else 0,
        host,
        b.origin if b else None,
        h.origin if h else None,
        [name for name in h_rows if name not in b_rows],
    )


def _largest(fn: FunctionRow) -> tuple[int, str]:
    return (-fn.bytes, fn.name)


@dataclass(frozen=True)
class Gates:
    """The CI gates; all optional. A comparison passes when every given gate passes."""

    max_growth: Limit | None = None
    max_size: int | None = None
    fail_on_new_group: bool = False
    max_total_size: int | None = None
    """The metallib plus the host library (``builder.size.limits.shipped_size``)."""
    max_download_growth: Limit | None = None
    """On the modelled download (``builder.size.download_compare``)."""
    max_download_size: int | None = None


@dataclass(frozen=True)
class GateResult:
    """One gate's verdict and the numbers it was decided on; presentation words them
    (``builder.render.text.gate_message``)."""

    name: str
    """The option that asked for the gate: ``--max-growth``, ``--max-size``,
    ``--max-total-size``, ``--fail-on-new-group``."""
    passed: bool
    subject: str
    """What was gated: the head library's label, or the JIT side of it when neither side has a
    metallib, or what it ships (metallib + JIT host library)."""
    limit: Limit | None = None
    """``--max-growth`` as given."""
    max_size: int | None = None
    grown: int = 0
    allowed: int = 0
    percent: float | None = None
    head_size: int = 0
    new_groups: tuple[str, ...] = ()


def shipped_sizes(comparison: Comparison) -> tuple[int, int, str]:
    """Base and head bytes of everything each side ships, and what that is: growth gates count the
    host library of a build with JIT families, not only its metallib.

    The host libraries' file sizes when every side with JIT families has one on disk; otherwise
    the JIT side as ``compare_jit`` measured it on both sides (embedded source bytes), like with
    like."""
    base, head, jit = comparison.base, comparison.head, comparison.jit
    if jit is None:
        return base.file_size, head.file_size, "metallib"
    metallib = "" if comparison.jit_only else "metallib + "
    if all(r.host_library is not None for r in (base, head) if r.jit_families):
        return shipped_size(base), shipped_size(head), f"{metallib}JIT host library"
    return (
        base.file_size + jit.base_total,
        head.file_size + jit.head_total,
        f"{metallib}embedded JIT source",
    )


def evaluate_gates(comparison: Comparison, gates: Gates) -> list[GateResult]:
    """Check each gate that was asked for, keeping the measured sizes it was checked against."""
    results = []
    label = comparison.head.source.label
    head_label = label
    head_size, new = comparison.head_size, comparison.new_groups
    jit = comparison.jit
    if comparison.jit_only and jit is not None:  # no metallib on either side: gate the JIT side
        what = "JIT host library" if jit.host_measured else "embedded JIT source"
        head_label = f"the {what} of {label}"
        head_size, new = jit.head_total, jit.new_families
    if gates.max_growth is not None:
        base_all, head_all, what = shipped_sizes(comparison)
        grown = head_all - base_all
        allowed = gates.max_growth.allowed(base_all)
        subject = (
            label
            if jit is None
            else f"the {what} of {label}"
            if comparison.jit_only
            else f"{label} ({what})"
        )
        results.append(
            GateResult(
                "--max-growth",
                grown <= allowed,
                subject,
                limit=gates.max_growth,
                grown=grown,
                allowed=int(allowed),
                percent=100.0 * grown / base_all if base_all else None,
            )
        )
    if gates.max_size is not None:
        results.append(
            GateResult(
                "--max-size",
                head_size <= gates.max_size,
                head_label,
                max_size=gates.max_size,
                head_size=head_size,
            )
        )
    if gates.max_total_size is not None:
        total = shipped_size(comparison.head)
        subject = f"{label} (metallib + JIT host library)" if jit is not None else label
        results.append(
            GateResult(
                "--max-total-size",
                total <= gates.max_total_size,
                subject,
                max_size=gates.max_total_size,
                head_size=total,
            )
        )
    if gates.fail_on_new_group:
        results.append(
            GateResult("--fail-on-new-group", not new, head_label, new_groups=tuple(new))
        )
    if gates.max_download_growth is not None or gates.max_download_size is not None:
        from builder.size.download_compare import download_totals

        base_dl, head_dl = download_totals(comparison.base, comparison.head)
        subject = f"the download of {head_label}"
        if gates.max_download_growth is not None:
            allowed = gates.max_download_growth.allowed(base_dl)
            results.append(
                GateResult(
                    "--max-download-growth",
                    head_dl - base_dl <= allowed,
                    subject,
                    limit=gates.max_download_growth,
                    grown=head_dl - base_dl,
                    allowed=int(allowed),
                    percent=comparison.download_percent,
                )
            )
        if gates.max_download_size is not None:
            results.append(
                GateResult(
                    "--max-download-size",
                    head_dl <= gates.max_download_size,
                    subject,
                    max_size=gates.max_download_size,
                    head_size=head_dl,
                )
            )
    return results


def pair_reports(base: list[Report], head: list[Report]) -> list[tuple[Report, Report]]:
    """Match the libraries of two targets: one each pairs directly, otherwise by member path.

    Raises UsageError (exit 2) when a library has no partner, so a gate never silently skips one.
    """
    from builder.errors import UsageError

    if len(base) == 1 and len(head) == 1:
        return [(base[0], head[0])]
    base_by = {r.source.member or r.source.path: r for r in base}
    head_by = {r.source.member or r.source.path: r for r in head}
    missing = sorted(set(base_by) ^ set(head_by), key=str)
    if missing:
        raise UsageError(
            "cannot pair the libraries of base and head; unmatched: "
            + ", ".join(str(m) for m in missing)
        )
    return [(base_by[key], head_by[key]) for key in base_by]
