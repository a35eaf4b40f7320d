"""The dtype vocabulary: the words host names use for element types, and every other spelling.

Two facts live here and nowhere else:

* ``METAL_TYPES``: the closed list of dtypes the catalog trees instantiate (the bundled
  ``metal_src/``), with the Metal Shading Language type each stands for. Adding a dtype is a
  deliberate change here, in the shim, and in ``common/types.h``.
* ``NAME_SPELLINGS``: every way a kernel *name* in a real library spells a dtype, mapped to its
  canonical word: the canonical words themselves, the Metal type names (``half``, ``float``,
  ``bfloat16_t``), and the spellings MLX adds (``bool_``, ``float16_t``, ``float2`` for complex64
  in older fft kernels, ``complex32_t`` for complex half in mlx 0.32.4). The size report's
  ``--by dtype`` reads names with it; the catalog's naming checks use ``is_dtype``.

Beyond MLX, names spell dtypes the way their project's sources do: Metal's own scalar names
(``bfloat``, ``int``, ``uint``, ``short``, ``char``, ``long`` and their unsigned forms) and vector
forms (``half4``, ``uint2``) in PyTorch's MPS kernels, and ggml's tensor types (``f32``, ``f16``,
``bf16``) and quantization types (``q4_0``, ``q4_K``, ``iq2_xxs``) in ggml/llama.cpp. A vector
counts as its element type, except ``half2`` and ``float2``: PyTorch's (and MLX's older fft)
complex numbers, complex32 and complex64. PyTorch's 8-bit floats (``float8_e4m3fn``,
``float8_e5m2``, ``float8_e4m3fnuz``, ``float8_e5m2fnuz``, ``float8_e8m0fnu``) and the 4-bit
integers (``int4``, ``uint4``) are dtype words of their own, as are ggml's quantization types:
they name how weights are stored, which no element type says.

The host-name grammar: how a kernel instantiation is named, and how a name is read back.

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

__all__ = [
    "DTYPES",
    "FAMILIES",
    "FLOAT8",
    "GGML_QUANTS",
    "METAL_TYPES",
    "NAME_SPELLINGS",
    "WORD_ONLY_SPELLINGS",
    "ParsedName",
    "format_host_name",
    "is_dtype",
    "parse_host_name",
    "valid_token",
]


# dtype name (as it appears in host names) -> the Metal Shading Language type used in templates.
METAL_TYPES: dict[str, str] = {
    "bool": "bool",
    "int8": "int8_t",
    "int16": "int16_t",
    "int32": "int32_t",
    "int64": "int64_t",
    "uint8": "uint8_t",
    "uint16": "uint16_t",
    "uint32": "uint32_t",
    "uint64": "uint64_t",
    "float16": "half",
    "bfloat16": "bfloat16_t",
    "float32": "float",
    "complex64": "complex64_t",
}

DTYPES: tuple[str, ...] = tuple(METAL_TYPES)

# Spellings in real libraries' names beyond the canonical words and the Metal types.
_OTHER_SPELLINGS = {
    "bool_": "bool",
    "float16_t": "float16",
    "float64": "float64",
    "float2": "complex64",  # MLX's older fft kernels, PyTorch's: a complex number as two floats
    "complex32_t": "complex32",
}

# PyTorch's 8-bit floats (c10/metal/float8.h, torch.float8_*), each its own dtype word: a name
# spells them whole, the "_" inside included. Longer than any other spelling they start like.
FLOAT8 = ("float8_e4m3fn", "float8_e5m2", "float8_e4m3fnuz", "float8_e5m2fnuz", "float8_e8m0fnu")
"""The 8-bit float dtypes, spelled as PyTorch names them (``torch.float8_e4m3fn``)."""

# Metal scalar type names that are not MLX words (MSL specification, table 2.1).
_METAL_SCALARS = {
    "bfloat": "bfloat16",
    "char": "int8",
    "uchar": "uint8",
    "short": "int16",
    "ushort": "uint16",
    "int": "int32",
    "uint": "uint32",
    "long": "int64",
    "ulong": "uint64",
}

# Element types of Metal's vector types (``half4``, ``uint2``); ``float2`` keeps MLX's meaning.
_VECTOR_ELEMENTS = {**_METAL_SCALARS, "half": "float16", "float": "float32", "bool": "bool"}

# ggml's tensor types (ggml.h's enum ggml_type): plain element types, then quantization formats.
_GGML_ELEMENTS = {"f32": "float32", "f16": "float16", "bf16": "bfloat16", "f64": "float64"}
_GGML_ELEMENTS |= {"i8": "int8", "i16": "int16", "i32": "int32", "i64": "int64"}
GGML_QUANTS = (
    "q4_0", "q4_1", "q5_0", "q5_1", "q8_0", "q8_1", "q2_K", "q3_K", "q4_K", "q5_K", "q6_K",
    "q8_K", "iq2_xxs", "iq2_xs", "iq2_s", "iq3_xxs", "iq3_s", "iq1_s", "iq1_m", "iq4_nl",
    "iq4_xs", "tq1_0", "tq2_0",
)  # fmt: skip
"""ggml's quantization types, each its own dtype word in reports. Not ``mxfp4``: MLX names its
mxfp4 kernels by the type they compute in (``mxfp4_qmv_float_gs_32_b_4``), as its other
quantization modes, and its reports keep that label."""


# 4-bit integers: a whole ``int4`` token is the 4-bit type (``torch.int4``), not Metal's vector
# of four ints, which no real library's names were found to use. (``u16``, ``u64`` are not
# dtypes: PyTorch writes them for an index's width, ``mb_sort_block_bool_tptg32_u16``.)
_FOUR_BIT = {"int4": "int4", "uint4": "uint4"}


def _word_only() -> dict[str, str]:
    """Spellings that are also ordinary words or short enough to occur inside one: they count
    only between underscores (or the name's ends). A vector counts as its element type, but for
    two: ``half2`` is a complex half as ``float2`` is a complex float (PyTorch's ComplexHalf;
    MLX's older fft), and ``int4``/``uint4`` are the 4-bit integers."""
    found = {"float": "float32", "half": "float16", "bool": "bool", "float2": "complex64"}
    found |= {"half2": "complex32"} | _FOUR_BIT
    found |= _METAL_SCALARS | _GGML_ELEMENTS | {q: q for q in GGML_QUANTS}
    for element, word in _VECTOR_ELEMENTS.items():
        for width in (2, 3, 4):
            found.setdefault(f"{element}{width}", word)
    return found


_WORD_ONLY = _word_only()


def _spellings() -> dict[str, str]:
    found = {word: word for word in DTYPES}
    found.update({metal: word for word, metal in METAL_TYPES.items()})
    found.update(_OTHER_SPELLINGS)
    found.update({word: word for word in FLOAT8})
    found.update(_WORD_ONLY)
    # Longest first, so a scan tries "bfloat16_t" before "bfloat16" before "float16".
    return dict(sorted(found.items(), key=lambda item: (-len(item[0]), item[0])))


NAME_SPELLINGS: dict[str, str] = _spellings()
"""Spelling in a kernel name -> canonical dtype word, longest spelling first."""

WORD_ONLY_SPELLINGS = frozenset(_WORD_ONLY)
"""Spellings that are also ordinary words: they count only between underscores (or the ends)."""


def is_dtype(word: str) -> bool:
    """True when ``word`` is one of the catalog vocabulary's dtype names."""
    return word in METAL_TYPES


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
