"""Build every build preset this machine can build and put their sizes side by side.

``presets`` builds them; a *variant* is something else, a subset that ``variants --from``
writes (``builder.subsets.variants``). The presets, each in ``<build dir>/<name>``, are
CMakePresets.json's (a catalog tree: each unit is a catalog family):

* ``jit-on``: every selected unit JIT (host C++ compiler only);
* ``jit-off``: every selected unit AOT into the metallib (needs the Metal compiler);
* ``mixed``: the largest units (by instantiation count) JIT, the rest AOT. Which ones is
  stated once, by the ``mixed`` preset of CMakePresets.json (``METALLIB_JIT``), so
  ``cmake --preset mixed`` and ``presets`` build the same thing.

A preset that needs the Metal compiler on a machine without one is reported as not built, with
the reason, instead of failing the run. Each built preset is measured as ``report <its folder>``
measures a build (``builder.size.load``).
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING

from builder.cmake_build.cmake import BuildFailed, build_folder_lock
from builder.cmake_build.driver import (
    BuildOutcome,
    ToolchainMissing,
    build_plan,
    find_metal_toolchain,
    run_build,
)
from builder.cmake_build.request import BuildRequest, project_dir
from builder.errors import BuilderError, UsageError
from builder.files.reading import read_json

if TYPE_CHECKING:
    from rich.console import Console

    from builder.size.report import Report

__all__ = ["PresetResult", "build_presets", "mixed_jit_units"]

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

    with build_folder_lock(root, wait=wait, on_wait=say):
        return _build_each(base, root, jobs=jobs, console=console, verbose=verbose, wait=wait)


def _build_each(
    base: BuildRequest,
    root: Path,
    *,
    jobs: int | None,
    console: Console,
    verbose: bool,
    wait: bool,
) -> list[PresetResult]:
    toolchain = find_metal_toolchain(base.toolchain.metal_compiler, sdk=base.toolchain.sdk)
    results = []
    for name, description, request in _preset_requests(base, root):
        if build_plan(request).aot and isinstance(toolchain, ToolchainMissing):
            why = f"no Metal compiler ({toolchain.reason}) — needs macOS with Xcode"
            results.append(PresetResult(name, description, None, why))
            continue
        try:
            outcome = run_build(request, jobs=jobs, console=console, verbose=verbose, wait=wait)
        except BuildFailed as exc:
            console.print(f"{name}: {exc}", markup=False, highlight=False, soft_wrap=True)
            results.append(PresetResult(name, description, None, f"build failed: {exc}"))
            continue
        (report,) = outcome.reports
        results.append(PresetResult(name, description, outcome, None, report))
    return results
