"""The validators of setting values, each stated once and run wherever the setting is read (a
flag, a ``metallib.toml`` or budget key, plan.json's request, a CMake run's cache). Validators,
not checks: ``check`` is the command that compiles a kernel tree (docs/architecture.md).

A validator takes the value (already of the setting's type) and returns it, or raises ValueError
whose text says what the value must be, as a noun phrase (``a Metal language standard such as
"metal3.1"``): every surface words the refusal the same way, ``<where> must be <that>, got
<value>`` (``builder.settings.text_rules.refusal``). The validators the generated sources share
(plain text, a choice, the C++ name rules: identifiers, namespaces, the keywords) are in
``builder.settings.text_rules``, which ``embed`` imports without these. Standard library
only: CMake runs this.
"""

from __future__ import annotations

import math
import re
from typing import Any, NamedTuple

from builder.errors import UsageError
from builder.files.bounds import LARGEST_COUNT, brief, parse_size
from builder.settings.text_rules import control_character

__all__ = [
    "LARGEST_PERCENT",
    "Limit",
    "Requirement",
    "count",
    "define",
    "deployment_target",
    "growth_bytes",
    "growth_limit",
    "language_version",
    "library_problem",
    "metal_version",
    "parse_define",
    "parse_limit",
    "parse_requirement",
    "requirement",
    "size_limit",
    "std",
    "std_version",
    "valid_deployment_target",
]

_DEFINE = re.compile(r"^([A-Za-z_]\w*)(\([A-Za-z_\w\s,.]*\))?(?:=(.*))?$", re.DOTALL)
# What a library name may hold: it becomes a file name in the build folder, a Ninja path and an
# item of CMake lists, so letters, digits and . _ + - only, and no leading . (hidden, or . and ..)
# or - (an option).
_LIBRARY = re.compile(r"^(?![.-])[\w.+-]+$")
_STD = re.compile(r"^(?:(?:macos|osx|ios)-)?metal([1-9])\.([0-9])$")
_LANGUAGE = re.compile(r"^[0-9]{1,2}(?:\.[0-9]{1,2})?$")
_TARGET = re.compile(r"^[0-9]{1,4}(?:\.[0-9]{1,4}){0,2}$")


def std_version(std: str) -> int | None:
    """``__METAL_VERSION__`` for a ``-std=`` value (``metal3.1`` -> 310, ``ios-metal2.4`` -> 240),
    or None when ``std`` is not one of the spellings Apple's compiler takes: ``metalX.Y``
    (MSL 3.0 and later) and the older ``macos-metalX.Y``, ``osx-metalX.Y``, ``ios-metalX.Y``."""
    match = _STD.fullmatch(std)
    return int(match.group(1)) * 100 + int(match.group(2)) * 10 if match else None


def std(value: str) -> str:
    """A Metal language standard, as ``-std=`` takes it."""
    if std_version(value) is None:
        raise ValueError('a Metal language standard such as "metal3.1" or "macos-metal2.4"')
    return value


def valid_deployment_target(value: str) -> bool:
    """An OS version such as ``14``, ``14.0`` or ``15.2.1`` (a library's header states one too)."""
    return _TARGET.fullmatch(value) is not None


def deployment_target(value: str) -> str:
    """An OS version, as :func:`valid_deployment_target` says."""
    if not valid_deployment_target(value):
        raise ValueError('an OS version such as "14.0"')
    return value


def language_version(value: str) -> str:
    """A Metal language version as a library's functions state it: ``3.1``, ``4.0``."""
    if _LANGUAGE.fullmatch(value) is None:
        raise ValueError('a Metal language version such as "3.1" or "4.0"')
    return value


def requirement(value: str) -> str:
    """``GLOB`` or ``GLOB>=N``: functions a library must hold (``require``; read by
    ``parse_requirement``, the one reading)."""
    parse_requirement(value)
    return value


_REQUIREMENT = re.compile(r"^(?P<glob>.*?)\s*>=\s*(?P<n>[0-9]+)\s*$", re.DOTALL)


class Requirement(NamedTuple):
    """``require``'s value: a glob and how many functions must match it (``GLOB>=N``)."""

    pattern: str
    at_least: int


def parse_requirement(text: str) -> Requirement:
    """``"*_nax*>=1"`` -> ``Requirement("*_nax*", 1)``; a bare glob needs one function.
    ValueError (what the value must be) for an empty glob or a count below 1."""
    match = _REQUIREMENT.match(text)
    pattern, digits = (match["glob"], match["n"]) if match else (text, "1")
    count = int(digits) if len(digits) <= 18 else 0  # more than any library holds
    if not pattern.strip() or not 1 <= count <= LARGEST_COUNT:
        raise ValueError('a glob of function names, with an optional count from 1: "*_nax*>=1"')
    return Requirement(pattern.strip(), count)


def metal_version(value: int) -> int:
    """``__METAL_VERSION__``: MSL version x 100."""
    if not 100 <= value <= 999:
        raise ValueError("an integer such as 310 (MSL 3.1) or 320 (MSL 3.2)")
    return value


def parse_define(text: str) -> tuple[str, str]:
    """``"NAME=VALUE"`` -> ``("NAME", "NAME=VALUE")``: the macro's name (the key that overrides
    an earlier definition) and the ``-D`` argument. ``NAME(x)=x`` function-like macros are fine.
    Raises ValueError on anything that is not ``NAME[(PARAMS)][=VALUE]`` or holds a control
    character (a newline would end the ``-D`` line of a build file)."""
    match = _DEFINE.match(text.strip())
    if not match or control_character(text) is not None:
        raise ValueError(f"{text!r} is not NAME[=VALUE]")
    return match.group(1), text.strip()


def define(value: str) -> str:
    """One ``-D`` argument, ``NAME[=VALUE]``."""
    try:
        parse_define(value)
    except ValueError:
        raise ValueError("NAME or NAME=VALUE, without control characters") from None
    return value


def library_problem(name: str) -> str | None:
    """Why ``name`` cannot name a build's library (``<name>.metallib``), or None."""
    if _LIBRARY.match(name) is None:
        return (
            "a library name is a plain file name: letters, digits and . _ + -, not "
            "starting with . or -"
        )
    return None


def library(value: str) -> str:
    """A library's name: a plain file name (``.metallib`` is dropped)."""
    if not value or "/" in value or "\\" in value:
        raise ValueError('a file name without folders or .metallib, such as "mlx"')
    name = value.removesuffix(".metallib")
    if library_problem(name) is not None:
        raise ValueError(
            'a plain file name such as "mlx": letters, digits and . _ + -, not starting with . or -'
        )
    return name


def count(value: int) -> int:
    """A number of things (functions), 0 to the largest byte count."""
    if not 0 <= value <= LARGEST_COUNT:
        raise ValueError(f"a count from 0 to {LARGEST_COUNT:,}")
    return value


# Limits: a size limit is a byte count; a growth limit is one, or a percentage of the base. Their
# refusals name the value themselves (UsageError), as the size parser's do: ``Setting.read``
# puts where it was given in front (``--max-size: '5XB' is not a size; ...``).


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


def growth_limit(value: Any) -> Limit:
    """A growth limit as a flag or a budget key gives it: text (``"1%"``, ``"100kB"``) or a
    number of bytes."""
    if isinstance(value, bool) or not isinstance(value, (int, str)):
        raise UsageError(f"{brief(value)} is not a size or a percentage")
    if isinstance(value, str):
        return parse_limit(value)
    return Limit(bytes=growth_bytes(value, value))


def size_limit(value: Any) -> int:
    """A size limit as a flag or a budget key gives it: text (``"30MB"``) or a number of
    bytes, not negative."""
    if isinstance(value, bool) or not isinstance(value, (int, str)):
        raise UsageError(f"{brief(value)} is not a size")
    size = parse_size(value) if isinstance(value, str) else value
    if size < 0:
        raise UsageError(f"{brief(value)}: a size limit must not be negative")
    if size > LARGEST_COUNT:
        raise UsageError(f"{brief(value)} is more than {LARGEST_COUNT:,} bytes")
    return size
