"""Fixtures for the HTML report tests: a headless Chromium (skipped loudly when not installed).

The driver (``chromium.py``) and the PNG reader (``png.py``) sit beside this file; they are put
on ``sys.path`` here because ``tests/html`` is not a package (its name would shadow the stdlib).
"""

from __future__ import annotations

import hashlib
import sys
from collections.abc import Callable, Iterator, Sequence
from pathlib import Path

import pytest

from builder.metallib import library_bytes, new_function, new_library

sys.path.insert(0, str(Path(__file__).parent))

from chromium import Browser, chromium_path

NO_CHROMIUM = (
    "CHROMIUM NOT INSTALLED: the HTML report was not rendered in a browser "
    "(apt-get install chromium; .ci/run installs it)"
)


@pytest.fixture(scope="module")
def browser() -> Iterator[Browser]:
    """One headless Chromium per test module, 1400x1000 viewport."""
    if chromium_path() is None:
        pytest.skip(NO_CHROMIUM)
    with Browser(width=1400, height=1000) as b:
        yield b


@pytest.fixture
def write_metallib(tmp_path: Path) -> Callable[..., Path]:
    """Factory: ``write_metallib("a.metallib", [(name, bitcode size), ...])`` -> path of a
    library written by the project's writer (contents derived from the names: deterministic)."""

    def write(name: str, functions: Sequence[tuple[str, int]]) -> Path:
        parts = []
        for fn_name, size in functions:
            seed = hashlib.sha256(fn_name.encode()).digest()
            bitcode = (seed * (size // len(seed) + 1))[:size]
            parts.append(new_function(fn_name, bitcode, reflection=seed[: 8 + len(fn_name) % 9]))
        path = tmp_path / name
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_bytes(library_bytes(new_library(parts)))
        return path

    return write
