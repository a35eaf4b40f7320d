"""The build plan: which units a build compiles ahead of time and which it embeds for run time.

Computed once, here, for any kernel tree, and used by everything that needs the selection:

* the CLI (``build``, ``variants``): to refuse a bad selection and to know whether a Metal
  compiler is needed, before anything is configured;
* CMake: ``python -m builder.cmake_build.plan`` writes ``plan.json`` at configure time (only when
  its bytes change) and the project's CMakeLists.txt reads its ``cmake`` lists;
* the manifest: the build-time record step (``builder.cmake_build.record``) reads the same file.

A **unit** is what gets one mode: a catalog family (``binary``; its AOT sources are generated
into the build directory by ``aot_sources``) or an entry file of a discovered tree
(``unary.metal``, compiled as it is). A discovered tree's entry files are JIT in JIT mode unless
they stay AOT (``builder.subsets.variant_select.held_aot``: ``[build] aot-only`` in metallib.toml
names them, or they write kernel templates themselves; the unit says why); a JIT entry file needs
the run-time preambles of ``builder.jit.tree_preambles``, and every build of a tree with
run-time-only kernels embeds their headers in the host library, AOT builds included. The plan of
a discovered tree passes the coverage check (``builder.subsets.coverage``: every kernel compiled,
or its code among the preambles) or is refused (exit 1). Kernels are not part of the plan: a
discovered tree's are found again at build time (they change with any header), a catalog's follow
from the catalog.
"""

from __future__ import annotations

import argparse
import json
import sys
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import TYPE_CHECKING, Any

from builder.cmake_build.aot_sources import Chunk
from builder.cmake_build.request import BuildRequest
from builder.errors import BuilderError, UsageError
from builder.files.reading import read_json

if TYPE_CHECKING:
    from builder.kernels.catalog import Catalog

__all__ = [
    "CATALOG_LIBRARY",
    "DISCOVERY_CACHE",
    "GENERATED_SOURCES",
    "PLAN_FILE",
    "PLAN_SCHEMA",
    "BuildPlan",
    "Unit",
    "main",
    "make_plan",
    "plan_text",
    "select_families",
    "write_plan",
]

PLAN_SCHEMA = 2
"""2: the request recorded once (``request``), no ``options`` copy."""
PLAN_FILE = "metal_plan/plan.json"
"""Where the plan is written, relative to the build folder."""
GENERATED_SOURCES = "metal_aot/src"
"""Where a catalog tree's AOT sources are generated, relative to the build folder."""
DISCOVERY_CACHE = "discovery.json"
"""Discovery's memory, beside ``plan.json`` in the build directory."""
CATALOG_LIBRARY = "mlx"
"""The output library of a catalog tree (mlx.metallib, as MLX names its own)."""


@dataclass(frozen=True)
class Unit:
    """One catalog family or one entry file, and the mode it is built in."""

    name: str
    mode: str
    """``aot`` or ``jit``."""
    sources: tuple[str, ...]
    """The family header or the entry file, relative to the tree."""
    preambles: tuple[str, ...] = ()
    """JIT entry file: the run-time preamble functions it needs."""
    reason: str | None = None
    """Why an entry file stays AOT in JIT mode (aot-only, or it writes its kernel templates)."""


@dataclass(frozen=True)
class BuildPlan:
    """The plan of one build; :meth:`to_json` is what ``plan.json`` holds."""

    request: BuildRequest
    """What was asked for (its planned part: ``BuildRequest.planned_json``)."""
    kind: str
    """``catalog`` or ``discovered``."""
    source_dir: Path
    """The kernel tree (absolute)."""
    config: Path | None
    """The tree's settings file (metallib.toml, or --config), if any."""
    library: str
    units: tuple[Unit, ...]
    include_dirs: tuple[Path, ...]
    """``-I`` of every AOT compile and of preamble inlining, in search order."""
    defines: tuple[str, ...]
    """``-D`` of every AOT compile (Metal's predefined macros left out: the compiler sets them)."""
    discovery: dict[str, Any]
    """How the build finds a discovered tree's kernels (include folders, every define, excludes,
    ``__METAL_VERSION__``), as ``load_tree`` was given them."""
    metal_version: int | None
    std: str | None
    """The ``-std=`` the compiles get: the request's, else the tree's (``_std_for``)."""
    deployment_target: str | None
    """The request's, else the tree's ``[build] deployment-target``."""
    flags: tuple[str, ...]
    """Compile flags the tree asks for (metallib.toml), added after the build's flags."""
    compiles: tuple[tuple[str, Path], ...] = ()
    """(unit, absolute .metal source) for every AOT compile, in link order."""
    preambles: tuple[dict[str, Any], ...] = ()
    """JIT preambles of a discovered tree: function, headers (absolute), entries."""
    chunks: tuple[Chunk, ...] = field(default=(), compare=False)
    """A catalog tree's generated sources (written by :func:`write_plan`)."""

    @property
    def aot(self) -> tuple[str, ...]:
        return tuple(u.name for u in self.units if u.mode == "aot")

    @property
    def jit(self) -> tuple[str, ...]:
        return tuple(u.name for u in self.units if u.mode == "jit")

    @staticmethod
    def _unit(unit: Unit) -> dict[str, Any]:
        out: dict[str, Any] = {"name": unit.name, "mode": unit.mode, "sources": list(unit.sources)}
        if unit.preambles:
            out["preambles"] = list(unit.preambles)
        if unit.reason:
            out["reason"] = unit.reason
        return out

    def to_json(self) -> dict[str, Any]:
        """The plan file: the plan itself, plus ``cmake``, the same facts as ';'-joined lists for
        CMakeLists.txt (one ``string(JSON GET)`` each)."""

        def joined(items: Sequence[object]) -> str:
            return ";".join(str(i) for i in items)

        depends = [self.config] if self.config else []
        if self.kind == "catalog":
            depends.append(self.source_dir / "catalog.json")
        return {
            "schema": PLAN_SCHEMA,
            "request": self.request.planned_json(),
            "kind": self.kind,
            "source_dir": str(self.source_dir),
            "config": str(self.config) if self.config else None,
            "library": self.library,
            "units": [self._unit(u) for u in self.units],
            "compile": [{"unit": unit, "source": str(path)} for unit, path in self.compiles],
            "preambles": list(self.preambles),
            "include_dirs": [str(d) for d in self.include_dirs],
            "defines": list(self.defines),
            "discovery": self.discovery,
            "metal_version": self.metal_version,
            "std": self.std,
            "deployment_target": self.deployment_target,
            "flags": list(self.flags),
            "cmake": {
                "kind": self.kind,
                "library": self.library,
                "source_root": str(
                    self.compiles[0][1].parent
                    if self.kind == "catalog" and self.compiles
                    else self.source_dir
                ),
                "std": self.std or "",
                "deployment_target": self.deployment_target or "",
                "aot_sources": joined([p for _, p in self.compiles]),
                "jit_units": joined(self.jit),
                "jit_library": "ON" if self.jit or self.preambles else "",
                "include_dirs": joined(self.include_dirs),
                "defines": joined(self.defines),
                "flags": joined(self.flags),
                "configure_depends": joined(depends),
            },
        }

    @classmethod
    def from_json(cls, data: Mapping[str, Any], where: str = "plan.json") -> BuildPlan:
        """The plan :meth:`to_json` wrote, typed and checked: UsageError (exit 2) naming
        ``where`` when it is not one (another schema, a missing or mistyped field)."""
        if data.get("schema") != PLAN_SCHEMA:
            raise UsageError(
                f"{where}: build plan schema {data.get('schema')!r}, expected {PLAN_SCHEMA}"
            )
        try:
            units = tuple(
                Unit(
                    str(u["name"]),
                    _one_of(u["mode"], ("aot", "jit")),
                    _strings(u["sources"]),
                    _strings(u.get("preambles", [])),
                    u.get("reason"),
                )
                for u in data["units"]
            )
            config = data["config"]
            return cls(
                request=BuildRequest.from_json(data["request"]),
                kind=_one_of(data["kind"], ("catalog", "discovered")),
                source_dir=Path(data["source_dir"]),
                config=Path(config) if config is not None else None,
                library=str(data["library"]),
                units=units,
                include_dirs=tuple(Path(d) for d in _strings(data["include_dirs"])),
                defines=_strings(data["defines"]),
                discovery=dict(data["discovery"]),
                metal_version=data["metal_version"],
                std=data["std"],
                deployment_target=data["deployment_target"],
                flags=_strings(data["flags"]),
                compiles=tuple((str(c["unit"]), Path(c["source"])) for c in data["compile"]),
                preambles=tuple(dict(p) for p in data["preambles"]),
            )
        except (KeyError, TypeError, ValueError, AttributeError) as exc:
            raise UsageError(f"{where}: not a usable build plan: {exc}") from None

    @classmethod
    def read(cls, path: Path) -> BuildPlan:
        """A plan file written by :func:`write_plan` (UsageError when unreadable)."""
        data = read_json(path, "build plan")
        if not isinstance(data, dict):
            raise UsageError(f"{path}: not a usable build plan: not a JSON object")
        return cls.from_json(data, str(path))


def _strings(value: Any) -> tuple[str, ...]:
    if not isinstance(value, list) or not all(isinstance(v, str) for v in value):
        raise ValueError(f"{value!r} is not a list of strings")
    return tuple(value)


def _one_of(value: Any, allowed: tuple[str, ...]) -> str:
    if value not in allowed:
        raise ValueError(f"{value!r} is not one of {', '.join(allowed)}")
    return str(value)


def select_families(
    catalog: Catalog, families: Sequence[str], jit: Sequence[str] = (), *, keep_order: bool = False
) -> tuple[tuple[str, ...], tuple[str, ...]]:
    """Validate a catalog selection: (selected, JIT subset), in catalog order (or, with
    ``keep_order``, as given without repeats). UsageError (exit 2) for an unknown family or a
    JIT family outside the selection."""
    known = catalog.family_names
    for name in [*families, *jit]:
        if name not in known:
            raise UsageError(f"unknown kernel family {name!r}; valid: {', '.join(sorted(known))}")
    chosen = list(dict.fromkeys(families)) or list(known)
    outside = [n for n in dict.fromkeys(jit) if n not in chosen]
    if outside:
        raise UsageError(
            f"JIT families {', '.join(outside)} are not among the selected families "
            f"({', '.join(n for n in known if n in chosen)})"
        )
    if not keep_order:
        chosen = [n for n in known if n in chosen]
    return tuple(chosen), tuple(n for n in chosen if n in jit)


def _std_for(request: BuildRequest, config: Any) -> tuple[str | None, int | None]:
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


def _catalog_plan(request: BuildRequest, source_dir: Path) -> BuildPlan:
    from builder.cmake_build.aot_sources import catalog_chunks
    from builder.kernels.catalog import load_catalog
    from builder.kernels.tree_config import TreeConfig

    tree, selection = request.tree, request.selection
    if tree.include_dirs or tree.defines or tree.exclude or tree.config_file:
        raise UsageError(
            f"{source_dir} is a catalog tree (catalog.json); -I, -D, --exclude and "
            "--config apply only to a folder of .metal entry files"
        )
    catalog = load_catalog(source_dir)
    selected, jit_listed = select_families(catalog, selection.kernels, selection.jit_kernels)
    if selection.dtypes:
        catalog.expand([], selection.dtypes)  # validates the dtype names
    jit = set(jit_listed) if selection.jit_kernels else set(selected) if selection.jit else set()
    units = tuple(
        Unit(name, "jit" if name in jit else "aot", (catalog.families[name].header,))
        for name in selected
    )
    std, version = _std_for(request, TreeConfig())
    chunks: list[Chunk] = []
    compiles: list[tuple[str, Path]] = []
    aot = [u.name for u in units if u.mode == "aot"]
    if request.output.build_dir is not None and aot:
        gen_dir = request.output.build_dir / GENERATED_SOURCES
        chunks = catalog_chunks(catalog, aot, selection.dtypes or None, selection.chunk_size)
        compiles = [(c.family, gen_dir / f"{c.name}.metal") for c in chunks]
    return BuildPlan(
        request,
        "catalog",
        catalog.source_dir,
        None,
        CATALOG_LIBRARY,
        units,
        (catalog.source_dir,),
        (),
        {},
        version,
        std,
        request.toolchain.deployment_target,
        (),
        tuple(compiles),
        (),
        tuple(chunks),
    )


def _discovered_plan(request: BuildRequest, source_dir: Path, cache_file: Path | None) -> BuildPlan:
    from builder.jit.tree_preambles import jit_preambles
    from builder.kernels.discovery_cache import discover_cached
    from builder.kernels.preprocess import metal_defines, parse_define
    from builder.kernels.tree_config import build_library, find_config, merge_flags
    from builder.subsets.coverage import check_coverage, require_coverage
    from builder.subsets.variant_select import held_aot

    asked, selection = request.tree, request.selection
    if selection.kernels or selection.jit_kernels or selection.dtypes:
        raise UsageError(
            f"{source_dir} has no catalog.json: --kernels, --jit-kernels and --dtypes "
            "select catalog families; choose entry files with --exclude, and keep "
            "entry files AOT in JIT mode with [build] aot-only in metallib.toml"
        )
    settings = find_config(source_dir, asked.config_file, asked.include_dirs)
    config = merge_flags(settings, asked.include_dirs, asked.defines, asked.exclude)
    std, version = _std_for(request, config)
    # the __METAL_VERSION__ the record step discovers with, too
    tree = discover_cached(source_dir, replace(config, metal_version=version), cache_file)
    entries = list(tree.sources)
    root = source_dir.resolve()
    library = build_library(config, root, entries)  # every value a build carries, checked
    held = held_aot(tree)
    jit = [e for e in entries if selection.jit and e not in held]
    preambles: list[dict[str, Any]] = []
    needs: dict[str, list[str]] = {}
    specs = jit_preambles(tree, jit)
    coverage = check_coverage(tree, jit, specs, [*config.include_dirs, root])
    require_coverage(coverage, "the build" + (" (--jit)" if selection.jit else ""))
    for spec in specs:
        preambles.append(
            {
                "function": spec.function,
                "headers": [str(h) for h in spec.headers],
                "entries": list(spec.entries),
            }
        )
        for entry in spec.entries:
            needs.setdefault(entry, []).append(spec.function)
    units = tuple(
        Unit(e, "jit", (e,), tuple(needs.get(e, ())))
        if e in jit
        else Unit(e, "aot", (e,), reason=held.get(e) if selection.jit else None)
        for e in entries
    )
    names = {parse_define(d)[0] for d in metal_defines([])} | {"__METAL_IOS__"}
    defines = tuple(d for d in config.defines if parse_define(d)[0] not in names)
    target = request.toolchain.deployment_target or config.deployment_target
    compiles = tuple((u.name, root / u.name) for u in units if u.mode == "aot")
    discovery = {
        "include_dirs": [str(d) for d in config.include_dirs],
        "defines": list(config.defines),
        "exclude": list(config.exclude),
        "metal_version": version,
    }
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
    )


def make_plan(request: BuildRequest, *, cache_file: Path | None = None) -> BuildPlan:
    """The plan for ``request``; UsageError (exit 2) for anything that cannot be built.
    ``cache_file``: discovery's memory (``builder.kernels.discovery_cache``): a no-op build plans
    without preprocessing the tree again; None: discover every time. The plan's request names
    the tree it planned (the bundled one when the request names none)."""
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
        return _catalog_plan(request, source_dir)
    return _discovered_plan(request, source_dir, cache_file)


def plan_text(plan: BuildPlan) -> str:
    """The bytes of ``plan.json`` (deterministic: compare it to tell whether a plan changed)."""
    return json.dumps(plan.to_json(), indent=1) + "\n"


def write_plan(plan: BuildPlan, path: Path) -> bool:
    """Write a catalog tree's generated sources (into the plan's generation folder) and
    ``path``, each only when its bytes change; True when the plan file was written."""
    from builder.cmake_build.aot_sources import write_sources
    from builder.files.atomic import write_if_changed

    if plan.kind == "catalog" and plan.compiles:
        write_sources(plan.chunks, plan.compiles[0][1].parent)
    return write_if_changed(path, plan_text(plan))


def _cmake_variables(path: Path) -> dict[str, str]:
    """The ``METAL_*`` cache variables CMakeLists.txt wrote (a JSON object of strings)."""
    data = read_json(path, "the build's CMake variables")
    if not isinstance(data, dict) or not all(isinstance(v, str) for v in data.values()):
        raise UsageError(f"{path}: not a JSON object of strings")
    return data


def main(argv: Sequence[str] | None = None) -> int:
    """Write the plan (CMake, configure time) from the build's ``METAL_*`` cache variables, or
    with ``--select`` only validate catalog families and print them (``metallib_add_jit_library``).
    Exit 2 with one line on bad input."""
    parser = argparse.ArgumentParser(prog="python -m builder.cmake_build.plan", allow_abbrev=False)
    parser.add_argument("--variables", type=Path, help="JSON of the METAL_* cache variables")
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
            chosen, _ = select_families(catalog, asked, keep_order=True)
            print(";".join(chosen))
            return 0
        if args.variables is None or args.build_dir is None:
            parser.error("--variables and --build-dir are required to write a plan")
        request = BuildRequest.from_cmake(_cmake_variables(args.variables), args.build_dir)
        plan_file = args.build_dir / PLAN_FILE
        write_plan(make_plan(request, cache_file=plan_file.parent / DISCOVERY_CACHE), plan_file)
    except BuilderError as exc:
        print(f"error: {exc}", file=sys.stderr)
        return 2
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
