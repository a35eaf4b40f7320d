"""Build every variant this machine can build and put their sizes side by side.

Variants (each in ``<build dir>/<name>``):

* ``jit-on``: every selected family JIT (host C++ compiler only);
* ``jit-off``: every selected family AOT into mlx.metallib (needs the Metal compiler);
* ``mixed``: the largest families (by instantiation count: binary, copy) JIT, the rest AOT.

A variant that needs the Metal compiler on a machine without one is reported as not built, with
the reason, instead of failing the run.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, replace
from pathlib import Path
from typing import TYPE_CHECKING, Any

from builder.cmake_build.cmake import BuildFailed, BuildSettings
from builder.cmake_build.driver import BuildOutcome, run_build, split_families
from builder.cmake_build.toolchain import ToolchainMissing, find_metal_toolchain
from builder.size.build_sizes import sizes_to_dict

if TYPE_CHECKING:
    from rich.console import Console

__all__ = ["MIXED_JIT", "VariantResult", "build_variants", "variants_to_dict"]

MIXED_JIT = ("binary", "copy")
"""JIT families of the mixed variant: the two with the most instantiations."""


@dataclass(frozen=True)
class VariantResult:
    name: str
    description: str
    outcome: BuildOutcome | None
    reason: str | None
    """Why it was not built (None when it was)."""


def _variant_settings(base: BuildSettings, root: Path) -> list[tuple[str, str, BuildSettings]]:
    common = replace(base, jit_kernels=())
    out = [
        ("jit-on", "every family JIT", replace(common, jit=True, build_dir=root / "jit-on")),
        ("jit-off", "every family AOT", replace(common, jit=False, build_dir=root / "jit-off")),
    ]
    split = split_families(replace(common, jit=False))
    mixed = tuple(f for f in MIXED_JIT if f in split.aot)
    if mixed and len(mixed) < len(split.aot):
        out.append((
            "mixed", f"{'+'.join(mixed)} JIT, the rest AOT",
            replace(common, jit=False, jit_kernels=mixed, build_dir=root / "mixed"),
        ))  # fmt: skip
    return out


def build_variants(
    base: BuildSettings, root: Path, *, jobs: int | None, console: Console, verbose: bool = False
) -> list[VariantResult]:
    """Build each variant; a missing compiler or a failed build is recorded, not raised."""
    toolchain = find_metal_toolchain(base.metal_compiler, base.metallib_linker)
    results = []
    for name, description, settings in _variant_settings(base, root):
        if split_families(settings).aot and isinstance(toolchain, ToolchainMissing):
            why = f"no Metal compiler ({toolchain.reason}) — needs macOS with Xcode"
            console.print(
                f"{name}: not built: {why}", markup=False, highlight=False, soft_wrap=True
            )
            results.append(VariantResult(name, description, None, why))
            continue
        try:
            outcome = run_build(settings, jobs=jobs, console=console, verbose=verbose)
        except BuildFailed as exc:
            console.print(f"{name}: {exc}", markup=False, highlight=False, soft_wrap=True)
            results.append(VariantResult(name, description, None, f"build failed: {exc}"))
            continue
        results.append(VariantResult(name, description, outcome, None))
    return results


def variants_to_dict(results: Sequence[VariantResult]) -> dict[str, Any]:
    return {
        "schema": 1,
        "variants": [
            {
                "name": r.name,
                "description": r.description,
                "built": r.outcome is not None,
                "reason": r.reason,
                "seconds": round(r.outcome.seconds, 3) if r.outcome else None,
                "sizes": sizes_to_dict(r.outcome.sizes) if r.outcome else None,
            }
            for r in results
        ],
    }
