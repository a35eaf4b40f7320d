"""The host-name grammar: how a kernel instantiation is named, and how a name is read back.

Grammar (tokens joined by ``_``; every token is ``[a-z0-9]+`` and never contains ``_``)::

    host_name := family "_" form [ "_" op ] ( "_" dtype )+ ( "_" param )*
    param     := key value          e.g. n4, d2   (key [a-z]+, value [0-9]+)

``family`` is one of :data:`FAMILIES`, ``dtype`` one of :data:`builder.kernels.dtypes.DTYPES`;
``form`` and ``op`` are never dtype names, so the first dtype token ends the prefix. The size
report groups a metallib's functions by (family, form, op, dtypes) with :func:`parse_host_name`,
which is the exact inverse of :func:`format_host_name` and returns None for names that do not follow
the grammar (e.g. MLX's own ``v_Absfloat32``), so foreign libraries are never mis-grouped.
"""

from __future__ import annotations

import re
from dataclasses import dataclass

from builder.kernels.dtypes import is_dtype

__all__ = ["FAMILIES", "ParsedName", "format_host_name", "parse_host_name", "valid_token"]

# Closed vocabulary of families: a name whose first token is not here is not ours.
FAMILIES: tuple[str, ...] = (
    "unary",
    "binary",
    "ternary",
    "copy",
    "arange",
    "gather",
    "scatter",
    "reduce",
    "softmax",
)

_TOKEN = re.compile(r"[a-z][a-z0-9]*")
_PARAM = re.compile(r"([a-z]+)([0-9]+)")


@dataclass(frozen=True)
class ParsedName:
    """The parts of a host name; ``params`` keeps the order of the name."""

    family: str
    form: str
    op: str | None
    dtypes: tuple[str, ...]
    params: tuple[tuple[str, int], ...] = ()


def valid_token(word: str) -> bool:
    """True for a word usable as a form, op or param key (lowercase, no ``_``, not a dtype)."""
    return bool(_TOKEN.fullmatch(word)) and not is_dtype(word)


def format_host_name(
    family: str,
    form: str,
    op: str | None,
    dtypes: tuple[str, ...],
    params: tuple[tuple[str, int], ...] = (),
) -> str:
    """Build the host name of one instantiation; raises ValueError on tokens the parser can't
    read."""
    if family not in FAMILIES:
        raise ValueError(f"unknown catalog family {family!r}; known: {', '.join(FAMILIES)}")
    words = [family, form] + ([op] if op is not None else [])
    for word in words[1:]:
        if not valid_token(word):
            raise ValueError(f"{word!r} is not a valid form/op token in a host name")
    if not dtypes or not all(is_dtype(d) for d in dtypes):
        raise ValueError(f"bad dtypes {dtypes!r} for a host name")
    for key, value in params:
        if not re.fullmatch(r"[a-z]+", key) or value < 0 or is_dtype(f"{key}{value}"):
            raise ValueError(f"bad parameter {key}={value} for a host name")
    return "_".join([*words, *dtypes, *(f"{k}{v}" for k, v in params)])


def parse_host_name(name: str) -> ParsedName | None:
    """Split a host name back into its parts, or None when it does not follow the grammar."""
    tokens = name.split("_")
    if len(tokens) < 3 or tokens[0] not in FAMILIES:
        return None
    family, form, rest = tokens[0], tokens[1], tokens[2:]
    if not valid_token(form):
        return None
    op: str | None = None
    if not is_dtype(rest[0]):
        op, rest = rest[0], rest[1:]
        if not valid_token(op):
            return None
    dtypes: list[str] = []
    while rest and is_dtype(rest[0]):
        dtypes.append(rest.pop(0))
    if not dtypes:
        return None
    params: list[tuple[str, int]] = []
    for token in rest:
        match = _PARAM.fullmatch(token)
        if match is None or is_dtype(token):
            return None
        params.append((match.group(1), int(match.group(2))))
    parsed = ParsedName(family, form, op, tuple(dtypes), tuple(params))
    # Only canonical spellings round-trip (e.g. "n04" is not the name of any instantiation).
    if format_host_name(family, form, op, parsed.dtypes, parsed.params) != name:
        return None
    return parsed
