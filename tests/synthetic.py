"""Synthetic metallibs built with the project's own writer (importable from any test: ``from
synthetic import synthetic_parts``)."""

from __future__ import annotations

import random

from builder.metallib import LibraryParts, new_function, new_library

__all__ = ["synthetic_parts"]


def synthetic_parts(count: int = 5, *, reflection: bool = True, seed: int = 0, dynamic: bool = False) -> LibraryParts:
    """``count`` kernels with random bitcode of varied lengths (so module padding varies)."""
    rng = random.Random(seed)
    functions = []
    for i in range(count):
        body = b"BC\xc0\xde" + rng.randbytes(rng.randrange(1, 300))
        flatbuffer = rng.randbytes(rng.randrange(8, 120)) if reflection else None
        functions.append(new_function(f"kernel_{i}_float{16 * (1 + i % 2)}", body, reflection=flatbuffer))
    return new_library(functions, install_name="mlx.metallib" if dynamic else None,
                       format_version=(2, 9) if dynamic else (2, 7))
