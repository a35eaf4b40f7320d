"""The installed package's CMake folder, as a user gets it: ``metallib-builder --cmake-dir``."""

from __future__ import annotations

import shutil
import subprocess
import sys
from pathlib import Path

__all__ = ["cmake_dir"]


def cmake_dir() -> Path:
    """What the console script installed beside this interpreter prints for ``--cmake-dir``."""
    script = shutil.which("metallib-builder", path=str(Path(sys.executable).parent))
    assert script, f"no metallib-builder script beside {sys.executable}: is the package installed?"
    done = subprocess.run([script, "--cmake-dir"], capture_output=True, text=True, check=False)
    assert done.returncode == 0, done.stderr
    return Path(done.stdout.strip())
