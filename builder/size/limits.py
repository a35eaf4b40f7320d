"""Size limits as users write them for CI gates: ``10KB``, ``2.5MiB``, ``5%``, and what a
whole-target limit is checked against (``shipped_size``: the metallib plus the host library).

Gates are given on the command line in whatever unit is convenient: sizes are read by
``builder.files.bounds.parse_size`` (decimal and binary suffixes, a bare number is bytes).
Showing a limit is presentation's job (``builder.render.text.limit_text``).
"""

from __future__ import annotations

import math
from typing import TYPE_CHECKING, NamedTuple

from builder.errors import UsageError
from builder.files.bounds import parse_size

if TYPE_CHECKING:
    from builder.size.report import Report

__all__ = [
    "Limit",
    "parse_limit",
    "parse_size",
    "shipped_size",
]  # parse_size: builder.files.bounds,
# shared with the bounds on untrusted input


class Limit(NamedTuple):
    """A growth limit: either an absolute byte count or a percentage of the base size."""

    bytes: int | None = None
    percent: float | None = None

    def allowed(self, base_size: int) -> float:
        """The largest allowed growth in bytes for a base of ``base_size`` bytes."""
        if self.percent is not None:
            return base_size * self.percent / 100.0
        return float(self.bytes or 0)


def parse_limit(text: str) -> Limit:
    """``"5%"`` -> Limit(percent=5); ``"100KB"`` -> Limit(bytes=100000).

    A percentage is a finite number: ``nan%`` or ``inf%`` would pass or fail every gate without
    saying so (and cannot be shown as bytes), so they are refused like any other bad text."""
    stripped = text.strip()
    if stripped.endswith("%"):
        try:
            percent = float(stripped[:-1])
        except ValueError:
            percent = math.nan
        if not math.isfinite(percent):
            raise UsageError(f"{text!r} is not a percentage")
        return Limit(percent=percent)
    return Limit(bytes=parse_size(stripped))


def shipped_size(report: Report) -> int:
    """Bytes of everything ``report``'s library ships: the metallib file plus, for a build with JIT
    families, its host library file (``--max-total-size``, budgets' ``max-total-size``).

    A build whose manifest names JIT families but whose host library was not found cannot be
    measured: UsageError (exit 2), so a gate never passes on the metallib alone."""
    if not report.jit_families:
        return report.file_size
    if report.host_library is None:
        raise UsageError(
            f"{report.source.label}: has JIT families but its host library was not "
            "found; cannot measure everything it ships"
        )
    return report.file_size + report.host_library.file_size
