"""Template parameters in kernel names: bytes per value of each parameter a group's names carry.

A library holds one function per instantiation of a template, and names each after its
parameters: ``steel_gemm_fused_nn_float16_float16_bm64_bn64_bk16_wm2_wn2`` is MLX's fused GEMM
for float16 tiles of 64x64x16 on 2x2 simdgroups. ``--by param`` (twiggy's "monos" for Metal)
groups a library's functions by their name less its parameters (``steel_gemm_fused_nn``) and,
for each parameter the group's names carry, adds up the bytes of each value: the functions that
carry ``bm64`` are what dropping that value saves.

A name's parameters are read by ``builder.size.naming`` (``name_parameters``, the rules of
docs/report-schema.md "Naming rules"), and its group is its stem: the name less those
parameters (``generic_stems``). Here each becomes a value of a parameter named by its key:

* the dtypes: one parameter ``dtype`` whose value is the canonical word, or the words in the
  name's order joined by ``,`` when they differ (``bool,float16``: torch's
  ``gt_strided_bool_half``);
* a mask's type (MLX's ``outmask_float16``, ``opmask_nomask``, ``maskbool_``; torch's
  ``maskhalf``): a parameter named by the mask word;
* a keyed value (``bm64``, ``gs_32``, ``MN_taligned``): named by the key; a bit width (``8bit``):
  ``bit``; a bare number or flag (``_128``, ``_true``): ``#1``, ``#2`` in order.

A function whose name lacks a parameter its group's other names carry has the value ``none``
for it, so each parameter's values add up to the group, function for function.
"""

from __future__ import annotations

import functools
from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from typing import NamedTuple

from builder.files.dataclass_json import count, field
from builder.size.naming import generic_stems, name_parameters

__all__ = [
    "DTYPE",
    "NONE",
    "GroupParameters",
    "Parameter",
    "ParsedName",
    "Value",
    "param_labels",
    "parameter_groups",
    "parse_name",
]

DTYPE = "dtype"
NONE = "none"
"""The value of a parameter a function's name does not carry (its group's other names do)."""


class ParsedName(NamedTuple):
    """A name as its group (the name less its parameters) and the values of its parameters,
    in the name's order."""

    group: str
    values: tuple[tuple[str, str], ...]


@functools.lru_cache(maxsize=1 << 15)
def parse_name(name: str) -> ParsedName:
    """``name``'s group (its stem: the name less its parameters) and its parameters' values:
    ``steel_gemm_fused_nn_float16_float16_bm64`` -> ``steel_gemm_fused_nn``,
    ``(("dtype", "float16"), ("bm", "64"))``. A name that is all parameters is its own group."""
    dtypes: list[str] = []
    values: list[tuple[str, str]] = []
    bare = 0
    for kind, key, value in name_parameters(name):
        if kind == "dtype":
            dtypes.append(value)
        elif kind == "bare":
            bare += 1
            values.append((f"#{bare}", value))
        else:
            values.append((key, value))
    if dtypes:
        word = dtypes[0] if len(set(dtypes)) == 1 else ",".join(dtypes)
        values.insert(0, (DTYPE, word))
    return ParsedName(generic_stems([name])[0], _unique(values))


def _unique(values: list[tuple[str, str]]) -> tuple[tuple[str, str], ...]:
    """Each parameter once: a key that comes back in a name is the key and its place
    (``u16`` twice: ``u``, ``u#2``)."""
    seen: dict[str, int] = {}
    out = []
    for key, value in values:
        seen[key] = seen.get(key, 0) + 1
        out.append((key if seen[key] == 1 else f"{key}#{seen[key]}", value))
    return tuple(out)


def param_labels(names: Iterable[str]) -> list[str]:
    """Every name less its parameters, its stem: the ``--by param`` label of its function."""
    return generic_stems(list(names))


@dataclass(frozen=True)
class Value:
    """One value of a parameter: the functions whose names carry it and their bytes, which is
    what dropping the value from the group would save."""

    value: str
    function_count: int = count()
    bytes: int = count()


@dataclass(frozen=True)
class Parameter:
    """A parameter of a group's names with its values, largest first; their bytes add up to
    the group's (``none``: the functions whose names lack it)."""

    name: str
    values: list[Value] = field(default_factory=list)


@dataclass(frozen=True)
class GroupParameters:
    """A group's functions and bytes, and the parameters its names carry, in the order the
    names give them (empty: its names carry no parameter)."""

    group: str
    function_count: int = count()
    bytes: int = count()
    parameters: list[Parameter] = field(default_factory=list)


def parameter_groups(
    names: Sequence[str], sizes: Sequence[int], labels: Sequence[str] | None = None
) -> list[GroupParameters]:
    """The groups of ``names`` (their ``--by param`` labels, or ``labels``), largest first (ties
    by name), each with the bytes (``sizes``) of every value of every parameter its names
    carry."""
    parsed = [parse_name(name) for name in names]
    groups = labels if labels is not None else [p.group for p in parsed]
    members: dict[str, list[int]] = {}
    for index, group in enumerate(groups):
        members.setdefault(group, []).append(index)
    out = []
    for group, indexes in members.items():
        keys = dict.fromkeys(key for i in indexes for key, _ in parsed[i].values)
        parameters = []
        for key in keys:
            sums: dict[str, list[int]] = {}
            for i in indexes:
                value = dict(parsed[i].values).get(key, NONE)
                pair = sums.setdefault(value, [0, 0])
                pair[0] += 1
                pair[1] += sizes[i]
            rows = [Value(value, n, size) for value, (n, size) in sums.items()]
            rows.sort(key=lambda v: (-v.bytes, v.value))
            parameters.append(Parameter(key, rows))
        total = sum(sizes[i] for i in indexes)
        out.append(GroupParameters(group, len(indexes), total, parameters))
    out.sort(key=lambda g: (-g.bytes, g.group))
    return out
