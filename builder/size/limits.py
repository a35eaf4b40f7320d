"""Size limits as users write them for CI gates: ``10KB``, ``2.5MiB``, ``5%``, and what a
whole-target limit is checked against (``shipped_size``: the metallib plus the host library).

Gates are given on the command line and in budget files in whatever unit is convenient: sizes
are read by ``builder.files.bounds.parse_size`` (decimal and binary suffixes, a bare number is
bytes), limits by their settings' checks (``builder.settings.checks``: ``Limit``,
``parse_limit``), re-exported here.
Showing a limit is presentation's job (``builder.render.text.limit_text``).
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from builder.errors import UsageError
from builder.files.bounds import parse_size
from builder.settings.checks import LARGEST_PERCENT, Limit, growth_bytes, parse_limit

if TYPE_CHECKING:
    from builder.size.report import Report

__all__ = [
    "LARGEST_PERCENT",
    "Limit",
    "growth_bytes",
    "parse_limit",
    "parse_size",
    "shipped_size",
]  # parse_size: builder.files.bounds,
# shared with the bounds on untrusted input


def shipped_size(report: Report) -> int:
    """Bytes of everything ``report``'s library ships: the metallib file plus, for a build with JIT
    units, its host library file (``--max-total-size``, budgets' ``max-total-size``).

    A build whose manifest names JIT units but whose host library was not found cannot be
    measured: UsageError (exit 2), so a gate never passes on the metallib alone."""
    if not report.jit_units:
        return report.file_size
    if report.host_library is None:
        raise UsageError(
            f"{report.source.label}: has JIT units but its host library was not "
            "found; cannot measure everything it ships"
        )
    return report.file_size + report.host_library.file_size
