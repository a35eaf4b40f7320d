"""An interpreter that cannot import metallib-builder: the one the test venv was made from, run
as ``python -I -S`` (no environment variables, no site-packages, no user site), behind a small
shell script so CMake's FindPython3 can be given it as ``Python3_EXECUTABLE``."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

__all__ = ["isolated_python"]


def isolated_python(folder: Path) -> Path:
    """A script in ``folder`` running the base interpreter isolated; asserts that ``builder``
    cannot be imported there (ModuleNotFoundError), so what runs under it is no installed copy."""
    base = Path(getattr(sys, "_base_executable", sys.executable)).resolve()
    folder.mkdir(parents=True, exist_ok=True)
    script = folder / "isolated-python"
    script.write_text(f'#!/bin/sh\nexec "{base}" -I -S "$@"\n', encoding="utf-8")
    script.chmod(0o755)
    probe = subprocess.run(
        [str(script), "-c", "import builder"], capture_output=True, text=True, check=False
    )
    assert probe.returncode == 1 and "No module named 'builder'" in probe.stderr, probe.stderr
    return script
