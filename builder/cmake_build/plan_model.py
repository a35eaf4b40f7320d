"""The build plan as data: its units, and plan.json (:meth:`BuildPlan.to_json`, read back by
:meth:`BuildPlan.from_json`). ``builder.cmake_build.plan`` computes it; CMakeLists.txt reads its
``cmake`` lists; ``record`` and ``tree_jit`` read the rest. Standard library and ``builder``
only (runs in CMake)."""

from __future__ import annotations

import json
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, TypedDict

from builder.cmake_build.request import BuildRequest
from builder.errors import UsageError
from builder.files.dataclass_json import dump, load
from builder.files.reading import read_json
from builder.kernels.catalog_tree import GENERATED_TREE, GeneratedTree
from builder.kernels.discovery_cache import DiscoveryMemo
from builder.records.manifest import Unit

__all__ = [
    "CATALOG_LIBRARY",
    "DISCOVERY_CACHE",
    "PLAN_FILE",
    "PLAN_SCHEMA",
    "BuildPlan",
    "DiscoverySettings",
    "PlannedPreamble",
    "Unit",
    "plan_text",
]

PLAN_SCHEMA = 3
"""3: the whole request (``request``, every option: CMake reads the plan, not its cache) and the
compiler, SDK, flags, dtypes and compression among the ``cmake`` lists."""
PLAN_FILE = "metal_plan/plan.json"
"""Where the plan is written, relative to the build folder."""
DISCOVERY_CACHE = "discovery.json"
"""Discovery's memory, beside ``plan.json`` in the build directory."""
CATALOG_LIBRARY = "mlx"
"""The output library of a catalog tree (mlx.metallib, as MLX names its own)."""


class DiscoverySettings(TypedDict):
    """How a discovered tree is read again after planning (``record`` discovers with it)."""

    include_dirs: list[str]
    defines: list[str]
    """Every define, Metal's predefined macros included."""
    exclude: list[str]
    metal_version: int | None


class PlannedPreamble(TypedDict):
    """One run-time preamble of a discovered tree, as plan.json holds it."""

    function: str
    headers: list[str]
    """Absolute paths, inlined in this order."""
    entries: list[str]
    """The JIT entry files that need it (empty: every build carries it)."""
    embedding: str
    """``whole-file`` or ``preamble`` (``KernelTree.embeddings``)."""


@dataclass(frozen=True)
class BuildPlan:
    """The plan of one build; :meth:`to_json` is what ``plan.json`` holds."""

    request: BuildRequest
    """What was asked for, whole (CMake takes the compiler, flags, SDK and compression from it)."""
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
    discovery: DiscoverySettings | None
    """How the build finds a discovered tree's kernels (include folders, every define, excludes,
    ``__METAL_VERSION__``), as ``load_tree`` was given them; None for a catalog tree."""
    metal_version: int | None
    std: str | None
    """The ``-std=`` the compiles get: the request's, else the tree's (``_std_for``)."""
    deployment_target: str | None
    """The request's, else the tree's ``[build] deployment-target``."""
    flags: tuple[str, ...]
    """Compile flags the tree asks for (metallib.toml), added after the build's flags."""
    compiles: tuple[tuple[str, Path], ...] = ()
    """(unit, absolute .metal source) for every AOT compile, in link order."""
    preambles: tuple[PlannedPreamble, ...] = ()
    """JIT preambles of a discovered tree: function, headers (absolute), entries."""
    generated: GeneratedTree | None = field(default=None, compare=False)
    """A catalog tree's entry files (``builder.kernels.catalog_tree``), written into the build
    folder by ``plan.write_plan``; None for a discovered tree, or without a build folder."""
    memo: DiscoveryMemo | None = field(default=None, compare=False)
    """A discovery the build directory does not remember yet (``write_plan`` saves it)."""
    run_time: dict[str, Any] = field(default_factory=dict)
    """How a discovered tree's run-time sources are written (metallib.toml ``[build]``):
    ``namespace``, ``api``, ``lookup``; empty: the defaults (``builder.cmake_build.tree_jit``)."""

    @property
    def aot(self) -> tuple[str, ...]:
        return tuple(u.name for u in self.units if u.mode == "aot")

    @property
    def jit(self) -> tuple[str, ...]:
        return tuple(u.name for u in self.units if u.mode == "jit")

    @property
    def source_root(self) -> Path:
        """The tree whose entry files the AOT units compile: a catalog's generated one in the
        build folder, else the kernel tree itself."""
        build_dir = self.request.location.build_dir
        if self.kind == "catalog" and build_dir is not None:
            return Path(build_dir) / GENERATED_TREE
        return self.source_dir

    def to_json(self) -> dict[str, object]:
        """The plan file: the plan itself, plus ``cmake``, the same facts as ';'-joined lists for
        CMakeLists.txt (one ``string(JSON GET)`` each)."""

        def joined(items: Sequence[object]) -> str:
            return ";".join(str(i) for i in items)

        depends = [self.config] if self.config else []
        if self.kind == "catalog":
            depends.append(self.source_dir / "catalog.json")
        return {
            "schema": PLAN_SCHEMA,
            "request": self.request.to_json(),
            "kind": self.kind,
            "source_dir": str(self.source_dir),
            "config": str(self.config) if self.config else None,
            "library": self.library,
            "units": dump(self.units),
            "compile": [{"unit": unit, "source": str(path)} for unit, path in self.compiles],
            "preambles": list(self.preambles),
            "run_time": dict(self.run_time),
            "include_dirs": [str(d) for d in self.include_dirs],
            "defines": list(self.defines),
            "discovery": self.discovery if self.discovery is not None else {},
            "metal_version": self.metal_version,
            "std": self.std,
            "deployment_target": self.deployment_target,
            "flags": list(self.flags),
            "cmake": {
                "kind": self.kind,
                "library": self.library,
                "source_root": str(self.source_root),
                "source_dir": str(self.source_dir),
                "compiler": self.request.toolchain.metal_compiler or "",
                "sdk": self.request.toolchain.sdk,
                "aot_flags": joined(self.request.metal_flags),
                "dtypes": joined(self.request.selection.dtypes),
                "compress": "ON" if self.request.selection.compress else "",
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
            units = load(tuple[Unit, ...], data["units"], "units")
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
                discovery=_discovery(data["discovery"]) if data["discovery"] else None,
                metal_version=data["metal_version"],
                std=data["std"],
                deployment_target=data["deployment_target"],
                flags=_strings(data["flags"]),
                compiles=tuple((str(c["unit"]), Path(c["source"])) for c in data["compile"]),
                preambles=tuple(_preamble(p) for p in data["preambles"]),
                run_time=dict(data.get("run_time", {})),
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


def _discovery(data: Mapping[str, Any]) -> DiscoverySettings:
    version = data["metal_version"]
    if version is not None and not isinstance(version, int):
        raise ValueError(f"metal_version {version!r} is not a number")
    return DiscoverySettings(
        include_dirs=list(_strings(data["include_dirs"])),
        defines=list(_strings(data["defines"])),
        exclude=list(_strings(data["exclude"])),
        metal_version=version,
    )


def _preamble(data: Mapping[str, Any]) -> PlannedPreamble:
    return PlannedPreamble(
        function=str(data["function"]),
        headers=list(_strings(data["headers"])),
        entries=list(_strings(data["entries"])),
        embedding=_one_of(data["embedding"], ("whole-file", "preamble")),
    )


def _strings(value: object) -> tuple[str, ...]:
    if not isinstance(value, list) or not all(isinstance(v, str) for v in value):
        raise ValueError(f"{value!r} is not a list of strings")
    return tuple(value)


def _one_of(value: object, allowed: tuple[str, ...]) -> str:
    if value not in allowed:
        raise ValueError(f"{value!r} is not one of {', '.join(allowed)}")
    return str(value)


def plan_text(plan: BuildPlan) -> str:
    """The bytes of ``plan.json`` (deterministic: compare it to tell whether a plan changed)."""
    return json.dumps(plan.to_json(), indent=1) + "\n"
