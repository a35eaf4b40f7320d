"""The build plan: which units a build compiles ahead of time and which it embeds for run time.

Computed once per build, here, for any kernel tree:

* by the CLI (``build``, ``presets``): it refuses a bad selection and knows whether a Metal
  compiler is needed before anything is configured, then writes ``plan.json`` into the build
  folder and hands CMake its path (``-DMETALLIB_PLAN=``): CMake reads that plan and plans
  nothing itself;
* by CMake, only for a plain ``cmake`` run (no ``METALLIB_PLAN``): ``python -m
  builder.cmake_build.plan --request JSON`` with the cache variables as the request's JSON
  (``metallib_build_request``, cmake/MetallibBuildOptions.cmake).

Either way the record step (``builder.cmake_build.record``) and the JIT generator read the same
file, and a discovered tree's discovery is remembered beside it (``discovery.json``), so each entry
file is preprocessed once per build.

A **unit** is what gets one mode: a catalog family (``binary``; the catalog is expanded into
ordinary entry files in the build directory by ``builder.kernels.catalog_tree``) or an entry
file of a discovered tree (``unary.metal``, compiled as it is). ``--jit GLOBS``
(``METALLIB_JIT``) names the JIT units and ``--aot GLOBS`` the AOT ones (every other unit JIT),
by name or glob, for both tree kinds, as ``variants --from --jit/--aot`` do; a glob that names
no unit is refused (exit 2). An entry file stays AOT when asked JIT if ``[build] aot-only``
names it (``builder.subsets.variant_select.held_aot``; the unit says why); a JIT entry file is
embedded whole or needs the run-time preambles of ``builder.jit.tree_preambles`` (its
``embedding``, ``builder.kernels.embedding``), and every build of a tree with run-time-only
kernels embeds their headers in the host library, AOT builds included. The plan of
a discovered tree passes the coverage check (``builder.subsets.coverage``) or is refused (exit 1).
"""

from __future__ import annotations

import argparse
import json
import sys
from collections.abc import Sequence
from pathlib import Path

from builder.cmake_build.plan_model import DISCOVERY_CACHE, PLAN_FILE, BuildPlan, plan_text
from builder.cmake_build.plan_trees import catalog_plan, discovered_plan, select_families
from builder.cmake_build.request import BuildRequest
from builder.errors import BuilderError, UsageError

__all__ = ["main", "make_plan", "write_plan"]


def make_plan(request: BuildRequest, *, cache_file: Path | None = None) -> BuildPlan:
    """The plan for ``request``; UsageError (exit 2) for anything that cannot be built. Writes
    nothing. ``cache_file``: discovery's memory (``builder.kernels.discovery_cache``): a no-op
    build plans without preprocessing the tree again, and a new discovery rides on the plan
    (``memo``) until :func:`write_plan` remembers it; None: discover every time. The plan's
    request names the tree it planned (the bundled one when the request names none)."""
    from builder.kernels.discovery import is_catalog_tree
    from builder.kernels.tree_config import valid_deployment_target

    target = request.toolchain.deployment_target
    if target and not valid_deployment_target(target):
        raise UsageError(f"--deployment-target {target}: expected an OS version such as 14.0")
    if request.tree.source_dir is None:
        from builder.resources import metal_src_dir

        source_dir = metal_src_dir()
    else:
        source_dir = Path(request.tree.source_dir)
        if not source_dir.is_dir():
            raise UsageError(f"--source-dir {source_dir}: not a folder")
    source_dir = source_dir.resolve()
    request = request.replace(source_dir=source_dir)
    if is_catalog_tree(source_dir):
        return catalog_plan(request, source_dir)
    return discovered_plan(request, source_dir, cache_file)


def write_plan(plan: BuildPlan, path: Path) -> bool:
    """Write a catalog tree's generated entry files (into the build folder), the discovery the
    plan made (beside ``path``) and ``path``, each only when its bytes change; True when the
    plan file was written."""
    from builder.files.atomic import write_if_changed
    from builder.kernels.catalog_tree import write_tree
    from builder.kernels.discovery_cache import remember

    if plan.generated is not None:
        write_tree(plan.generated, plan.source_root)
    if plan.memo is not None:
        remember(path.parent / DISCOVERY_CACHE, plan.memo)
    return write_if_changed(path, plan_text(plan))


PLANNER_MODULES = "planner_modules.txt"
"""Beside plan.json after a plain CMake run: the package's modules the planner ran, one path a
line. CMake re-runs configuration when one changes (CMAKE_CONFIGURE_DEPENDS), so the list is
what really ran, never a hand-kept one."""


def main(argv: Sequence[str] | None = None) -> int:
    """Write the plan of a plain CMake run (configure time) from its request (the cache
    variables as the request's JSON), or with ``--select`` only validate catalog families and
    print them (``metallib_add_jit_library``). Exit 2 with one line on bad input."""
    parser = argparse.ArgumentParser(prog="python -m builder.cmake_build.plan", allow_abbrev=False)
    parser.add_argument("--request", help="the build request as JSON (BuildRequest.from_json)")
    parser.add_argument("--build-dir", type=Path, help="the build folder (CMAKE_BINARY_DIR)")
    parser.add_argument("--select", action="store_true", help="validate --kernels and print them")
    parser.add_argument("--source-dir", type=Path, help="--select: the catalog tree")
    parser.add_argument("--kernels", default="", help="--select: the families asked for")
    args = parser.parse_args(argv)
    try:
        if args.select:
            from builder.kernels.catalog import load_catalog, split_names

            if args.source_dir is None:
                parser.error("--select needs --source-dir")
            catalog = load_catalog(args.source_dir)
            asked = tuple(split_names(args.kernels.replace(";", ",")) or ())
            chosen = select_families(catalog, asked, keep_order=True)
            print(";".join(chosen))
            return 0
        if args.request is None or args.build_dir is None:
            parser.error("--request and --build-dir are required to write a plan")
        try:
            data = json.loads(args.request)
            if not isinstance(data, dict):
                raise UsageError("the build request: not a JSON object")
            request = BuildRequest.from_json(data)
        except ValueError as exc:
            raise UsageError(f"the build request: {exc}") from None
        request = request.replace(build_dir=args.build_dir.resolve())
        plan_file = args.build_dir / PLAN_FILE
        write_plan(make_plan(request, cache_file=plan_file.parent / DISCOVERY_CACHE), plan_file)
        from builder.files.atomic import write_if_changed
        from builder.jit.depfile import own_modules

        modules = "".join(f"{m.as_posix()}\n" for m in own_modules())
        write_if_changed(plan_file.parent / PLANNER_MODULES, modules)
    except BuilderError as exc:
        print(f"error: {exc}", file=sys.stderr)
        return 2
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
