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
"""

from __future__ import annotations

__all__ = ["DTYPES", "METAL_TYPES", "NAME_SPELLINGS", "WORD_ONLY_SPELLINGS", "is_dtype"]

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
    "float2": "complex64",
    "complex32_t": "complex32",
}


def _spellings() -> dict[str, str]:
    found = {word: word for word in DTYPES}
    found.update({metal: word for word, metal in METAL_TYPES.items()})
    found.update(_OTHER_SPELLINGS)
    # Longest first, so a scan tries "bfloat16_t" before "bfloat16" before "float16".
    return dict(sorted(found.items(), key=lambda item: (-len(item[0]), item[0])))


NAME_SPELLINGS: dict[str, str] = _spellings()
"""Spelling in a kernel name -> canonical dtype word, longest spelling first."""

WORD_ONLY_SPELLINGS = frozenset({"float", "half", "bool", "float2"})
"""Spellings that are also ordinary words: they count only between underscores (or the ends)."""


def is_dtype(word: str) -> bool:
    """True when ``word`` is one of the catalog vocabulary's dtype names."""
    return word in METAL_TYPES
