"""Debian's LLVM tools as an independent reader of the modules inside metallibs."""

from __future__ import annotations

import shutil
import subprocess
from pathlib import Path

import pytest

__all__ = ["disassemble"]


def disassemble(module: Path) -> str:
    """``llvm-dis`` text of one module file; skips the test when LLVM is not installed."""
    llvm_dis = shutil.which("llvm-dis")
    if llvm_dis is None:
        pytest.skip(
            "llvm-dis not installed (Debian package llvm; scripts/setup.sh --test installs it)"
        )
    done = subprocess.run(
        [llvm_dis, str(module), "-o", "-"], capture_output=True, text=True, check=False
    )
    assert done.returncode == 0, done.stderr
    return done.stdout
