"""One build from request to outputs (plan, check the toolchain, configure, build), and every
build preset of ``presets``, each such a build.

``build`` and ``presets`` then measure the build directory as ``report BUILD_DIR`` does
(``builder.size.load``). The selection is the build plan's (``builder.cmake_build.plan``), made
once per run, here: a bad selection or AOT units without a Metal compiler fail before any
directory is created. Then the plan is written into the build folder (only when its bytes
change) and CMake is configured to read it (``-DMETALLIB_PLAN``; once per folder: Ninja re-runs
CMake when plan.json changes, e.g. when an entry file appeared).

Is there a Metal compiler? Asked before configuring, so an AOT request fails in one line.

CMake would stop too (cmake/MetalToolchain.cmake), but only after creating a build directory and
printing a configure log; the CLI checks first with the same resolution order: an explicit path
(``--metal-compiler``), then ``METAL_COMPILER`` from the environment, then ``xcrun -sdk <sdk>
--find metal``. One driver compiles and links (``metal -o lib.metallib *.air``, as MLX does), so
there is no separate linker to find. A compiler found through xcrun is run as ``xcrun -sdk <sdk>
metal`` (:attr:`MetalToolchain.command`), so the SDK is the one asked for.

The presets (``presets``; a *variant* is something else, a subset that ``variants --from``
writes), each in ``<build dir>/<name>``, are CMakePresets.json's (a catalog tree: each unit is a
catalog family):

* ``jit-on``: every selected unit JIT (host C++ compiler only);
* ``jit-off``: every selected unit AOT into the metallib (needs the Metal compiler);
* ``mixed``: the largest units (by instantiation count) JIT, the rest AOT. Which ones is
  stated once, by the ``mixed`` preset of CMakePresets.json (``METALLIB_JIT``), so
  ``cmake --preset mixed`` and ``presets`` build the same thing.

A preset that needs the Metal compiler on a machine without one is reported as not built, with
the reason, instead of failing the run.
"""

from __future__ import annotations

import os
import shutil
import subprocess
import time
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, replace
from pathlib import Path
from typing import TYPE_CHECKING

from builder.cmake_build.cmake import BuildFailed, BuildTree, build_folder_lock, progress_display
from builder.cmake_build.plan_model import METAL_COMPILER, SDK, BuildRequest, project_dir
from builder.errors import BuilderError, UsageError
from builder.files.atomic import check_not_an_input
from builder.files.reading import read_json
from builder.size.load import load_build

if TYPE_CHECKING:
    from rich.console import Console

    from builder.cmake_build.plan_model import BuildPlan
    from builder.size.report import Report

__all__ = [
    "BuildOutcome",
    "MetalToolchain",
    "PresetResult",
    "ToolchainMissing",
    "build_plan",
    "build_presets",
    "find_metal_toolchain",
    "left_out_line",
    "missing_message",
    "mixed_jit_units",
    "run_build",
]


def build_plan(request: BuildRequest) -> BuildPlan:
    """The plan of ``request`` (UsageError, exit 2, when it cannot be built), with discovery's
    memory of the build folder; writes nothing (:func:`run_build` writes it)."""
    from builder.cmake_build.plan import make_plan
    from builder.cmake_build.plan_model import DISCOVERY_CACHE, PLAN_FILE

    return make_plan(request, cache_file=(request.build_dir / PLAN_FILE).parent / DISCOVERY_CACHE)


@dataclass(frozen=True)
class BuildOutcome:
    request: BuildRequest
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

    start = time.perf_counter()
    kernels = request.tree
    if kernels.source_dir is not None and not kernels.source_dir.is_dir():
        raise UsageError(f"--source-dir {kernels.source_dir}: not a folder")
    build_dir = request.build_dir
    check_not_an_input(build_dir, [kernels.source_dir, kernels.config, *kernels.include_dirs])
    plan = build_plan(request)
    found = find_metal_toolchain(request[METAL_COMPILER], sdk=request[SDK])
    toolchain = found if isinstance(found, MetalToolchain) and plan.aot else None
    if plan.aot and isinstance(found, ToolchainMissing):
        raise UsageError(missing_message(found, plan.aot_only))
    # CMake gets the compiler found here (None: it asks xcrun itself), through the plan
    compiler = toolchain.explicit if toolchain else None
    plan = replace(plan, request=plan.request.replace(metal_compiler=compiler))
    tree = BuildTree(build_dir, build_dir / PLAN_FILE)

    def say(line: str) -> None:
        console.print(line, markup=False, highlight=False, soft_wrap=True)

    if plan.left_out:
        say(left_out_line(plan))

    with build_folder_lock(build_dir, wait=wait, on_wait=say):
        changed = write_plan(plan, tree.plan_file)
        if changed or not tree.is_configured():
            say(
                f"Configuring {build_dir} (AOT: {', '.join(plan.aot) or '-'}; "
                f"JIT: {', '.join(plan.jit) or '-'})"
            )
            tree.configure(on_line=say if verbose else None, again=changed)
        with progress_display(console, f"Building {build_dir.name}") as on_status:
            output = tree.build(jobs, on_status)
        seconds = time.perf_counter() - start
        if verbose:
            for line in output.other:
                say(line)
        reports = load_build(build_dir)
    return BuildOutcome(request, output.edges_run, seconds, reports)


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


_WHERE_METAL_RUNS = "Xcode on macOS, or Metal tools for Windows"
"""Where Apple's Metal compiler comes from: Xcode (or the Metal toolchain) on macOS, and the Metal
Developer Tools for Windows; it runs on no other OS."""


def missing_message(
    missing: ToolchainMissing, aot_only: Sequence[str] = (), *, jit_helps: bool = True
) -> str:
    """The one message shown when AOT was asked for and there is no compiler, with only the way
    out that works for the tree: ``--jit`` when every unit can go JIT; when ``[build] aot-only``
    keeps entry files AOT whatever is asked (``aot_only``, MLX's eight), those files named, and
    what builds without a compiler: the other entry files JIT, or the run-time sources alone.
    ``jit_helps`` False: no way out but the compiler (a check that compiles AOT itself)."""
    text = (
        f"AOT build needs Apple's Metal compiler, and none was found ({missing.reason}). "
        "It comes with Xcode or the Metal toolchain on macOS and with the Metal Developer "
        "Tools for Windows. Point at a compiler with "
        "--metal-compiler /path/to/metal or METAL_COMPILER=/path/to/metal"
    )
    if not jit_helps:
        return text + "."
    if not aot_only:
        return text + ", or build every unit JIT with --jit (no Metal compiler needed)."
    count = f"{len(aot_only)} entry file{'s' if len(aot_only) != 1 else ''}"
    return (
        f"{text}. [build] aot-only keeps {count} AOT whatever --jit asks, so only that compiler "
        f"builds them: {', '.join(aot_only)}. Without it, build the other entry files JIT "
        "(--jit, with --exclude for each of those), or write the run-time sources with embed "
        "or variants --from."
    )


def left_out_line(plan: BuildPlan) -> str:
    """The stderr line naming the entry files the plan's platform leaves out
    (``[kernels.requires]``), with that platform: the Metal version discovery assumed and the
    deployment target."""
    version = plan.discovery.metal_version if plan.discovery else plan.metal_version
    msl = f"MSL {version // 100}.{version % 100 // 10}" if version else "this platform"
    target = f", deployment target {plan.deployment_target}" if plan.deployment_target else ""
    count = f"{len(plan.left_out)} entry file{'s' if len(plan.left_out) != 1 else ''}"
    return (
        f"Left out for {msl}{target} by [kernels.requires] (--deployment-target or --std "
        f"names another platform): {count}, {', '.join(plan.left_out)}"
    )


PRESETS_FILE = "CMakePresets.json"


def mixed_jit_units(project_dir: Path) -> tuple[str, ...]:
    """The JIT units of the mixed preset: ``METALLIB_JIT`` of the ``mixed`` configure
    preset in ``project_dir``/CMakePresets.json (a CMake list). BuilderError (exit 2) naming the
    file when it cannot be read or has no such preset: an incomplete checkout or install."""
    path = project_dir / PRESETS_FILE
    try:
        presets = read_json(path, "the presets")["configurePresets"]
        (mixed,) = [p for p in presets if p.get("name") == "mixed"]
        value = mixed["cacheVariables"]["METALLIB_JIT"]
    except (UsageError, ValueError, KeyError, TypeError, AttributeError) as exc:
        raise BuilderError(
            f"{path}: no readable 'mixed' preset with METALLIB_JIT ({exc})"
        ) from None
    if not isinstance(value, str):
        raise BuilderError(f"{path}: METALLIB_JIT of the 'mixed' preset is not a string")
    return tuple(name for name in value.split(";") if name)


@dataclass(frozen=True)
class PresetResult:
    name: str
    description: str
    outcome: BuildOutcome | None
    reason: str | None
    """Why it was not built (None when it was)."""
    report: Report | None = None
    """The build measured as ``report <its folder>`` measures it (None when not built)."""

    @property
    def shipped_bytes(self) -> int | None:
        """What the preset ships: its metallib's and its host library's file sizes (None when
        not built, or when its host library is missing)."""
        report = self.report
        if report is None:
            return None
        metallib = report.file_size if report.source.path is not None else 0
        if not report.jit_units:
            return metallib
        return None if report.host_library is None else metallib + report.host_library.file_size


def _preset_requests(base: BuildRequest, root: Path) -> list[tuple[str, str, BuildRequest]]:
    common = base.replace(jit=(), aot=())
    out = [
        ("jit-on", "every unit JIT", common.replace(jit=("*",), build_dir=root / "jit-on")),
        ("jit-off", "every unit AOT", common.replace(build_dir=root / "jit-off")),
    ]
    aot = build_plan(common).aot
    mixed = tuple(f for f in mixed_jit_units(project_dir()) if f in aot)
    if mixed and len(mixed) < len(aot):
        out.append(
            (
                "mixed",
                f"{'+'.join(mixed)} JIT, the rest AOT",
                common.replace(jit=mixed, build_dir=root / "mixed"),
            )
        )
    return out


def build_presets(
    base: BuildRequest,
    root: Path,
    *,
    jobs: int | None,
    console: Console,
    verbose: bool = False,
    wait: bool = True,
) -> list[PresetResult]:
    """Build and measure each preset; a missing compiler or a failed build is recorded, not
    raised. Why a preset was not built is not printed here: the table (or JSON) says it, once;
    only a failed build's output goes to ``console`` (stderr), as ``build`` shows it. The whole
    run holds ``root``'s lock (each preset's build its own folder's too): two runs in one root
    wait for each other, or with ``wait=False`` the second is refused."""

    def say(line: str) -> None:
        console.print(line, markup=False, highlight=False, soft_wrap=True)

    toolchain = find_metal_toolchain(base[METAL_COMPILER], sdk=base[SDK])
    results = []
    with build_folder_lock(root, wait=wait, on_wait=say):
        for name, description, request in _preset_requests(base, root):
            if build_plan(request).aot and isinstance(toolchain, ToolchainMissing):
                why = f"no Metal compiler ({toolchain.reason}) — {_WHERE_METAL_RUNS}"
                results.append(PresetResult(name, description, None, why))
                continue
            try:
                outcome = run_build(request, jobs=jobs, console=console, verbose=verbose, wait=wait)
            except BuildFailed as exc:
                say(f"{name}: {exc}")
                results.append(PresetResult(name, description, None, f"build failed: {exc}"))
                continue
            (report,) = outcome.reports
            results.append(PresetResult(name, description, outcome, None, report))
    return results
