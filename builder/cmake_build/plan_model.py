"""The build plan as data: its units, and plan.json (:meth:`BuildPlan.to_json`, read back by
:meth:`BuildPlan.from_json`). ``builder.cmake_build.plan`` computes it; CMakeLists.txt reads its
``cmake`` lists; ``record`` and ``tree_jit`` read the rest. Standard library and ``builder``
only (runs in CMake)."""

from __future__ import annotations

import json
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Literal

from builder.cmake_build.request import BuildRequest
from builder.errors import UsageError
from builder.files.dataclass_json import dump, field, load
from builder.files.reading import read_json
from builder.kernels.catalog_tree import GENERATED_TREE, GeneratedTree
from builder.kernels.discovery_cache import DiscoveryMemo
from builder.records.manifest import Embedding, Unit

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


@dataclass(frozen=True)
class DiscoverySettings:
    """How a discovered tree is read again after planning (``record`` discovers with it)."""

    include_dirs: tuple[str, ...]
    defines: tuple[str, ...]
    """Every define, Metal's predefined macros included."""
    exclude: tuple[str, ...]
    metal_version: int | None


@dataclass(frozen=True)
class PlannedPreamble:
    """One run-time preamble of a discovered tree, as plan.json holds it."""

    function: str
    headers: tuple[str, ...]
    """Absolute paths, inlined in this order."""
    entries: tuple[str, ...]
    """The JIT entry files that need it (empty: every build carries it)."""
    embedding: Embedding
    """``whole-file`` or ``preamble`` (``KernelTree.embeddings``)."""


@dataclass(frozen=True)
class _Compile:
    unit: str
    source: str


@dataclass(frozen=True)
class _PlanFile:
    """plan.json as the codec reads it back (the request is read by its own ``from_json``)."""

    kind: Literal["catalog", "discovered"]
    source_dir: str
    config: str | None
    library: str
    units: tuple[Unit, ...]
    compile: tuple[_Compile, ...]
    preambles: tuple[PlannedPreamble, ...]
    include_dirs: tuple[str, ...]
    defines: tuple[str, ...]
    discovery: DiscoverySettings | None
    metal_version: int | None
    std: str | None
    deployment_target: str | None
    flags: tuple[str, ...]
    run_time: dict[str, object] = field(default_factory=dict)


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
            "preambles": dump(self.preambles),
            "run_time": dict(self.run_time),
            "include_dirs": [str(d) for d in self.include_dirs],
            "defines": list(self.defines),
            "discovery": dump(self.discovery),
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
            plan = load(_PlanFile, data)
            request = BuildRequest.from_json(data["request"])
        except (KeyError, TypeError, ValueError, AttributeError) as exc:
            raise UsageError(f"{where}: not a usable build plan: {exc}") from None
        return cls(
            request=request,
            kind=plan.kind,
            source_dir=Path(plan.source_dir),
            config=Path(plan.config) if plan.config is not None else None,
            library=plan.library,
            units=plan.units,
            include_dirs=tuple(Path(d) for d in plan.include_dirs),
            defines=plan.defines,
            discovery=plan.discovery,
            metal_version=plan.metal_version,
            std=plan.std,
            deployment_target=plan.deployment_target,
            flags=plan.flags,
            compiles=tuple((c.unit, Path(c.source)) for c in plan.compile),
            preambles=plan.preambles,
            run_time=dict(plan.run_time),
        )

    @classmethod
    def read(cls, path: Path) -> BuildPlan:
        """A plan file written by :func:`write_plan` (UsageError when unreadable)."""
        data = read_json(path, "build plan")
        if not isinstance(data, dict):
            raise UsageError(f"{path}: not a usable build plan: not a JSON object")
        return cls.from_json(data, str(path))


def plan_text(plan: BuildPlan) -> str:
    """The bytes of ``plan.json`` (deterministic: compare it to tell whether a plan changed)."""
    return json.dumps(plan.to_json(), indent=1) + "\n"
