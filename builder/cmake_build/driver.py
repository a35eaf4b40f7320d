"""One build from request to outputs: plan, check the toolchain, configure, build.

Shared by ``build`` and ``presets``, which then measure the build directory as ``report BUILD_DIR``
does (``builder.size.load``). The selection is the build plan's
(``builder.cmake_build.plan``), made once per run, here: a bad selection or AOT units without
a Metal compiler fail before any directory is created. Then the plan is written into the build
folder (only when its bytes change) and CMake is configured to read it (``-DMETALLIB_PLAN``;
once per folder: Ninja re-runs CMake when plan.json changes, e.g. when an entry file appeared).
"""

from __future__ import annotations

import time
from dataclasses import dataclass, replace
from typing import TYPE_CHECKING

from builder.cmake_build.cmake import BuildTree, ProgressDisplay, build_folder_lock
from builder.cmake_build.request import BuildRequest
from builder.cmake_build.toolchain import MetalToolchain
from builder.errors import UsageError
from builder.files.atomic import check_not_an_input
from builder.size.load import load_build

if TYPE_CHECKING:
    from rich.console import Console

    from builder.cmake_build.plan_model import BuildPlan
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
    """The plan of ``request`` (UsageError, exit 2, when it cannot be built), with discovery's
    memory of the build folder; writes nothing (:func:`run_build` writes it)."""
    from builder.cmake_build.plan import make_plan
    from builder.cmake_build.plan_model import DISCOVERY_CACHE, PLAN_FILE

    return make_plan(request, cache_file=(request.build_dir / PLAN_FILE).parent / DISCOVERY_CACHE)


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
    from builder.cmake_build.plan import write_plan
    from builder.cmake_build.plan_model import PLAN_FILE
    from builder.cmake_build.toolchain import (
        ToolchainMissing,
        find_metal_toolchain,
        missing_message,
    )

    start = time.perf_counter()
    kernels = request.tree
    if kernels.source_dir is not None and not kernels.source_dir.is_dir():
        raise UsageError(f"--source-dir {kernels.source_dir}: not a folder")
    build_dir = request.build_dir
    check_not_an_input(build_dir, [kernels.source_dir, kernels.config, *kernels.include_dirs])
    plan = build_plan(request)
    split = Split(plan.aot, plan.jit)
    found = find_metal_toolchain(request.toolchain.metal_compiler, sdk=request.toolchain.sdk)
    toolchain = found if isinstance(found, MetalToolchain) and split.aot else None
    if split.aot and isinstance(found, ToolchainMissing):
        held = [f"{u.name} ({u.reason})" for u in plan.units if u.reason]
        stays = f" Asked to be JIT, these stay AOT: {'; '.join(held)}." if held else ""
        # --jit helps unless every AOT unit is held AOT whatever is asked
        movable = any(u.mode == "aot" and not u.reason for u in plan.units)
        raise UsageError(missing_message(found, jit_helps=movable) + stays)
    # CMake gets the compiler found here (None: it asks xcrun itself), through the plan
    compiler = toolchain.explicit if toolchain else None
    plan = replace(plan, request=plan.request.replace(metal_compiler=compiler))
    tree = BuildTree(build_dir, build_dir / PLAN_FILE)
    echo = (
        (lambda line: console.print(line, markup=False, highlight=False, soft_wrap=True))
        if verbose
        else None
    )

    def say(line: str) -> None:
        console.print(line, markup=False, highlight=False, soft_wrap=True)

    with build_folder_lock(build_dir, wait=wait, on_wait=say):
        changed = write_plan(plan, tree.plan_file)
        if changed or not tree.is_configured():
            say(
                f"Configuring {build_dir} (AOT: {', '.join(split.aot) or '-'}; "
                f"JIT: {', '.join(split.jit) or '-'})"
            )
            tree.configure(on_line=echo, again=changed)
        with ProgressDisplay(console, f"Building {build_dir.name}") as on_status:
            output = tree.build(jobs, on_status)
        seconds = time.perf_counter() - start
        if verbose:
            for line in output.other:
                say(line)
        reports = load_build(build_dir)
    return BuildOutcome(request, split, toolchain, output.edges_run, seconds, reports)
