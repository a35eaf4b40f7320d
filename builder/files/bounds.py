"""Bounds on what untrusted input may cost: the one place that states each limit and its default.

A pull request from anyone can hand the tool a kernel tree, a wheel or a report JSON
(docs/security.md). Each of these limits turns a hostile input into one line and exit 2 instead
of a full disk, a hung job or an exhausted machine. Every limit has a default sized far above
what real inputs need (an mlx-metal wheel holds about 150 MB of metallibs; MLX's largest entry
file preprocesses in about a second to a few MB) and an environment variable that changes it:

=================================  ==========  ==============================================
variable                           default     what it bounds
=================================  ==========  ==============================================
METALLIB_BUILDER_MAX_EXTRACT       1 GiB       bytes written while extracting one wheel
METALLIB_BUILDER_CACHE_MAX         10 GiB      wheels and extracted members kept in the cache
METALLIB_BUILDER_MAX_JSON          256 MiB     size of a report or manifest JSON file read
METALLIB_BUILDER_MAX_JSON_OBJECTS  500,000     objects (``{...}``) in one JSON document read
METALLIB_BUILDER_MAX_MEMBERS       100,000     entries in a wheel's central directory
METALLIB_BUILDER_PP_TIMEOUT        300         seconds one preprocessor run may take
METALLIB_BUILDER_PP_MEMORY         4 GiB       address space of one preprocessor process
METALLIB_BUILDER_PP_OUTPUT         512 MiB     output (and error text) of one preprocessor run
METALLIB_BUILDER_MAX_SOURCE        64 MiB      one source file of a tree read by the tool itself
METALLIB_BUILDER_MAX_TEXT          16 MiB      a settings, budget, keep-list or rule file
METALLIB_BUILDER_HTTP_DEADLINE     30          seconds one GitHub API request may take, in all
METALLIB_BUILDER_MAX_BAD_HEADERS   16          metallib headers in one binary that pass the
                                               header checks but do not parse whole
=================================  ==========  ==============================================

Sizes take the notation of the size gates (``512``, ``64MB``, ``2GiB``: :func:`parse_size`).
The reads themselves go through ``builder.files.reading``.
"""

from __future__ import annotations

import itertools
import math
import os
import re
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

from builder.errors import UsageError

__all__ = [
    "CACHE_MAX",
    "HTTP_DEADLINE",
    "LARGEST_COUNT",
    "LARGEST_SECONDS",
    "MAX_BAD_HEADERS",
    "MAX_EXTRACT",
    "MAX_JSON",
    "MAX_JSON_OBJECTS",
    "MAX_MEMBERS",
    "MAX_SOURCE",
    "MAX_TEXT",
    "PP_MEMORY",
    "PP_OUTPUT",
    "PP_TIMEOUT",
    "Bound",
    "brief",
    "byte_count",
    "json_int",
    "parse_json",
    "parse_size",
]

_UNITS: dict[str, int] = {
    "": 1,
    "b": 1,
    "k": 1000,
    "kb": 1000,
    "m": 1000**2,
    "mb": 1000**2,
    "g": 1000**3,
    "gb": 1000**3,
    "kib": 1024,
    "mib": 1024**2,
    "gib": 1024**3,
}
LARGEST_COUNT = 2**63 - 1
"""The largest byte count a saved report or manifest may state (a signed 64-bit file size); a
400-digit "size" is refused when read, rather than overflowing a formatter later."""
LARGEST_SECONDS = 1_000_000
"""The longest a time bound may be (about 11 days): waiting on a child process takes a C time
value, which ``1e18`` seconds overflows (and ``1e400`` is infinity)."""

_SIZE = re.compile(r"^\s*(?P<num>[+-]?\d+(?:\.\d+)?)\s*(?P<unit>[A-Za-z]*)\s*$")


def parse_size(text: str) -> int:
    """``"512"`` -> 512, ``"10KB"`` -> 10000, ``"1.5MiB"`` -> 1572864; bad text -> UsageError.

    Decimal (KB, MB, GB = 1000^n) and binary (KiB, MiB, GiB = 1024^n) suffixes; a bare number is
    bytes. A size is a byte count: beyond :data:`LARGEST_COUNT` either way it is refused here,
    so no gate, budget or bound computes with it (a float of it would overflow later). Whether a
    negative size makes sense is the caller's to say (it words the refusal)."""
    match = _SIZE.match(text) if len(text) < 100 else None
    unit = match["unit"].lower() if match else ""
    if match is None or unit not in _UNITS:
        raise UsageError(
            f"{brief(text)} is not a size; use bytes or a number with KB, MB, GB, KiB, MiB or GiB"
        )
    value = round(float(match["num"]) * _UNITS[unit])
    if abs(value) > LARGEST_COUNT:
        raise UsageError(f"{text!r} is more than {LARGEST_COUNT:,} bytes, the largest file size")
    return value


def brief(value: Any, cap: int = 40) -> str:
    """``value`` shown briefly in an error line: its ``repr`` cut to ``cap`` characters, a number
    past :data:`LARGEST_COUNT` by its digits, a structure too deep to show by what it is. A value
    from an untrusted file may be megabytes long or nested hundreds deep."""
    if isinstance(value, int) and not isinstance(value, bool) and abs(value) > LARGEST_COUNT:
        try:
            return f"a {len(str(abs(value)))}-digit number"
        except ValueError:  # past Python's digit limit: a parser that allows it made it
            return "a number of more than 4,300 digits"
    try:
        shown = repr(value)
    except RecursionError:
        return f"a {type(value).__name__} nested too deeply to show"
    return shown if len(shown) <= cap else shown[: cap - 1] + "…"


@dataclass(frozen=True)
class Bound:
    """One bound: its environment variable, its default and what it is (for messages)."""

    variable: str
    default: int
    what: str
    unit: str = "bytes"
    """``bytes`` (read with :func:`parse_size`), ``seconds``, or what a count counts
    (``objects``, ``entries``, ``headers``: read like a size, so ``2000000`` and ``2M`` both
    work)."""

    def value(self, env: Mapping[str, str] | None = None) -> int:
        """The bound in force: the variable's value when set (UsageError if it is not a positive
        number), else the default."""
        text = (os.environ if env is None else env).get(self.variable, "").strip()
        if not text:
            return self.default
        try:
            value = _seconds(text) if self.unit == "seconds" else parse_size(text)
        except (UsageError, ValueError):
            value = 0
        if value <= 0:
            raise UsageError(
                f"{self.variable}={brief(text)}: expected a positive number of {self.unit}"
                + (f", at most {LARGEST_SECONDS:,}" if self.unit == "seconds" else "")
            )
        return value

    def exceeded(self, value: int) -> str:
        """The end of a message saying this bound stopped something."""
        amount = f"{value:,} {self.unit}"
        return f"{self.what} exceeds {amount}; set {self.variable} to allow more"


MAX_EXTRACT = Bound("METALLIB_BUILDER_MAX_EXTRACT", 1024**3, "extracting the wheel")
CACHE_MAX = Bound("METALLIB_BUILDER_CACHE_MAX", 10 * 1024**3, "the cache")
"""Not a refusal: past it, the least recently used wheels and extracted members are removed
(``builder.inputs.wheel_cache``). The issue's trial grew the cache to 4.3 GB."""
MAX_JSON = Bound("METALLIB_BUILDER_MAX_JSON", 256 * 1024**2, "the JSON file")
MAX_JSON_OBJECTS = Bound(
    "METALLIB_BUILDER_MAX_JSON_OBJECTS", 500_000, "the count of JSON objects", "objects"
)
"""Parsed JSON costs memory per object, not per byte: ``{"name":"k1","bytes":1}`` is 24 bytes
of text but about 400 bytes as a dict and its strings, and a saved report's function becomes a
row too (a 38 MB report of 1.3 million such functions took 0.57-1.0 GB). The largest real
report (torch's wheel, two libraries) holds about 33,000 functions."""
MAX_MEMBERS = Bound(
    "METALLIB_BUILDER_MAX_MEMBERS", 100_000, "the wheel's central directory", "entries"
)
"""zipfile parses a wheel's whole central directory into one object per entry (about 500 bytes
each) before anything else; torch's wheel has 13,668 entries."""
PP_TIMEOUT = Bound("METALLIB_BUILDER_PP_TIMEOUT", 300, "preprocessing", "seconds")
PP_MEMORY = Bound("METALLIB_BUILDER_PP_MEMORY", 4 * 1024**3, "the preprocessor's memory use")
PP_OUTPUT = Bound("METALLIB_BUILDER_PP_OUTPUT", 512 * 1024**2, "the preprocessor's output")
MAX_SOURCE = Bound("METALLIB_BUILDER_MAX_SOURCE", 64 * 1024**2, "the source file")
MAX_TEXT = Bound("METALLIB_BUILDER_MAX_TEXT", 16 * 1024**2, "the file")
HTTP_DEADLINE = Bound("METALLIB_BUILDER_HTTP_DEADLINE", 30, "the request", "seconds")
MAX_BAD_HEADERS = Bound(
    "METALLIB_BUILDER_MAX_BAD_HEADERS", 16, "the search for metallibs in a binary", "headers"
)


def _seconds(text: str) -> int:
    """Whole seconds from ``text``; 0 (refused) for what is not a finite number up to
    :data:`LARGEST_SECONDS`."""
    value = float(text)
    return round(value) if math.isfinite(value) and value <= LARGEST_SECONDS else 0


def json_int(value: Any) -> int | None:
    """``value`` when it is an integer (JSON's ``true`` is not one, though Python's ``bool`` is an
    ``int``), else None."""
    return value if isinstance(value, int) and not isinstance(value, bool) else None


def byte_count(value: Any, field: str) -> int:
    """``value`` when it is a byte count (an integer from 0 to :data:`LARGEST_COUNT`); else
    ValueError naming ``field`` and showing the value briefly (a 400-digit number by its
    length)."""
    if isinstance(value, bool) or not isinstance(value, int) or not 0 <= value <= LARGEST_COUNT:
        raise ValueError(f"{field!r} is {brief(value)}, not a byte count")
    return value


def parse_json(data: bytes) -> Any:
    """``data`` (already read within a size bound) as JSON: numbers of at most Python's 4,300
    digits, nesting as deep as the parser's recursion allows, at most ``MAX_JSON_OBJECTS``
    objects (counted as the parser makes them, so a document of millions stops at the bound,
    not after all are built). Anything else is a ValueError whose text says why in words for a
    message (a reply nested 5,000 deep is not a RecursionError)."""
    import json  # here: reading a kernel tree's sources needs the bounds, not the parser

    limit = MAX_JSON_OBJECTS.value()
    made = itertools.count(1)

    def counted(obj: dict[str, Any]) -> dict[str, Any]:
        if next(made) > limit:
            raise _TooMany
        return obj

    try:
        return json.loads(data.decode("utf-8"), object_hook=counted)
    except _TooMany:
        raise ValueError(MAX_JSON_OBJECTS.exceeded(limit)) from None
    except UnicodeDecodeError as exc:
        raise ValueError(f"not UTF-8 text (byte {exc.start})") from None
    except RecursionError:
        raise ValueError("nested too deeply (brackets inside brackets)") from None
    except ValueError as exc:  # JSONDecodeError, or an integer of over 4,300 digits
        why = str(exc)
        if "integer string conversion" in why:
            why = "a number has more than 4,300 digits"
        raise ValueError(why) from None


class _TooMany(Exception):
    """Raised inside the JSON parser at the first object past ``MAX_JSON_OBJECTS``."""
