"""Helpers of the adversarial tests: small metallibs, one-line checks, the in-process ``cli``
fixture (registered for the whole suite by tests/conftest.py).

Each adversarial test plays the author of a pull request that a CI job analyses
(docs/security.md): the tree, its metallib.toml, the wheels and report JSON are theirs. What must
hold is what issue 24 asked for: each attack ends in exit 2 and one line, or is contained
(nothing runs that the input chose, nothing is written outside the output, cache or build
folder). The tests sit beside the other tests of the package whose code they attack.
"""

from __future__ import annotations

import hashlib
import os
from collections.abc import Callable, Sequence
from pathlib import Path

import pytest
from clirun import run_cli
from synthetic import new_function, new_library

from builder.metallib import library_bytes

__all__ = ["Cli", "assert_one_error_line", "budget_error", "cli", "library_with"]

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


@pytest.fixture
def cli(capsys: pytest.CaptureFixture[str]) -> Cli:
    """``cli("kernels", "--source-dir", tree)`` -> (exit code, stdout, stderr), in process."""

    def run(*args: object) -> tuple[int, str, str]:
        return run_cli([os.fspath(a) if isinstance(a, Path) else str(a) for a in args], capsys)

    return run
