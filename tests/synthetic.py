"""Synthetic metallibs built with the project's own writer (importable from any test: ``from
synthetic import synthetic_parts``)."""

from __future__ import annotations

import hashlib
import random
from collections.abc import Callable, Sequence

from builder.metallib import (
    FunctionParts,
    LibraryParts,
    library_bytes,
    new_function,
    new_library,
)

__all__ = ["Spec", "synthetic_bytes", "synthetic_functions", "synthetic_parts"]

Tags = list[tuple[bytes, bytes]]


def synthetic_functions(
    count: int = 5, *, reflection: bool = True, seed: int = 0
) -> list[FunctionParts]:
    """``count`` kernels with random bitcode of varied lengths (so module padding varies)."""
    rng = random.Random(seed)
    functions = []
    for i in range(count):
        body = b"BC\xc0\xde" + rng.randbytes(rng.randrange(1, 300))
        flatbuffer = rng.randbytes(rng.randrange(8, 120)) if reflection else None
        functions.append(
            new_function(f"kernel_{i}_float{16 * (1 + i % 2)}", body, reflection=flatbuffer)
        )
    return functions


def synthetic_parts(
    count: int = 5,
    *,
    reflection: bool = True,
    seed: int = 0,
    dynamic: bool = False,
    tags: Callable[[Tags], Tags] | None = None,
) -> LibraryParts:
    """A library of ``synthetic_functions``; ``tags`` edits each function's tag list first (to
    build unknown, missing or repeated tags)."""
    functions = synthetic_functions(count, reflection=reflection, seed=seed)
    if tags is not None:
        for fn in functions:
            fn.tags = tags(fn.tags)  # type: ignore[assignment,arg-type]
    return new_library(
        functions,
        install_name="mlx.metallib" if dynamic else None,
        format_version=(2, 9) if dynamic else (2, 7),
    )


Spec = Sequence[tuple[str, int]]


def synthetic_bytes(
    functions: Spec, *, reflection: bool = True, install_name: str | None = None
) -> bytes:
    """A metallib with one function per (name, bitcode size); contents derived from the name so
    the same spec always gives the same bytes."""
    parts = []
    for name, size in functions:
        seed = hashlib.sha256(name.encode()).digest()
        bitcode = (seed * (size // len(seed) + 1))[:size]
        refl = seed[: 8 + len(name) % 9] if reflection else None
        parts.append(new_function(name, bitcode, reflection=refl))
    return library_bytes(new_library(parts, install_name=install_name))
