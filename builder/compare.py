"""Compare two reports and decide the size gates. Pure data in, pure data out.

Following bloaty's diff mode, a comparison is two rollups joined by group name and subtracted;
the container overhead is one more row, so the group deltas add up to the file-size difference
exactly. Functions are matched by name: added = head - base, removed = base - head.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import TYPE_CHECKING

from builder.sizes import Limit, human_delta, human_size

if TYPE_CHECKING:
    from builder.report import FunctionRow, Report

__all__ = [
    "Comparison",
    "FunctionDelta",
    "GateResult",
    "Gates",
    "GroupDelta",
    "compare_reports",
    "evaluate_gates",
]


@dataclass(frozen=True)
class GroupDelta:
    """One group on both sides; ``overhead`` marks the container-overhead row."""

    name: str
    base_bytes: int
    head_bytes: int
    base_count: int
    head_count: int
    overhead: bool = False

    @property
    def delta(self) -> int:
        return self.head_bytes - self.base_bytes

    @property
    def percent(self) -> float | None:
        """Growth relative to base; None for a group that is new in head."""
        return 100.0 * self.delta / self.base_bytes if self.base_bytes else None


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
class Comparison:
    base: Report
    head: Report
    groups: list[GroupDelta]
    """Groups by absolute delta, largest first; the overhead row last."""
    added: list[FunctionRow]
    """Head functions missing from base, largest first."""
    removed: list[FunctionRow]
    """Base functions missing from head, largest first."""
    changed: list[FunctionDelta]
    """Functions in both whose size changed, by absolute delta."""

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
    def new_groups(self) -> list[str]:
        return [g.name for g in self.groups if not g.overhead and g.base_count == 0]


def compare_reports(base: Report, head: Report) -> Comparison:
    """Join two reports by group and by function name."""
    base_groups = {g.name: g for g in base.groups}
    head_groups = {g.name: g for g in head.groups}
    groups = []
    for name in dict.fromkeys([*base_groups, *head_groups]):
        b, h = base_groups.get(name), head_groups.get(name)
        groups.append(
            GroupDelta(
                name,
                b.bytes if b else 0,
                h.bytes if h else 0,
                b.function_count if b else 0,
                h.function_count if h else 0,
            )
        )
    groups.sort(key=lambda g: (-abs(g.delta), -g.head_bytes, g.name))
    groups.append(GroupDelta("[container overhead]", base.overhead_bytes, head.overhead_bytes,
                             0, 0, overhead=True))  # fmt: skip
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
    return Comparison(base, head, groups, added, removed, changed)


def _largest(fn: FunctionRow) -> tuple[int, str]:
    return (-fn.bytes, fn.name)


@dataclass(frozen=True)
class Gates:
    """The CI gates; all optional. A comparison passes when every given gate passes."""

    max_growth: Limit | None = None
    max_size: int | None = None
    fail_on_new_group: bool = False


@dataclass(frozen=True)
class GateResult:
    name: str
    passed: bool
    message: str


def evaluate_gates(comparison: Comparison, gates: Gates) -> list[GateResult]:
    """Check each gate that was asked for; the message says what was measured against what."""
    results = []
    head_label = comparison.head.source.label
    if gates.max_growth is not None:
        allowed = gates.max_growth.allowed(comparison.base_size)
        grown = comparison.delta
        pct = f" ({comparison.percent:+.2f}%)" if comparison.percent is not None else ""
        results.append(
            GateResult(
                "--max-growth",
                grown <= allowed,
                f"--max-growth {gates.max_growth}: {head_label} grew by {human_delta(grown)}"
                f"{pct}; allowed {human_size(int(allowed))}",
            )
        )
    if gates.max_size is not None:
        results.append(
            GateResult(
                "--max-size",
                comparison.head_size <= gates.max_size,
                f"--max-size {human_size(gates.max_size)}: {head_label} is "
                f"{human_size(comparison.head_size)} ({comparison.head_size:,} bytes)",
            )
        )
    if gates.fail_on_new_group:
        new = comparison.new_groups
        results.append(
            GateResult(
                "--fail-on-new-group",
                not new,
                "--fail-on-new-group: "
                + (f"new groups in head: {', '.join(new)}" if new else "no new groups"),
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
