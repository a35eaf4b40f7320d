"""The verdict of one limit (``Verdict``): what ``compare``'s gates and ``budget``'s limits
return, and what every view words (``builder.render.text.gate_message``). Its own module so that
the checks of each kind (``builder.size.verdicts`` for sizes, ``builder.size.content_gates`` for
what a library holds) share it without importing each other; ``builder.size.verdicts``
re-exports it.
"""

from __future__ import annotations

from dataclasses import dataclass

from builder.settings.validators import Limit

__all__ = ["Verdict", "version_key"]


@dataclass(frozen=True)
class Verdict:
    """One limit and the value it was checked against: passed or not (a gate's or a budget's)."""

    name: str
    """``max-size``, ``max-total-size``, ``max-download-size``, ``max-functions``, ``groups``,
    ``max-growth``, ``max-download-growth`` or ``fail-on-new-group``."""
    subject: str
    """What was checked: a budget's name, or for a gate the head library's label (the JIT side of
    it when neither side has a metallib, or what it ships: metallib + JIT host library)."""
    limit: int
    """Bytes allowed (functions for ``max-functions``, new groups for ``fail-on-new-group``); for
    a growth limit the growth allowed in bytes."""
    value: int
    """Measured: bytes, functions, new groups, or for a growth limit head minus base bytes."""
    growth: Limit | None = None
    """A growth limit as written (a percentage or bytes)."""
    base_value: int | None = None
    """A growth limit: the base's bytes the growth is relative to."""
    group: str | None = None
    """``groups``: the group limited."""
    measured_in: tuple[str, ...] = ()
    """A budget's limit: the files the value was measured in."""
    new_groups: tuple[str, ...] = ()
    """``fail-on-new-group``: the groups head has and base does not."""
    at_least: bool = False
    """The limit is a floor (``require``, ``min-functions``): passed when value >= limit."""
    pattern: str | None = None
    """``require``'s or ``fail-on-removed``'s glob, as written."""
    names: tuple[str, ...] = ()
    """Every function or kernel the verdict is about, in the order its check gives (removed
    functions largest first; missing kernels sorted; for ``fail-on-platform-change`` the facts
    that changed): messages show the first few, JSON all of them."""
    value_text: str | None = None
    """A version limit: the library's version as it states it (``26.2``)."""
    limit_text: str | None = None
    """A version limit: the highest version allowed, as written (``14.0``); compared with
    ``value_text`` as version tuples (``version_key``), not as the integers."""

    @property
    def passed(self) -> bool:
        if self.value_text is not None and self.limit_text is not None:
            return version_key(self.value_text) <= version_key(self.limit_text)
        return self.value >= self.limit if self.at_least else self.value <= self.limit

    @property
    def percent(self) -> float | None:
        """A growth limit: growth relative to base (None for a base of 0 bytes)."""
        return 100.0 * self.value / self.base_value if self.base_value else None


def version_key(text: str) -> tuple[int, ...]:
    """``"14.0"`` -> ``(14,)``, ``"26.2"`` -> ``(26, 2)``: a dotted version as a tuple that orders
    as versions do, trailing zeros dropped so that ``14`` and ``14.0.0`` are equal. Text that
    is no dotted version is a ``ValueError``."""
    parts = [int(part) for part in text.strip().split(".")]
    while len(parts) > 1 and parts[-1] == 0:
        parts.pop()
    return tuple(parts)
