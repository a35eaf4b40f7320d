"""Helpers for the size tests: synthetic metallibs written by the project's own writer."""

from __future__ import annotations

import hashlib
from collections.abc import Callable, Sequence
from pathlib import Path

import pytest

from builder.metallib import library_bytes, new_function, new_library

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


@pytest.fixture
def write_metallib(tmp_path: Path) -> Callable[..., Path]:
    """Factory: ``write_metallib("a.metallib", [("v_copyfloat32float32", 400), ...])`` -> path."""

    def write(name: str, functions: Spec, **kwargs: object) -> Path:
        path = tmp_path / name
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_bytes(synthetic_bytes(functions, **kwargs))  # type: ignore[arg-type]
        return path

    return write
