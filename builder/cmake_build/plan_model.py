"""The build plan as data: its units, and plan.json (:meth:`BuildPlan.to_json`, read back by
:meth:`BuildPlan.from_json`). ``builder.cmake_build.plan`` computes it; CMakeLists.txt reads its
``cmake`` lists; ``record`` and ``tree_jit`` read the rest. Standard library and ``builder``
only (runs in CMake)."""

from __future__ import annotations

import json
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from builder.cmake_build.request import BuildRequest
from builder.errors import UsageError
from builder.files.reading import read_json
from builder.kernels.chunking import Chunk
from builder.kernels.discovery_cache import DiscoveryMemo

__all__ = [
    "CATALOG_LIBRARY",
    "DISCOVERY_CACHE",
    "GENERATED_SOURCES",
    "PLAN_FILE",
    "PLAN_SCHEMA",
    "BuildPlan",
    "Unit",
    "plan_text",
]

PLAN_SCHEMA = 3
"""3: the whole request (``request``, every option: CMake reads the plan, not its cache) and the
compiler, SDK, flags, dtypes and compression among the ``cmake`` lists."""
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
    """Why an entry file stays AOT in JIT mode (``[build] aot-only`` names it)."""
    embedding: str | None = None
    """JIT entry file: ``whole-file`` (its text, includes inlined, is one run-time source) or
    ``preamble`` (MLX's: its headers); None for an AOT unit or a catalog family."""


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
    """A catalog tree's generated sources (written by ``plan.write_plan``)."""
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

    @staticmethod
    def _unit(unit: Unit) -> dict[str, Any]:
        out: dict[str, Any] = {"name": unit.name, "mode": unit.mode, "sources": list(unit.sources)}
        if unit.preambles:
            out["preambles"] = list(unit.preambles)
        if unit.reason:
            out["reason"] = unit.reason
        if unit.embedding:
            out["embedding"] = unit.embedding
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
            "request": self.request.to_json(),
            "kind": self.kind,
            "source_dir": str(self.source_dir),
            "config": str(self.config) if self.config else None,
            "library": self.library,
            "units": [self._unit(u) for u in self.units],
            "compile": [{"unit": unit, "source": str(path)} for unit, path in self.compiles],
            "preambles": list(self.preambles),
            "run_time": dict(self.run_time),
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
            units = tuple(
                Unit(
                    str(u["name"]),
                    _one_of(u["mode"], ("aot", "jit")),
                    _strings(u["sources"]),
                    _strings(u.get("preambles", [])),
                    u.get("reason"),
                    _one_of(u["embedding"], ("whole-file", "preamble"))
                    if "embedding" in u
                    else None,
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


def _strings(value: Any) -> tuple[str, ...]:
    if not isinstance(value, list) or not all(isinstance(v, str) for v in value):
        raise ValueError(f"{value!r} is not a list of strings")
    return tuple(value)


def _one_of(value: Any, allowed: tuple[str, ...]) -> str:
    if value not in allowed:
        raise ValueError(f"{value!r} is not one of {', '.join(allowed)}")
    return str(value)


def plan_text(plan: BuildPlan) -> str:
    """The bytes of ``plan.json`` (deterministic: compare it to tell whether a plan changed)."""
    return json.dumps(plan.to_json(), indent=1) + "\n"
