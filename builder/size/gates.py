"""The size gates of ``compare`` (and the growth limits of ``budget``): numbers checked on a
``builder.size.compare.Comparison``. Pure data in, pure data out; ``builder.render.text`` words
the results.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import TYPE_CHECKING

from builder.size.limits import Limit, shipped_size

if TYPE_CHECKING:
    from builder.size.compare import Comparison

__all__ = ["GateResult", "Gates", "evaluate_gates", "shipped_sizes"]


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
