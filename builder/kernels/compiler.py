"""Finding the host C++ compiler that stands in for the Metal compiler on Linux.

``check`` and the CPU runner compile kernel sources as C++17 against the shim in
``metal_src/shim``. Any g++ >= 12 or clang >= 15 works (they have ``_Float16`` for ``half``). The
choice is explicit (``--compiler``), else ``$CXX``, else the first of g++, clang++, c++ on PATH.
"""

from __future__ import annotations

import os
import shutil
import subprocess
from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path

from builder.errors import UsageError

__all__ = ["Compiler", "find_compiler"]

_CANDIDATES = ("g++", "clang++", "c++")


@dataclass(frozen=True)
class Compiler:
    """A located C++ compiler and the flags that make it behave like our Metal front end."""

    path: str
    is_clang: bool
    version: str

    def base_flags(self, include_dirs: list[Path]) -> list[str]:
        """Language, warnings and plain diagnostics (no colour, no caret) for parsing."""
        flags = ["-std=c++17", "-x", "c++", "-Wall", "-Wextra", "-Wno-unknown-pragmas"]
        flags += ["-fno-diagnostics-show-caret"]
        if self.is_clang:
            flags += ["-fno-color-diagnostics", "-ferror-limit=50", "-Wno-ignored-attributes"]
        else:
            flags += [
                "-fdiagnostics-color=never",
                "-fmax-errors=50",
                "-fno-diagnostics-show-line-numbers",
            ]
        # Joined and absolute: no folder name can be read as an option (docs/security.md).
        flags += [f"-I{os.path.abspath(directory)}" for directory in include_dirs]
        return flags


def find_compiler(explicit: str | None = None, env: Mapping[str, str] | None = None) -> Compiler:
    """Locate a compiler, or raise UsageError (exit 2) saying how to get one."""
    env = os.environ if env is None else env
    wanted = explicit or env.get("CXX")
    names = [wanted] if wanted else list(_CANDIDATES)
    for name in names:
        path = shutil.which(name)
        if path is None:
            continue
        try:
            proc = subprocess.run(
                [path, "--version"], capture_output=True, text=True, timeout=30, check=False
            )
        except (OSError, subprocess.TimeoutExpired):
            continue
        if proc.returncode == 0:
            first = proc.stdout.splitlines()[0] if proc.stdout else name
            return Compiler(path, "clang" in proc.stdout.lower(), first.strip())
    if wanted:
        raise UsageError(f"C++ compiler {wanted!r} not found or not runnable")
    raise UsageError(
        "no C++ compiler found (tried g++, clang++, c++); install g++ >= 12 or clang >= 15, "
        "or pass --compiler / set CXX"
    )
