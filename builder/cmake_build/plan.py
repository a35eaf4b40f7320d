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
(``METALLIB_JIT``; ``--jit`` alone and a CMake true are ``*``) names the JIT units and ``--aot
GLOBS`` the AOT ones (every other unit JIT), by name or glob, for both tree kinds, as ``variants
--from --jit/--aot`` do; a glob that names no unit is refused (exit 2). An entry file stays AOT
whatever is asked if ``[build] aot-only`` names it (``builder.subsets.variant_library.held_aot``;
the plan lists them, and a unit asked JIT says why); a JIT entry file is
embedded whole or needs the run-time preambles of ``builder.jit.tree_preambles`` (its
``embedding``, ``KernelTree.embeddings``), and every build of a tree with run-time-only
kernels embeds their headers in the host library, AOT builds included. The preambles are those
of ``builder.jit.tree_preambles.split_preambles``, the rule ``variants`` takes, so a build and a
variant of the same split define the same functions (with ``preamble-set = "table"``, a mixed
build carries every table function a JIT build of the tree needs). The plan of
a discovered tree passes the coverage check (``builder.subsets.coverage``) or is refused (exit 1),
and lists the entry files its platform leaves out (``builder.kernels.platforms``).
"""

from __future__ import annotations

import argparse
import json
from collections.abc import Sequence
from dataclasses import replace
from pathlib import Path

from builder.cmake_build.plan_model import (
    AOT,
    BUILD_DIR,
    CATALOG_LIBRARY,
    CHUNK_SIZE,
    DEPLOYMENT_TARGET,
    DISCOVERY_CACHE,
    DTYPES,
    JIT,
    JIT_API,
    JIT_LOOKUP,
    JIT_NAMESPACE,
    KERNELS,
    PLAN_FILE,
    SDK,
    STD,
    BuildPlan,
    BuildRequest,
    Compile,
    DiscoverySettings,
    PlannedPreamble,
    Unit,
    plan_text,
)
from builder.errors import UsageError, step_exit
from builder.kernels.runtime_sources import DEFAULT_NAMESPACE, RuntimeSources, over_file
from builder.records.manifest import Embedding

__all__ = [
    "catalog_plan",
    "discovered_plan",
    "jit_units",
    "main",
    "make_plan",
    "write_plan",
]


def jit_units(units: Sequence[str], request: BuildRequest, where: str) -> set[str]:
    """The units asked to be JIT: those ``--jit`` names, or with ``--aot`` every unit it does
    not name (names or globs, '*' crossing '/', as ``variants --from`` reads them). A glob that
    names no unit of ``where`` is a UsageError naming it (exit 2): the unit it meant would
    silently keep its mode."""
    from builder.kernels.tree_files import path_matches

    jit, aot = request[JIT], request[AOT]
    if jit and aot:
        raise UsageError("--jit and --aot both choose the JIT units: give one of them")
    asked, flag = (jit, "--jit") if jit else (aot, "--aot")
    named: set[str] = set()
    for glob in asked:
        hits = {u for u in units if path_matches(u, [glob])}
        if not hits:
            count = f"{len(units):,} unit{'s' if len(units) != 1 else ''}"
            raise UsageError(f"{flag} {glob!r} matches no unit of {where} ({count})")
        named |= hits
    if aot:
        return {u for u in units if u not in named}
    return named


def _embedding(value: str) -> Embedding:
    """An entry file's embedding as the unit states it (``KernelTree.embeddings``'s words)."""
    if value not in ("whole-file", "preamble"):
        raise ValueError(f"embedding {value!r}")
    return "whole-file" if value == "whole-file" else "preamble"


def catalog_plan(request: BuildRequest, source_dir: Path) -> BuildPlan:
    """The plan of a catalog tree: families, each AOT (its generated entry files compiled) or
    JIT (its header one run-time preamble named after the family, embedded as any tree's by
    ``builder.cmake_build.tree_jit``, which adds the kernel table). With a build folder the
    catalog is expanded into the entry files of the tree the build writes there
    (``builder.kernels.catalog_tree``)."""
    from builder.kernels.catalog import load_catalog
    from builder.kernels.catalog_tree import GENERATED_TREE, generate_tree
    from builder.kernels.platforms import build_metal_version
    from builder.kernels.tree_config import TreeConfig

    tree = request.tree
    # refused when given: a catalog's host library is a registry with embed's interface
    over_file(
        RuntimeSources(),
        request[JIT_NAMESPACE],
        request[JIT_API],
        request[JIT_LOOKUP],
        catalog=True,
    )
    if tree.include_dirs or tree.defines or tree.exclude or tree.config:
        raise UsageError(
            f"{source_dir} is a catalog tree (catalog.json); -I, -D, --exclude and "
            "--config apply only to a folder of .metal entry files"
        )
    catalog = load_catalog(source_dir)
    selected = catalog.select(request[KERNELS] or None)
    if request[DTYPES]:
        catalog.expand([], request[DTYPES])  # validates the dtype names
    jit = jit_units(selected, request, f"the catalog tree {source_dir}")
    units: list[Unit] = []
    preambles: list[PlannedPreamble] = []
    for name in selected:
        header = catalog.families[name].header
        if name not in jit:
            units.append(Unit(name, "aot", (header,)))
            continue
        units.append(Unit(name, "jit", (header,), (name,), embedding="preamble"))
        path = str(catalog.source_dir / header)  # one run-time preamble, named after the family
        preambles.append(PlannedPreamble(name, (path,), (name,), "preamble"))
    std, version = build_metal_version(request[STD], TreeConfig())
    generated = None
    compiles: list[Compile] = []
    if request[BUILD_DIR] is not None:
        root = request.build_dir / GENERATED_TREE
        generated = generate_tree(catalog, selected, request[DTYPES] or None, request[CHUNK_SIZE])
        compiles = [Compile(e.unit, root / e.path) for e in generated.entries if e.unit not in jit]
    return BuildPlan(
        request,
        "catalog",
        catalog.source_dir,
        None,
        CATALOG_LIBRARY,
        tuple(units),
        (catalog.source_dir,),
        (),
        None,
        version,
        std,
        request[DEPLOYMENT_TARGET],
        (),
        tuple(compiles),
        tuple(preambles),
        jit_namespace=DEFAULT_NAMESPACE,
        jit_api="string",
        jit_lookup=False,
        generated=generated,
    )


def discovered_plan(request: BuildRequest, source_dir: Path, cache_file: Path | None) -> BuildPlan:
    """The plan of a tree of entry files: each entry file AOT or JIT, checked for coverage."""
    from builder.jit.tree_preambles import embedding_of, split_preambles
    from builder.kernels.discovery import discover
    from builder.kernels.discovery_cache import load_or_discover
    from builder.kernels.platforms import build_metal_version, for_platform, left_out_files
    from builder.kernels.preprocess import metal_defines
    from builder.kernels.tree_config import build_library, find_config, merge_flags
    from builder.settings.validators import parse_define
    from builder.subsets.coverage import check_coverage, require_coverage
    from builder.subsets.variant_library import held_aot

    asked = request.tree
    if request[KERNELS] or request[DTYPES]:
        raise UsageError(
            f"{source_dir} has no catalog.json: --kernels and --dtypes select catalog "
            "families; choose entry files with --exclude, and JIT ones with --jit or --aot"
        )
    settings = find_config(source_dir, asked.config, asked.include_dirs)
    # the command line's interface over metallib.toml's, as on variants --from
    runtime = over_file(
        settings.runtime, request[JIT_NAMESPACE], request[JIT_API], request[JIT_LOOKUP]
    )
    config = merge_flags(settings, asked.include_dirs, asked.defines, asked.exclude)
    target = request[DEPLOYMENT_TARGET] or config.deployment_target
    std, version = build_metal_version(request[STD], config, target, request[SDK])
    # the __METAL_VERSION__ the record step discovers with, too, and the entry files this
    # platform's build leaves out ([kernels.requires])
    config = for_platform(replace(config, metal_version=version), deployment_target=target)
    memo = None
    if cache_file is None:
        tree = discover(source_dir, config)
    else:
        tree, memo = load_or_discover(source_dir, config, cache_file)
    entries = list(tree.sources)
    root = source_dir.resolve()
    library = build_library(config, root, entries)  # every value a build carries, checked
    held = held_aot(tree)
    wanted = jit_units(entries, request, f"{root}, after exclusions")
    jit = [e for e in entries if e in wanted and e not in held]
    embedding = embedding_of(tree)
    preambles: list[PlannedPreamble] = []
    needs: dict[str, list[str]] = {}
    # the rule a variant of the same split takes (variants --from): the same functions
    specs = split_preambles(tree, jit)
    coverage = check_coverage(tree, jit, specs, [*config.include_dirs, root])
    require_coverage(coverage, "the build" + (" (--jit/--aot)" if wanted else ""))
    for spec in specs:
        preambles.append(
            PlannedPreamble(
                function=spec.function,
                headers=tuple(str(h) for h in spec.headers),
                entries=tuple(spec.entries),
                embedding=_embedding(spec.embedding),
            )
        )
        for entry in spec.entries:
            needs.setdefault(entry, []).append(spec.function)
    units = tuple(
        Unit(e, "jit", (e,), tuple(needs.get(e, ())), embedding=_embedding(embedding[e]))
        if e in jit
        else Unit(e, "aot", (e,), reason=held.get(e) if e in wanted else None)
        for e in entries
    )
    names = {parse_define(d)[0] for d in metal_defines([])} | {"__METAL_IOS__"}
    defines = tuple(d for d in config.defines if parse_define(d)[0] not in names)
    compiles = tuple(Compile(u.name, root / u.name) for u in units if u.mode == "aot")
    discovery = DiscoverySettings(
        include_dirs=tuple(str(d) for d in config.include_dirs),
        defines=tuple(config.defines),
        exclude=tuple(config.exclude),
        metal_version=config.metal_version,
    )
    return BuildPlan(
        request,
        "discovered",
        root,
        config.path.resolve() if config.path else None,
        library,
        units,
        (*config.include_dirs, root),
        defines,
        discovery,
        version,
        std,
        target,
        config.flags,
        compiles,
        tuple(preambles),
        jit_namespace=runtime.namespace,
        jit_api=runtime.api,
        jit_lookup=runtime.lookup,
        aot_only=tuple(e for e in entries if e in held),
        left_out=left_out_files(config, source_dir),
        memo=memo,
    )


def make_plan(request: BuildRequest, *, cache_file: Path | None = None) -> BuildPlan:
    """The plan for ``request``; UsageError (exit 2) for anything that cannot be built. Writes
    nothing. ``cache_file``: discovery's memory (``builder.kernels.discovery_cache``): a no-op
    build plans without preprocessing the tree again, and a new discovery rides on the plan
    (``memo``) until :func:`write_plan` remembers it; None: discover every time. The plan's
    request names the tree it planned (the bundled one when the request names none)."""
    from builder.kernels.discovery import is_catalog_tree

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
    variables as the request's JSON), or with ``--select`` validate catalog families and print
    them (``metallib_add_jit_library``), with ``--build-dir`` also writing the plan that builds
    them all JIT. Exit 2 with one line on bad input."""
    parser = argparse.ArgumentParser(prog="python -m builder.cmake_build.plan", allow_abbrev=False)
    parser.add_argument("--request", help="the build request as JSON (BuildRequest.from_json)")
    parser.add_argument("--build-dir", type=Path, help="the build folder (CMAKE_BINARY_DIR)")
    parser.add_argument("--select", action="store_true", help="validate --kernels and print them")
    parser.add_argument("--source-dir", type=Path, help="--select: the catalog tree")
    parser.add_argument("--kernels", default="", help="--select: the families asked for")
    parser.add_argument("--dtypes", default="", help="--select: the dtypes asked for")
    parser.add_argument("--compress", action="store_true", help="--select: compress the text")
    args = parser.parse_args(argv)
    if args.select and args.source_dir is None:
        parser.error("--select needs --source-dir")
    if not args.select and (args.request is None or args.build_dir is None):
        parser.error("--request and --build-dir are required to write a plan")
    return step_exit(lambda: _select(args) if args.select else _plan(args))


def _select(args: argparse.Namespace) -> None:
    """Print the catalog families ``--kernels`` names, validated, as CMake's list; with
    ``--build-dir`` also write the plan that builds them all JIT."""
    from builder.kernels.catalog import load_catalog, split_names

    catalog = load_catalog(args.source_dir)
    asked = tuple(split_names(args.kernels.replace(";", ",")) or ())
    chosen = catalog.select(asked or None, keep_order=True)
    if args.build_dir is not None:
        request = BuildRequest().replace(
            source_dir=args.source_dir.resolve(),
            kernels=chosen,
            dtypes=tuple(split_names(args.dtypes.replace(";", ",")) or ()),
            jit=("*",),
            compress=args.compress,
            build_dir=args.build_dir.resolve(),
        )
        write_plan(make_plan(request), args.build_dir / PLAN_FILE)
    print(";".join(chosen))


def _plan(args: argparse.Namespace) -> None:
    """Write the plan of the request ``--request`` and the planner's module list."""
    from builder.files.atomic import own_modules, write_if_changed

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
    modules = "".join(f"{m.as_posix()}\n" for m in own_modules())
    write_if_changed(plan_file.parent / PLANNER_MODULES, modules)


if __name__ == "__main__":
    raise SystemExit(main())
