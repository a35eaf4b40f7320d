"""Is there a Metal compiler? Asked before configuring, so an AOT request fails in one line.

CMake would stop too (cmake/MetalToolchain.cmake), but only after creating a build directory and
printing a configure log; the CLI checks first with the same resolution order: an explicit path
(``--metal-compiler``), then ``METAL_COMPILER`` from the environment, then ``xcrun -sdk <sdk>
--find metal``. One driver compiles and links (``metal -o lib.metallib *.air``, as MLX does), so
there is no separate linker to find. A compiler found through xcrun is run as ``xcrun -sdk <sdk>
metal`` (:attr:`MetalToolchain.command`), so the SDK is the one asked for.
"""

from __future__ import annotations

import os
import shutil
import subprocess
from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path

__all__ = [
    "MetalToolchain",
    "ToolchainMissing",
    "find_metal_toolchain",
    "missing_message",
]


@dataclass(frozen=True)
class MetalToolchain:
    """The Metal compiler driver an AOT build will use, where it was found, how it is run."""

    compiler: str
    origin: str
    """``--metal-compiler``, ``METAL_COMPILER`` or ``xcrun``."""
    command: tuple[str, ...]
    """The command that runs it: the path, or ``xcrun -sdk <sdk> metal``."""

    @property
    def explicit(self) -> str | None:
        """The path to hand to CMake as METAL_COMPILER (None: CMake asks xcrun itself)."""
        return None if self.origin == "xcrun" else self.compiler


@dataclass(frozen=True)
class ToolchainMissing:
    """Why no toolchain was found (one clause, e.g. ``xcrun not found``)."""

    reason: str


def _resolve(value: str) -> str | None:
    if os.sep in value or (os.altsep and os.altsep in value):
        path = Path(value).expanduser()
        return str(path.resolve()) if path.is_file() and os.access(path, os.X_OK) else None
    return shutil.which(value)


def _xcrun_find(xcrun: str, tool: str, sdk: str) -> str | None:
    try:
        done = subprocess.run(
            [xcrun, "-sdk", sdk, "--find", tool],
            check=False,
            capture_output=True,
            text=True,
            timeout=60,
        )
    except (OSError, subprocess.TimeoutExpired):
        return None
    found = done.stdout.strip()
    return found if done.returncode == 0 and found else None


def find_metal_toolchain(
    compiler: str | None = None, env: Mapping[str, str] | None = None, sdk: str = "macosx"
) -> MetalToolchain | ToolchainMissing:
    """Resolve the compiler without raising; see the module docstring for the order."""
    env = os.environ if env is None else env
    origin = "--metal-compiler" if compiler else "METAL_COMPILER"
    compiler = compiler or env.get("METAL_COMPILER") or None
    if compiler:
        found = _resolve(compiler)
        if found is None:
            return ToolchainMissing(f"{origin}={compiler} is not an executable")
        return MetalToolchain(found, origin, (found,))
    xcrun = shutil.which("xcrun", path=env.get("PATH"))
    if xcrun is None:
        return ToolchainMissing("xcrun not found")
    metal = _xcrun_find(xcrun, "metal", sdk)
    if metal is None:
        return ToolchainMissing(f"xcrun -sdk {sdk} --find metal failed")
    return MetalToolchain(metal, "xcrun", (xcrun, "-sdk", sdk, "metal"))


def missing_message(missing: ToolchainMissing, *, jit_helps: bool = True) -> str:
    """The one message shown when AOT was asked for and there is no compiler; ``jit_helps``
    False when the AOT units are held AOT whatever is asked (``[build] aot-only``), so --jit
    would not help."""
    way_out = (
        ", or build every unit JIT with --jit '*' (no Metal compiler needed)." if jit_helps else "."
    )
    return (
        f"AOT build needs Apple's Metal compiler, and none was found ({missing.reason}). "
        "AOT compilation needs macOS with Xcode or the Metal toolchain. Point at a compiler with "
        f"--metal-compiler /path/to/metal or METAL_COMPILER=/path/to/metal{way_out}"
    )
