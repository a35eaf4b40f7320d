"""``python -m builder.cmake_build.record``: write a build's manifest.json once its outputs exist.

CMake runs this as the last step of a build (after the metallib and the host library), with
what only CMake knows on its command line (:func:`configured`). It finds the kernels of every
unit of the plan and hands everything to ``builder.records.manifest``, the module that writes
the file:

* a catalog tree: each family's host names from the catalog (the same expansion that generated
  its sources); a JIT unit's as the JIT generator recorded them;
* a discovered tree: the discovery the plan made, remembered beside plan.json
  (``builder.kernels.discovery_cache``), so each entry file is preprocessed once per build; when
  a file it read changed since (a header edited after configuring), the tree is discovered
  again, so each kernel lands with the entry file that emits it as the sources are now.

Standard library and ``builder`` only (it runs in pip's isolated build environment too).
"""

from __future__ import annotations

import argparse
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any

from builder.cmake_build.plan_model import (
    AOT,
    CHUNK_SIZE,
    COMPRESS,
    DISCOVERY_CACHE,
    DTYPES,
    JIT,
    SDK,
    BuildPlan,
)
from builder.errors import BuilderError, step_exit
from builder.files.reading import read_json

__all__ = ["main", "plan_options", "unit_kernels"]


def unit_kernels(
    plan: BuildPlan, embed: Mapping[str, Any] | None, cache_file: Path | None = None
) -> dict[str, list[str]]:
    """Host names of every unit of ``plan``, in the order the tree gives them (``cache_file``:
    discovery's memory, None: discover)."""
    if plan.kind == "catalog":
        from builder.kernels.catalog import load_catalog

        catalog = load_catalog(plan.source_dir)
        dtypes = plan.request[DTYPES] or None
        out = {
            u.name: [i.host_name for i in catalog.expand([u.name], dtypes)]
            for u in plan.units
            if u.mode == "aot"
        }
        for unit in (embed or {}).get("units", []):
            out[unit["name"]] = list(unit.get("host_names", []))
        return out
    from builder.kernels.discovery_cache import discover_cached
    from builder.kernels.tree_config import TreeConfig

    found = plan.discovery
    if found is None:
        raise BuilderError("the plan of a discovered tree says nothing of its discovery")
    config = TreeConfig(
        include_dirs=tuple(Path(d) for d in found.include_dirs),
        defines=found.defines,
        exclude=found.exclude,
        metal_version=found.metal_version,
    )
    tree = discover_cached(plan.source_dir, config, cache_file)
    by_source = tree.by_source()
    return {u.name: [k.name for k in by_source.get(u.name, [])] for u in plan.units}


def plan_options(plan: BuildPlan) -> dict[str, object]:
    """The plan as the manifest's ``METALLIB_*`` options, stated once, here (CMake adds only
    what it resolved itself: the deployment target the compiles got): what was asked
    (``METALLIB_JIT``, ``METALLIB_AOT``: the globs), what it chose (the units by mode, and for a
    discovered tree the run-time sources' interface, from the options or metallib.toml) and
    what every compile gets (its flags, in order, the standard, the SDK, compression)."""
    request = plan.request
    interface = (
        {
            "METALLIB_JIT_NAMESPACE": plan.jit_namespace,
            "METALLIB_JIT_API": plan.jit_api,
            "METALLIB_JIT_LOOKUP": plan.jit_lookup,
        }
        if plan.kind == "discovered"
        else {}
    )
    return {
        "METALLIB_JIT": list(request[JIT]),
        "METALLIB_AOT": list(request[AOT]),
        "METALLIB_KERNELS": [u.name for u in plan.units],
        "METALLIB_AOT_UNITS": list(plan.aot),
        "METALLIB_JIT_UNITS": list(plan.jit),
        "METALLIB_DTYPES": list(request[DTYPES]),
        "METALLIB_AOT_CHUNK_SIZE": request[CHUNK_SIZE],
        **interface,
        "METALLIB_AOT_FLAGS": [*request.metal_flags, *plan.flags],
        "METALLIB_STD": plan.std or "",
        "METALLIB_SDK": request[SDK],
        "METALLIB_JIT_COMPRESS": request[COMPRESS],
    }


def configured(args: argparse.Namespace) -> dict[str, Any]:
    """What CMake resolved at configure time, as its command line states it (Ninja runs the
    step again when that changes): the generator, the deployment target the compiles got, the
    Metal toolchain (None without AOT units), the host compiler and each source's ``.air``."""
    toolchain = None
    if args.compiler is not None:
        toolchain = {"compiler": args.compiler, "compiler_version": args.compiler_version}
        if args.via:
            toolchain["via"] = args.via
        toolchain["launcher"] = ";".join(args.launcher)  # CMake's list, as it was given
    return {
        "generator": args.generator,
        "options": {"METALLIB_DEPLOYMENT_TARGET": args.deployment_target},
        "toolchain": toolchain,
        "host_compiler": args.host_compiler,
        "objects": dict(args.object),
    }


def main(argv: Sequence[str] | None = None) -> int:
    """Write the manifest; exit 2 with one line when an input is unusable."""
    parser = argparse.ArgumentParser(
        prog="python -m builder.cmake_build.record", allow_abbrev=False
    )
    parser.add_argument("--build-dir", type=Path, required=True)
    parser.add_argument("--plan", type=Path, required=True)
    parser.add_argument("--out", type=Path, required=True)
    parser.add_argument("--metallib")
    parser.add_argument("--embed", type=Path)
    parser.add_argument("--host-library")
    parser.add_argument("--generator", default="metallib-builder")
    parser.add_argument("--deployment-target", default="")
    parser.add_argument("--compiler")
    parser.add_argument("--compiler-version", default="")
    parser.add_argument("--via")
    parser.add_argument("--launcher", action="append", default=[])
    parser.add_argument("--host-compiler")
    parser.add_argument("--object", nargs=2, action="append", default=[])
    args = parser.parse_args(argv)
    return step_exit(lambda: _record(args), OSError, ValueError)


def _record(args: argparse.Namespace) -> None:
    from builder.records.manifest import Tree, build_manifest, write_manifest

    plan = BuildPlan.read(args.plan)
    embed = read_json(args.embed, "the JIT library's facts") if args.embed else None
    compiled: dict[str, list[str]] = {}
    for c in plan.compiles:
        compiled.setdefault(c.unit, []).append(str(c.source))
    manifest = build_manifest(
        args.build_dir.resolve(),
        configured(args),
        tree=Tree(plan.kind, plan.library),
        units=plan.units,
        compiled=compiled,
        options=plan_options(plan),
        kernels=unit_kernels(plan, embed, args.plan.parent / DISCOVERY_CACHE),
        metallib=args.metallib,
        embed=embed,
        embed_dir=args.embed.parent if args.embed else None,
        host_library=args.host_library,
    )
    write_manifest(args.out, manifest)


if __name__ == "__main__":
    raise SystemExit(main())
