"""Planning one tree kind: a catalog tree (families) or a discovered tree (entry files), and the
one way both choose their JIT units (:func:`jit_units`). ``builder.cmake_build.plan`` calls
these; they write nothing."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import replace
from pathlib import Path
from typing import TYPE_CHECKING

from builder.cmake_build.plan_model import (
    CATALOG_LIBRARY,
    BuildPlan,
    DiscoverySettings,
    PlannedPreamble,
    Unit,
)
from builder.cmake_build.request import BuildRequest
from builder.errors import UsageError
from builder.kernels.runtime_sources import RuntimeSources, over_file
from builder.records.manifest import Embedding

if TYPE_CHECKING:
    from builder.kernels.catalog import Catalog
    from builder.kernels.tree_config import TreeConfig

__all__ = ["catalog_plan", "discovered_plan", "jit_units", "select_families"]


def select_families(
    catalog: Catalog, families: Sequence[str], *, keep_order: bool = False
) -> tuple[str, ...]:
    """Validate a catalog selection, in catalog order (or, with ``keep_order``, as given without
    repeats). UsageError (exit 2) for an unknown family."""
    known = catalog.family_names
    for name in families:
        if name not in known:
            raise UsageError(f"unknown catalog family {name!r}; valid: {', '.join(sorted(known))}")
    chosen = list(dict.fromkeys(families)) or list(known)
    if not keep_order:
        chosen = [n for n in known if n in chosen]
    return tuple(chosen)


def jit_units(units: Sequence[str], request: BuildRequest, where: str) -> set[str]:
    """The units asked to be JIT: those ``--jit`` names, or with ``--aot`` every unit it does
    not name (names or globs, '*' crossing '/', as ``variants --from`` reads them). A glob that
    names no unit of ``where`` is a UsageError naming it (exit 2): the unit it meant would
    silently keep its mode."""
    from builder.kernels.discovery import path_matches

    selection = request.selection
    if selection.jit and selection.aot:
        raise UsageError("--jit and --aot both choose the JIT units: give one of them")
    asked, flag = (selection.jit, "--jit") if selection.jit else (selection.aot, "--aot")
    named: set[str] = set()
    for glob in asked:
        hits = {u for u in units if path_matches(u, [glob])}
        if not hits:
            count = f"{len(units):,} unit{'s' if len(units) != 1 else ''}"
            raise UsageError(f"{flag} {glob!r} matches no unit of {where} ({count})")
        named |= hits
    if selection.aot:
        return {u for u in units if u not in named}
    return named


def _embedding(value: str) -> Embedding:
    """An entry file's embedding as the unit states it (``builder.kernels.embedding``'s words)."""
    if value not in ("whole-file", "preamble"):
        raise ValueError(f"embedding {value!r}")
    return "whole-file" if value == "whole-file" else "preamble"


def std_for(request: BuildRequest, config: TreeConfig) -> tuple[str | None, int | None]:
    """The ``-std=`` of the compiles and the ``__METAL_VERSION__`` discovery assumes: each
    follows the other when only one is stated (``--std``, then ``[build] std``; the version from
    ``-D __METAL_VERSION__``, then ``[kernels] metal-version``)."""
    from builder.kernels.tree_config import std_version

    std = request.toolchain.std or config.std
    if std is not None and std_version(std) is None:
        raise UsageError(
            f"--std {std}: not a Metal language standard (metal3.1, macos-metal2.4, "
            "ios-metal2.4, ...)"
        )
    version = config.metal_version
    for define in config.defines:
        name, _, value = define.partition("=")
        if name == "__METAL_VERSION__" and value.strip().isdigit():
            version = int(value)
    if std is None and version is not None:  # metalX.Y from MSL 3.0 on, per-platform before
        prefix = "" if version >= 300 else "ios-" if "__METAL_IOS__" in config.defines else "macos-"
        std = f"{prefix}metal{version // 100}.{version % 100 // 10}"
    if version is None and std is not None:
        version = std_version(std)
    return std, version


def catalog_plan(request: BuildRequest, source_dir: Path) -> BuildPlan:
    """The plan of a catalog tree: families, each AOT (its generated entry files compiled) or
    JIT. With a build folder the catalog is expanded into the entry files of the tree the build
    writes there (``builder.kernels.catalog_tree``)."""
    from builder.kernels.catalog import load_catalog
    from builder.kernels.catalog_tree import GENERATED_TREE, generate_tree
    from builder.kernels.tree_config import TreeConfig

    tree, selection = request.tree, request.selection
    # refused when given: a catalog's host library is a registry with embed's interface
    over_file(
        RuntimeSources(),
        selection.jit_namespace,
        selection.jit_api,
        selection.jit_lookup,
        catalog=True,
    )
    if tree.include_dirs or tree.defines or tree.exclude or tree.config_file:
        raise UsageError(
            f"{source_dir} is a catalog tree (catalog.json); -I, -D, --exclude and "
            "--config apply only to a folder of .metal entry files"
        )
    catalog = load_catalog(source_dir)
    selected = select_families(catalog, selection.kernels)
    if selection.dtypes:
        catalog.expand([], selection.dtypes)  # validates the dtype names
    jit = jit_units(selected, request, f"the catalog tree {source_dir}")
    units = tuple(
        Unit(name, "jit" if name in jit else "aot", (catalog.families[name].header,))
        for name in selected
    )
    std, version = std_for(request, TreeConfig())
    generated = None
    compiles: list[tuple[str, Path]] = []
    if request.location.build_dir is not None:
        root = request.location.build_dir / GENERATED_TREE
        generated = generate_tree(catalog, selected, selection.dtypes or None, selection.chunk_size)
        compiles = [(e.unit, root / e.path) for e in generated.entries if e.unit not in jit]
    return BuildPlan(
        request,
        "catalog",
        catalog.source_dir,
        None,
        CATALOG_LIBRARY,
        units,
        (catalog.source_dir,),
        (),
        None,
        version,
        std,
        request.toolchain.deployment_target,
        (),
        tuple(compiles),
        (),
        generated,
    )


def discovered_plan(request: BuildRequest, source_dir: Path, cache_file: Path | None) -> BuildPlan:
    """The plan of a tree of entry files: each entry file AOT or JIT, checked for coverage."""
    from builder.jit.tree_preambles import embedding_of, jit_preambles
    from builder.kernels.build_values import build_library
    from builder.kernels.discovery import discover
    from builder.kernels.discovery_cache import load_or_discover
    from builder.kernels.platforms import for_platform
    from builder.kernels.preprocess import metal_defines, parse_define
    from builder.kernels.tree_config import find_config, merge_flags
    from builder.subsets.coverage import check_coverage, require_coverage
    from builder.subsets.variant_select import held_aot

    asked, selection = request.tree, request.selection
    if selection.kernels or selection.dtypes:
        raise UsageError(
            f"{source_dir} has no catalog.json: --kernels and --dtypes select catalog "
            "families; choose entry files with --exclude, and JIT ones with --jit or --aot"
        )
    settings = find_config(source_dir, asked.config_file, asked.include_dirs)
    # the command line's interface over metallib.toml's, as on variants --from
    runtime = over_file(
        settings.runtime, selection.jit_namespace, selection.jit_api, selection.jit_lookup
    )
    config = merge_flags(settings, asked.include_dirs, asked.defines, asked.exclude)
    std, version = std_for(request, config)
    # the __METAL_VERSION__ the record step discovers with, too, and the entry files this
    # platform's build leaves out ([kernels.requires])
    config = for_platform(
        replace(config, metal_version=version),
        deployment_target=request.toolchain.deployment_target,
    )
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
    specs = jit_preambles(tree, jit)
    coverage = check_coverage(tree, jit, specs, [*config.include_dirs, root])
    require_coverage(coverage, "the build" + (" (--jit/--aot)" if wanted else ""))
    for spec in specs:
        preambles.append(
            PlannedPreamble(
                function=spec.function,
                headers=[str(h) for h in spec.headers],
                entries=list(spec.entries),
                embedding=spec.embedding,
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
    target = request.toolchain.deployment_target or config.deployment_target
    compiles = tuple((u.name, root / u.name) for u in units if u.mode == "aot")
    discovery = DiscoverySettings(
        include_dirs=[str(d) for d in config.include_dirs],
        defines=list(config.defines),
        exclude=list(config.exclude),
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
        run_time={"namespace": runtime.namespace, "api": runtime.api, "lookup": runtime.lookup},
        memo=memo,
    )
