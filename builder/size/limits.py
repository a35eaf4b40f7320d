"""Size limits as users write them for CI gates: ``10KB``, ``2.5MiB``, ``5%``, and what a
whole-target limit is checked against (``shipped_size``: the metallib plus the host library).

Gates are given on the command line in whatever unit is convenient: sizes are read by
``builder.files.bounds.parse_size`` (decimal and binary suffixes, a bare number is bytes).
Showing a limit is presentation's job (``builder.render.text.limit_text``).
"""

from __future__ import annotations

import math
import re
from typing import TYPE_CHECKING, NamedTuple

from builder.errors import UsageError
from builder.files.bounds import LARGEST_COUNT, brief, parse_size

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


class Limit(NamedTuple):
    """A growth limit: either an absolute byte count or a percentage of the base size."""

    bytes: int | None = None
    percent: float | None = None

    def allowed(self, base_size: int) -> float:
        """The largest allowed growth in bytes for a base of ``base_size`` bytes."""
        if self.percent is not None:
            return base_size * self.percent / 100.0
        return float(self.bytes or 0)


LARGEST_PERCENT = 1_000_000.0
"""The largest growth percentage (ten thousand times the base): anything larger is a typo, and
``1e308%`` of a base would be infinity bytes."""

_PERCENT = re.compile(r"^\s*(?P<num>[+-]?(?:\d+(?:\.\d*)?|\.\d+))\s*%\s*$")


def parse_limit(text: str) -> Limit:
    """``"5%"`` -> Limit(percent=5); ``"100KB"`` -> Limit(bytes=100000).

    A percentage is a plain decimal number from 0 to :data:`LARGEST_PERCENT`: ``nan%``, ``inf%``
    or ``1e308%`` would pass or fail every gate without saying so (or overflow when turned into
    bytes), so they are refused like any other bad text. A growth limit is not negative, in
    bytes or in percent: one would fail on every library that did not shrink, a verdict of
    exit 1 that no change to the library can be meant to earn."""
    stripped = text.strip()
    if stripped.endswith("%"):
        match = _PERCENT.match(stripped) if len(stripped) < 100 else None
        percent = float(match["num"]) if match else math.nan
        if not 0 <= percent <= LARGEST_PERCENT:
            raise UsageError(
                f"{brief(text)} is not a percentage from 0% to {LARGEST_PERCENT:,.0f}%"
                if math.isnan(percent) or percent > 0
                else f"{text!r}: a growth limit must not be negative"
            )
        return Limit(percent=percent)
    return Limit(bytes=growth_bytes(parse_size(stripped), text))


def growth_bytes(value: int, shown: object) -> int:
    """``value`` as a growth limit in bytes: UsageError when it is negative (``shown`` is how the
    user wrote it) or past :data:`~builder.files.bounds.LARGEST_COUNT`."""
    if value < 0:
        raise UsageError(f"{brief(shown)}: a growth limit must not be negative")
    if value > LARGEST_COUNT:
        raise UsageError(f"{brief(shown)} is more than {LARGEST_COUNT:,} bytes")
    return value


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
