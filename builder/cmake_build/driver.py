"""One build from request to outputs: plan, check the toolchain, configure, build.

Shared by ``build`` and ``variants``, which then measure the build directory as ``report BUILD_DIR``
does (``builder.size.load``). The selection is the build plan's
(``builder.cmake_build.plan``, the function CMake runs too): a bad selection or AOT units without
a Metal compiler fail here, before any directory is created. A build directory configured with the
same settings is not configured again; for a tree without a catalog the plan is recomputed (it is
cheap: the entry files and metallib.toml) and compared with the one CMake wrote, since CMake does
not notice an entry file appearing.
"""

from __future__ import annotations

import time
from dataclasses import dataclass
from typing import TYPE_CHECKING

from builder.cmake_build.cmake import BuildTree, build_folder_lock
from builder.cmake_build.progress import ProgressDisplay
from builder.cmake_build.request import BuildRequest
from builder.cmake_build.toolchain import MetalToolchain
from builder.errors import UsageError
from builder.files.atomic import check_not_an_input
from builder.size.load import load_reports

if TYPE_CHECKING:
    from rich.console import Console

    from builder.cmake_build.plan import BuildPlan
    from builder.size.report import Report

__all__ = [
    "BuildOutcome",
    "Split",
    "build_plan",
    "run_build",
    "split_units",
]


@dataclass(frozen=True)
class Split:
    """Selected units (catalog families or entry files) in plan order, divided by mode."""

    aot: tuple[str, ...]
    jit: tuple[str, ...]


def build_plan(request: BuildRequest) -> BuildPlan:
    """The plan of ``request`` (UsageError, exit 2, when it cannot be built), as CMake will
    write it: with discovery's memory of the build folder when the folder exists (never the
    first thing made in a new folder)."""
    from builder.cmake_build.plan import DISCOVERY_CACHE, PLAN_FILE, make_plan

    cache = request.build_dir / PLAN_FILE
    return make_plan(
        request, cache_file=(cache.parent / DISCOVERY_CACHE if request.build_dir.is_dir() else None)
    )


def split_units(request: BuildRequest) -> Split:
    """Validate the selection and divide it by mode, as the build will (exit 2 if bad)."""
    plan = build_plan(request)
    return Split(plan.aot, plan.jit)


@dataclass(frozen=True)
class BuildOutcome:
    request: BuildRequest
    split: Split
    toolchain: MetalToolchain | None
    edges_run: int
    seconds: float
    reports: list[Report]
    """The build measured as ``report BUILD_DIR`` measures it (while the lock was held)."""


def _configured_split(tree: BuildTree) -> Split | None:
    """The split CMake planned when ``tree`` was configured with these settings, or None."""
    from builder.cmake_build.plan import PLAN_FILE, BuildPlan

    if not tree.is_configured():
        return None
    try:
        plan = BuildPlan.read(tree.build_dir / PLAN_FILE)
    except UsageError:
        return None
    return Split(plan.aot, plan.jit)


def run_build(
    request: BuildRequest,
    *,
    jobs: int | None,
    console: Console,
    verbose: bool = False,
    wait: bool = True,
) -> BuildOutcome:
    """Plan, check, configure (if needed), build with progress, measure. Raises
    UsageError/BuildFailed. Configuring, building and measuring (``report BUILD_DIR``'s
    measurement, ``builder.size.load``) hold the build folder's lock
    (``build_folder_lock``): another run on it waits, or with ``wait=False`` is refused."""
    from builder.cmake_build.toolchain import (
        ToolchainMissing,
        find_metal_toolchain,
        missing_message,
    )
    from builder.kernels.discovery import is_catalog_tree
    from builder.resources import metal_src_dir

    start = time.perf_counter()
    kernels = request.tree
    if kernels.source_dir is not None and not kernels.source_dir.is_dir():
        raise UsageError(f"--source-dir {kernels.source_dir}: not a folder")
    build_dir = request.build_dir
    check_not_an_input(build_dir, [kernels.source_dir, kernels.config_file, *kernels.include_dirs])
    found = find_metal_toolchain(request.toolchain.metal_compiler, sdk=request.toolchain.sdk)
    toolchain = found if isinstance(found, MetalToolchain) else None
    tree = BuildTree(request, compiler=toolchain.explicit if toolchain else None)
    plan = None
    held: list[str] = []
    # A catalog tree configured the same way needs no new plan: CMake plans again by itself when
    # catalog.json changes. A tree of entry files is planned again (cheap) to see new files.
    split = (
        _configured_split(tree) if is_catalog_tree(kernels.source_dir or metal_src_dir()) else None
    )
    if split is None:
        from builder.cmake_build.plan import plan_text

        planned = build_plan(request)
        split = Split(planned.aot, planned.jit)
        plan = plan_text(planned) if planned.kind == "discovered" else None
        held = [f"{u.name} ({u.reason})" for u in planned.units if u.reason]
    if split.aot and isinstance(found, ToolchainMissing):
        stays = f" Even with --jit, these stay AOT: {'; '.join(held)}." if held else ""
        raise UsageError(missing_message(found) + stays)
    if not split.aot:
        toolchain = None
    echo = (
        (lambda line: console.print(line, markup=False, highlight=False, soft_wrap=True))
        if verbose
        else None
    )

    def say(line: str) -> None:
        console.print(line, markup=False, highlight=False, soft_wrap=True)

    with build_folder_lock(build_dir, wait=wait, on_wait=say):
        if not tree.is_configured(plan):
            say(
                f"Configuring {build_dir} (AOT: {', '.join(split.aot) or '-'}; "
                f"JIT: {', '.join(split.jit) or '-'})"
            )
            tree.configure(on_line=echo, plan=plan)
        with ProgressDisplay(console, f"Building {build_dir.name}") as on_status:
            output = tree.build(jobs, on_status)
        seconds = time.perf_counter() - start
        if verbose:
            for line in output.other:
                say(line)
        reports = load_reports(str(build_dir))
    return BuildOutcome(request, split, toolchain, output.edges_run, seconds, reports)
