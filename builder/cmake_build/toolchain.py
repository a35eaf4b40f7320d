"""Is there a Metal compiler? Asked before configuring, so an AOT request fails in one line.

CMake would stop too (cmake/MetalToolchain.cmake), but only after creating a build directory and
printing a configure log; the CLI checks first with the same resolution order: an explicit path
(``--metal-compiler`` / ``--metallib-linker``), then ``METAL_COMPILER`` / ``METALLIB_LINKER`` from
the environment, then ``xcrun -sdk macosx --find metal|metallib``.
"""

from __future__ import annotations

import os
import shutil
import subprocess
from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path

from builder.errors import UsageError

__all__ = [
    "MetalToolchain",
    "ToolchainMissing",
    "find_metal_toolchain",
    "missing_message",
    "require_metal_toolchain",
]


@dataclass(frozen=True)
class MetalToolchain:
    """The compiler and linker an AOT build will use, and where each was found."""

    compiler: str
    linker: str
    origin: str
    """``--metal-compiler``, ``METAL_COMPILER`` or ``xcrun``."""


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
    compiler: str | None = None,
    linker: str | None = None,
    env: Mapping[str, str] | None = None,
    sdk: str = "macosx",
) -> MetalToolchain | ToolchainMissing:
    """Resolve the toolchain without raising; see the module docstring for the order."""
    env = os.environ if env is None else env
    origin = "--metal-compiler" if compiler else "METAL_COMPILER"
    compiler = compiler or env.get("METAL_COMPILER") or None
    linker = linker or env.get("METALLIB_LINKER") or None
    if compiler:
        found = _resolve(compiler)
        if found is None:
            return ToolchainMissing(f"{origin}={compiler} is not an executable")
        if linker is None:  # the linker usually sits beside the compiler
            sibling = Path(found).with_name("metallib")
            linker = str(sibling) if sibling.is_file() else None
        if linker is None:
            return ToolchainMissing(f"no metallib beside {found} and METALLIB_LINKER is not set")
        found_linker = _resolve(linker)
        if found_linker is None:
            return ToolchainMissing(f"METALLIB_LINKER={linker} is not an executable")
        return MetalToolchain(found, found_linker, origin)
    xcrun = shutil.which("xcrun", path=env.get("PATH"))
    if xcrun is None:
        return ToolchainMissing("xcrun not found")
    metal = _xcrun_find(xcrun, "metal", sdk)
    metallib = _xcrun_find(xcrun, "metallib", sdk)
    if metal is None or metallib is None:
        return ToolchainMissing(f"xcrun -sdk {sdk} --find metal/metallib failed")
    return MetalToolchain(metal, metallib, "xcrun")


def missing_message(missing: ToolchainMissing) -> str:
    """The one message shown when AOT was asked for and there is no compiler."""
    return (
        f"AOT build needs Apple's Metal compiler, and none was found ({missing.reason}). "
        "AOT compilation needs macOS with Xcode or the Metal toolchain. Point at a compiler with "
        "--metal-compiler /path/to/metal or METAL_COMPILER=/path/to/metal (and "
        "METALLIB_LINKER=/path/to/metallib when it is not beside it), or build every family "
        "JIT with --jit (no Metal compiler needed)."
    )


def require_metal_toolchain(
    compiler: str | None = None, linker: str | None = None, env: Mapping[str, str] | None = None
) -> MetalToolchain:
    """The toolchain, or UsageError (exit 2) with :func:`missing_message`."""
    found = find_metal_toolchain(compiler, linker, env)
    if isinstance(found, ToolchainMissing):
        raise UsageError(missing_message(found))
    return found
