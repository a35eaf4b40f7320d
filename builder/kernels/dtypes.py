"""The fixed dtype vocabulary shared by host names, the catalog and the Metal sources.

Host names spell dtypes with these exact words, and the host side of any consumer (a JIT lookup,
the size report) must use the same words, so the list is closed: adding a dtype is a deliberate
change here, in the shim, and in ``common/types.h``.
"""

from __future__ import annotations

__all__ = ["DTYPES", "METAL_TYPES", "is_dtype"]

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


def is_dtype(word: str) -> bool:
    """True when ``word`` is one of the vocabulary's dtype names."""
    return word in METAL_TYPES
