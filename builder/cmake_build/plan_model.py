"""The build plan as data: its units, and plan.json (:func:`plan_text`, read back by
:meth:`BuildPlan.read`). ``builder.cmake_build.plan`` computes it; CMakeLists.txt reads its
``cmake`` lists; ``record`` and ``tree_jit`` read the rest. plan.json is CMake's input (CMake
configures again when it changes), not a record: what a build made is in manifest.json.
Standard library and ``builder`` only (runs in CMake)."""

from __future__ import annotations

import json
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Literal

from builder.cmake_build.request import BuildRequest
from builder.errors import UsageError
from builder.files.dataclass_json import dump, field, load
from builder.files.reading import read_json
from builder.kernels.catalog_tree import GENERATED_TREE, GeneratedTree
from builder.kernels.discovery_cache import DiscoveryMemo
from builder.records.manifest import Embedding, Unit
from builder.settings.declared import setting

__all__ = [
    "CATALOG_LIBRARY",
    "DISCOVERY_CACHE",
    "PLAN_FILE",
    "PLAN_SCHEMA",
    "BuildPlan",
    "Compile",
    "DiscoverySettings",
    "PlannedPreamble",
    "Unit",
    "plan_text",
]

PLAN_SCHEMA = 4
"""4: ``jit_namespace``, ``jit_api``, ``jit_lookup`` (the settings' words) instead of
``run_time``. 3: the
whole request (every option: CMake reads the plan, not its cache) and the compiler, SDK, flags,
dtypes and compression among the ``cmake`` lists."""
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
class Compile:
    """One AOT compile: the unit and its ``.metal`` source (absolute), in link order."""

    unit: str
    source: Path


@dataclass(frozen=True)
class BuildPlan:
    """The plan of one build, and the document ``plan.json`` holds (:func:`plan_text`, read back
    by :meth:`read`): its fields are the file's keys, each checked on reading."""

    request: BuildRequest
    """What was asked for, whole (CMake takes the compiler, flags, SDK and compression from it)."""
    kind: Literal["catalog", "discovered"]
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
    compiles: tuple[Compile, ...] = field(default=(), key="compile")
    """Every AOT compile, in link order."""
    preambles: tuple[PlannedPreamble, ...] = ()
    """JIT preambles of a discovered tree: function, headers (absolute), entries."""
    jit_namespace: str | None = setting("jit_namespace").field(omit="none")
    jit_api: str | None = setting("jit_api").field(omit="none")
    jit_lookup: bool | None = setting("jit_lookup").field(omit="none")
    """How a discovered tree's run-time sources are written: the request's, else metallib.toml
    ``[build]``'s, else the defaults (``builder.kernels.runtime_sources``); None for a catalog
    tree, whose host library is a registry."""
    generated: GeneratedTree | None = field(default=None, compare=False, omit="always")
    """A catalog tree's entry files (``builder.kernels.catalog_tree``), written into the build
    folder by ``plan.write_plan``; None for a discovered tree, or without a build folder."""
    memo: DiscoveryMemo | None = field(default=None, compare=False, omit="always")
    """A discovery the build directory does not remember yet (``write_plan`` saves it)."""

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

    def cmake_lists(self) -> dict[str, str]:
        """plan.json's ``cmake``: the facts CMakeLists.txt reads, as ';'-joined lists (one
        ``string(JSON GET)`` each)."""

        def joined(items: Sequence[object]) -> str:
            return ";".join(str(i) for i in items)

        depends = [self.config] if self.config else []
        if self.kind == "catalog":
            depends.append(self.source_dir / "catalog.json")
        return {
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
            "aot_sources": joined([c.source for c in self.compiles]),
            "jit_units": joined(self.jit),
            "jit_library": "ON" if self.jit or self.preambles else "",
            "include_dirs": joined(self.include_dirs),
            "defines": joined(self.defines),
            "flags": joined(self.flags),
            "configure_depends": joined(depends),
        }

    @classmethod
    def read(cls, path: Path) -> BuildPlan:
        """A plan file written by ``plan.write_plan``, typed and checked: UsageError (exit 2)
        naming ``path`` when it is not one (another schema, a missing or mistyped field)."""
        data = read_json(path, "build plan")
        if not isinstance(data, dict):
            raise UsageError(f"{path}: not a usable build plan: not a JSON object")
        if data.get("schema") != PLAN_SCHEMA:
            raise UsageError(
                f"{path}: build plan schema {data.get('schema')!r}, expected {PLAN_SCHEMA}"
            )
        try:  # the request in its one JSON form, a plain CMake run's too (BuildRequest.to_json)
            return load(cls, {**data, "request": dump(BuildRequest.from_json(data["request"]))})
        except (KeyError, TypeError, ValueError) as exc:
            raise UsageError(f"{path}: not a usable build plan: {exc}") from None


def plan_text(plan: BuildPlan) -> str:
    """The bytes of ``plan.json`` (deterministic: compare it to tell whether a plan changed):
    the plan, and the ``cmake`` lists made from it."""
    document = {"schema": PLAN_SCHEMA, **dump(plan), "cmake": plan.cmake_lists()}
    document["request"] = plan.request.to_json()
    return json.dumps(document, indent=1) + "\n"
