"""Download figures in a comparison: the totals the download gates check (``compare
--download``, ``--max-download-growth``, ``--max-download-size``).

``compare_reports`` joins the two reports' download shares by group as it joins their bytes
(each group's ``download_bytes`` and ``base_download_bytes``, ``builder.size.rollup.Rollup``).
A gate on download needs figures on both sides: a side without them (a report saved without
``--download``, a build with no metallib) is an error (exit 2), never a gate passed on a number
that was not measured.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from builder.errors import UsageError

if TYPE_CHECKING:
    from builder.size.report import Report

__all__ = ["download_totals"]


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
