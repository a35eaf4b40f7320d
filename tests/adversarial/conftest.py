"""Shared pieces of the adversarial suite: hostile kernel trees, small metallibs, one-line checks.

Every test here plays the author of a pull request that a CI job analyses (docs/security.md):
the tree, its metallib.toml, the wheels and report JSON are theirs. What must hold is what the
issue asked for: each attack ends in exit 2 and one line, or is contained (nothing runs that the
input chose, nothing is written outside the output, cache or build folder).
"""

from __future__ import annotations

import os
from pathlib import Path

import pytest
from clirun import run_cli

from .hostile import Cli


@pytest.fixture
def cli(capsys: pytest.CaptureFixture[str]) -> Cli:
    """``cli("kernels", "--source-dir", tree)`` -> (exit code, stdout, stderr), in process."""

    def run(*args: object) -> tuple[int, str, str]:
        return run_cli([os.fspath(a) if isinstance(a, Path) else str(a) for a in args], capsys)

    return run
