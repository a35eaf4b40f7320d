"""Download figures in a comparison: per-group download on both sides, and the totals the
download gates check (``compare --download``, ``--max-download-growth``, ``--max-download-size``).

``compare_reports`` joins the two reports' download shares by group as it joins their bytes.
A gate on download needs figures on both sides: a side without them (a report saved without
``--download``, a build with no metallib) is an error (exit 2), never a gate passed on a number
that was not measured.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from builder.errors import UsageError

if TYPE_CHECKING:
    from builder.size.report import Report

__all__ = ["download_totals", "group_download_pairs"]


def group_download_pairs(
    base: Report, head: Report
) -> tuple[dict[str, tuple[int, int]], tuple[int, int]] | None:
    """Each group's download bytes on both sides (0 where absent), and the overhead's; None
    unless both reports carry download figures."""
    if base.download is None or head.download is None:
        return None
    b = {g.name: g.download_bytes or 0 for g in base.groups}
    h = {g.name: g.download_bytes or 0 for g in head.groups}
    pairs = {name: (b.get(name, 0), h.get(name, 0)) for name in dict.fromkeys([*b, *h])}
    return pairs, (base.download.overhead_bytes, head.download.overhead_bytes)


def download_totals(base: Report, head: Report) -> tuple[int, int]:
    """The modelled download of both sides, for the download gates."""
    for side, report in (("base", base), ("head", head)):
        if report.download is None:
            raise UsageError(
                f"{report.source.label}: no download figures for the {side} side "
                "(no metallib, or a report saved without --download)"
            )
    assert base.download is not None and head.download is not None
    return base.download.total, head.download.total
