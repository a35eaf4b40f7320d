"""Download figures in a comparison: per-group download on both sides, and the download gates.

``compare --download`` joins the two reports' download shares by group, as ``compare_reports``
joins their bytes; ``--max-download-growth`` and ``--max-download-size`` gate the modelled
download totals (``builder.size.download``) the way ``--max-growth`` and ``--max-size`` gate the
file sizes. Both sides need download figures: a saved report without them is an error (exit 2),
never a gate passed on a missing number.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from builder.errors import UsageError
from builder.size.download_report import group_download

if TYPE_CHECKING:
    from builder.size.compare import Comparison, GateResult, Gates
    from builder.size.report import Report

__all__ = ["download_gates", "group_download_pairs"]


def group_download_pairs(
    base: Report, head: Report
) -> tuple[dict[str, tuple[int, int]], tuple[int, int]] | None:
    """Each group's download bytes on both sides (0 where absent), and the overhead's; None
    unless both reports carry download figures."""
    if base.download is None or head.download is None:
        return None
    b, h = group_download(base), group_download(head)
    pairs = {name: (b.get(name, 0), h.get(name, 0)) for name in dict.fromkeys([*b, *h])}
    return pairs, (base.download.overhead_bytes, head.download.overhead_bytes)


def download_gates(comparison: Comparison, gates: Gates) -> list[GateResult]:
    """``--max-download-growth`` and ``--max-download-size``, when asked for."""
    from builder.size.compare import GateResult

    if gates.max_download_growth is None and gates.max_download_size is None:
        return []
    base, head = comparison.base.download, comparison.head.download
    for side, report in (("base", comparison.base), ("head", comparison.head)):
        if report.download is None:
            raise UsageError(f"{report.source.label}: no download figures for the {side} side "
                             "(no metallib, or a report saved without --download)")  # fmt: skip
    assert base is not None and head is not None
    subject = f"the download of {comparison.head.source.label}"
    results = []
    if gates.max_download_growth is not None:
        allowed = gates.max_download_growth.allowed(base.total)
        grown = head.total - base.total
        percent = 100.0 * grown / base.total if base.total else None
        results.append(GateResult("--max-download-growth", grown <= allowed, subject,
                                  limit=gates.max_download_growth, grown=grown,
                                  allowed=int(allowed), percent=percent))  # fmt: skip
    if gates.max_download_size is not None:
        results.append(GateResult("--max-download-size", head.total <= gates.max_download_size,
                                  subject, max_size=gates.max_download_size, head_size=head.total))  # fmt: skip
    return results
