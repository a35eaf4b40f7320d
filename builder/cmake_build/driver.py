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

import json
import time
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING

from builder.cmake_build.cmake import PLAN_FILE, BuildSettings, BuildTree, build_folder_lock
from builder.cmake_build.progress import ProgressDisplay
from builder.cmake_build.toolchain import MetalToolchain
from builder.errors import UsageError
from builder.fileio import check_not_an_input
from builder.size.load import load_reports

if TYPE_CHECKING:
    from rich.console import Console

    from builder.cmake_build.plan import BuildPlan, PlanRequest
    from builder.size.report import Report

__all__ = [
    "BuildOutcome",
    "Split",
    "build_plan",
    "plan_request",
    "project_source_dir",
    "run_build",
    "split_families",
]


@dataclass(frozen=True)
class Split:
    """Selected units (catalog families or entry files) in plan order, divided by mode."""

    aot: tuple[str, ...]
    jit: tuple[str, ...]


def project_source_dir() -> Path:
    """The CMake project: the checkout root, or ``builder/_data`` in an installed wheel."""
    from builder.resources import cmake_dir

    return cmake_dir().parent


def plan_request(settings: BuildSettings) -> PlanRequest:
    """The plan request of ``settings``, as CMakeLists.txt passes the same options."""
    from builder.cmake_build.plan import DISCOVERY_CACHE, PlanRequest

    return PlanRequest(
        source_dir=settings.kernel_dir, kernels=settings.kernels, jit=settings.jit,
        jit_kernels=settings.jit_kernels, dtypes=settings.dtypes,
        include_dirs=settings.include_dirs, defines=settings.defines, exclude=settings.exclude,
        config_file=settings.config_file, chunk_size=settings.chunk_size, std=settings.std,
        deployment_target=settings.deployment_target,
        gen_dir=settings.build_dir / "metal_aot" / "src",
        # discovery's memory, kept by CMake's planning; never the first thing made in a new folder
        cache_file=(settings.build_dir / "metal_plan" / DISCOVERY_CACHE
                    if settings.build_dir.is_dir() else None),
    )  # fmt: skip


def build_plan(settings: BuildSettings) -> BuildPlan:
    """The plan of ``settings`` (UsageError, exit 2, when it cannot be built)."""
    from builder.cmake_build.plan import make_plan

    return make_plan(plan_request(settings))


def split_families(settings: BuildSettings) -> Split:
    """Validate the selection and divide it by mode, as the build will (exit 2 if bad)."""
    plan = build_plan(settings)
    return Split(plan.aot, plan.jit)


@dataclass(frozen=True)
class BuildOutcome:
    settings: BuildSettings
    split: Split
    toolchain: MetalToolchain | None
    edges_run: int
    seconds: float
    reports: list[Report]
    """The build measured as ``report BUILD_DIR`` measures it (while the lock was held)."""


def _configured_split(tree: BuildTree) -> Split | None:
    """The split CMake planned when ``tree`` was configured with these settings, or None."""
    if not tree.is_configured():
        return None
    try:
        units = json.loads((tree.build_dir / PLAN_FILE).read_text(encoding="utf-8"))["units"]
    except (OSError, ValueError, KeyError):
        return None
    return Split(tuple(u["name"] for u in units if u["mode"] == "aot"),
                 tuple(u["name"] for u in units if u["mode"] == "jit"))  # fmt: skip


def run_build(
    settings: BuildSettings, *, jobs: int | None, console: Console, verbose: bool = False,
    wait: bool = True,
) -> BuildOutcome:  # fmt: skip
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
    if settings.kernel_dir is not None and not settings.kernel_dir.is_dir():
        raise UsageError(f"--source-dir {settings.kernel_dir}: not a folder")
    check_not_an_input(settings.build_dir, [settings.kernel_dir, settings.config_file,
                                            *settings.include_dirs])  # fmt: skip
    found = find_metal_toolchain(settings.metal_compiler, sdk=settings.sdk)
    toolchain = found if isinstance(found, MetalToolchain) else None
    tree = BuildTree(settings, compiler=toolchain.explicit if toolchain else None)
    plan = None
    held: list[str] = []
    # A catalog tree configured the same way needs no new plan: CMake plans again by itself when
    # catalog.json changes. A tree of entry files is planned again (cheap) to see new files.
    split = _configured_split(tree) if is_catalog_tree(settings.kernel_dir or metal_src_dir()) else None
    if split is None:
        from builder.cmake_build.plan import plan_text

        planned = build_plan(settings)
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

    with build_folder_lock(settings.build_dir, wait=wait, on_wait=say):
        if not tree.is_configured(plan):
            say(f"Configuring {settings.build_dir} (AOT: {', '.join(split.aot) or '-'}; "
                f"JIT: {', '.join(split.jit) or '-'})")  # fmt: skip
            tree.configure(on_line=echo, plan=plan)
        with ProgressDisplay(console, f"Building {settings.build_dir.name}") as on_status:
            output = tree.build(jobs, on_status)
        seconds = time.perf_counter() - start
        if verbose:
            for line in output.other:
                say(line)
        reports = load_reports(str(settings.build_dir))
    return BuildOutcome(settings, split, toolchain, output.edges_run, seconds, reports)
