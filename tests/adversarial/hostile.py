"""Helpers of the adversarial suite (conftest.py holds its fixtures)."""

from __future__ import annotations

import hashlib
from collections.abc import Callable, Sequence

from builder.metallib import library_bytes, new_function, new_library

__all__ = ["Cli", "assert_one_error_line", "budget_error", "library_with"]

Cli = Callable[..., tuple[int, str, str]]


def assert_one_error_line(code: int, err: str, *words: str) -> str:
    """Exit 2, and stderr is one ``error: ...`` line holding ``words``; returns that line."""
    assert code == 2, err
    assert "Traceback" not in err, err
    lines = err.splitlines()
    assert len(lines) == 1 and lines[0].startswith("error: "), err
    for word in words:
        assert word in lines[0], (word, lines[0])
    return lines[0]


def budget_error(code: int, err: str, *words: str) -> str:
    """``budget``'s refusal: after the line naming the file it read (``budgets: FILE (N in
    [[budget]])``, when it got that far), one ``error: ...`` line with ``words``, exit 2."""
    lines = err.splitlines()
    if lines and lines[0].startswith("budgets: "):
        err = "\n".join(lines[1:]) + "\n"
    return assert_one_error_line(code, err, *words)


def library_with(names: Sequence[str]) -> bytes:
    """A metallib (the project's writer) with one small function per name."""
    parts = []
    for name in names:
        seed = hashlib.sha256(name.encode("utf-8", "surrogateescape")).digest()
        parts.append(new_function(name, seed * 4, reflection=seed[:12]))
    return library_bytes(new_library(parts))
