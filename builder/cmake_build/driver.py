"""One build from request to measured sizes: select, check the toolchain, configure, build, measure.

Shared by ``build`` and ``variants``. The family split mirrors CMakeLists.txt exactly: JIT families
are ``jit_kernels`` when given, else every selected family with ``jit``, else none; the rest are
AOT. AOT families without a Metal compiler fail here, before any directory is created.
"""

from __future__ import annotations

import time
from dataclasses import dataclass, replace
from pathlib import Path
from typing import TYPE_CHECKING

from builder.cmake_build.cmake import BuildSettings, BuildTree
from builder.cmake_build.progress import ProgressDisplay
from builder.cmake_build.toolchain import MetalToolchain, require_metal_toolchain
from builder.errors import UsageError
from builder.size.build_sizes import BuildSizes, measure

if TYPE_CHECKING:
    from rich.console import Console

__all__ = ["BuildOutcome", "Split", "project_source_dir", "run_build", "split_families"]


@dataclass(frozen=True)
class Split:
    """Selected families in catalog order, divided by mode."""

    aot: tuple[str, ...]
    jit: tuple[str, ...]


def project_source_dir() -> Path:
    """The CMake project: the checkout root, or ``builder/_data`` in an installed wheel."""
    from builder.resources import cmake_dir

    return cmake_dir().parent


def split_families(settings: BuildSettings) -> Split:
    """Validate the selection against the catalog and divide it as CMake will (exit 2 if bad)."""
    from builder.cmake_build.aot_sources import select_families
    from builder.resources import metal_src_dir

    kernel_dir = settings.kernel_dir or metal_src_dir()
    if not (kernel_dir / "catalog.json").is_file():
        raise UsageError(f"{kernel_dir} is not a kernel tree: catalog.json not found")
    chosen, jit_listed = select_families(
        kernel_dir, ",".join(settings.kernels), ",".join(settings.jit_kernels)
    )
    selected = tuple(n for n in chosen.split(";") if n)
    if settings.dtypes:
        from builder.kernels import load_catalog

        load_catalog(kernel_dir).expand([], settings.dtypes)  # validates the dtype names
    if jit_listed:
        jit = tuple(n for n in jit_listed.split(";") if n)
    else:
        jit = selected if settings.jit else ()
    return Split(tuple(n for n in selected if n not in jit), jit)


@dataclass(frozen=True)
class BuildOutcome:
    settings: BuildSettings
    split: Split
    toolchain: MetalToolchain | None
    edges_run: int
    seconds: float
    sizes: BuildSizes


def run_build(
    settings: BuildSettings, *, jobs: int | None, console: Console, verbose: bool = False
) -> BuildOutcome:
    """Check, configure (if needed), build with progress, measure. Raises UsageError/BuildFailed."""
    split = split_families(settings)
    toolchain = None
    if split.aot:
        toolchain = require_metal_toolchain(settings.metal_compiler, settings.metallib_linker)
        settings = replace(
            settings, metal_compiler=toolchain.compiler, metallib_linker=toolchain.linker
        )
    start = time.perf_counter()
    tree = BuildTree(settings)
    echo = (
        (lambda line: console.print(line, markup=False, highlight=False, soft_wrap=True))
        if verbose
        else None
    )
    if not tree.is_configured():
        console.print(f"Configuring {settings.build_dir} (AOT: {', '.join(split.aot) or '-'}; "
                      f"JIT: {', '.join(split.jit) or '-'})", markup=False, highlight=False, soft_wrap=True)  # fmt: skip
    tree.configure(on_line=echo)
    with ProgressDisplay(console, f"Building {settings.build_dir.name}") as on_status:
        output = tree.build(jobs, on_status)
    seconds = time.perf_counter() - start
    if verbose:
        for line in output.other:
            console.print(line, markup=False, highlight=False, soft_wrap=True)
    return BuildOutcome(settings, split, toolchain, output.edges_run, seconds,
                        measure(settings.build_dir))  # fmt: skip
