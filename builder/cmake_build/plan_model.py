"""The build's two documents: the request (what was asked, every setting typed) and the plan (what
will be built). The build plan as data: its units, and plan.json (:func:`plan_text`, read back by
:meth:`BuildPlan.read`). ``builder.cmake_build.plan`` computes it; CMakeLists.txt reads its
``cmake`` lists; ``record`` and ``tree_jit`` read the rest. plan.json is CMake's input (CMake
configures again when it changes), not a record: what a build made is in manifest.json. Standard
library and ``builder`` only (runs in CMake).

The build request: a value for every build setting declared in ``builder.settings.declared``
(``REQUEST``: its flag, CMake cache variable, check, help and default are said there once, and
nothing here names it). From that declaration come:

* the click options of ``build`` and ``presets`` (``builder.cli.tree_options.option``; the CLI
  builds the request with :meth:`BuildRequest.from_options`, a click parameter named like its
  setting);
* ``cmake/MetallibBuildOptions.cmake``, the cache variables of a plain CMake run, and the option
  table of docs/build.md (``python -m builder.cmake_build.options --write``);
* plan.json's ``request``: :meth:`to_json` and :meth:`from_json`, each value checked by its
  setting.

The request travels one way: ``BuildRequest`` -> plan.json's ``request`` -> :meth:`from_json`.
A plain CMake run hands its cache variables to the planner as that same JSON object
(``metallib_build_request`` in the generated CMake file).

Names: ``tree.source_dir`` is the kernel tree (``--source-dir``, ``METALLIB_SOURCE_DIR``), and
only that; the CMake project CMake configures is :func:`project_dir`.
"""

from __future__ import annotations

import json
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, fields, replace
from pathlib import Path
from typing import Any, Literal, TypeVar

from builder.errors import UsageError
from builder.files.dataclass_json import dump, field, load
from builder.files.reading import read_json
from builder.kernels.catalog_tree import GENERATED_TREE, GeneratedTree
from builder.kernels.discovery_cache import DiscoveryMemo
from builder.records.manifest import Embedding, Unit
from builder.settings.declared import DEFAULT_METAL_FLAGS, REQUEST, SDKS, Tree, setting
from builder.settings.model import Setting

__all__ = [
    "AOT",
    "BUILD_DIR",
    "CATALOG_LIBRARY",
    "CHUNK_SIZE",
    "COMPRESS",
    "DEFAULT_METAL_FLAGS",
    "DEPLOYMENT_TARGET",
    "DISCOVERY_CACHE",
    "DTYPES",
    "JIT",
    "JIT_API",
    "JIT_LOOKUP",
    "JIT_NAMESPACE",
    "KERNELS",
    "METAL_COMPILER",
    "PLAN_FILE",
    "PLAN_SCHEMA",
    "SDK",
    "SDKS",
    "STD",
    "BuildPlan",
    "BuildRequest",
    "Compile",
    "DiscoverySettings",
    "PlannedPreamble",
    "Tree",
    "Unit",
    "plan_text",
    "project_dir",
    "request_settings",
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
T = TypeVar("T")

# The build settings the planner reads, typed (a build setting needs one only to be read
# here): ``request[STD]`` is a ``str | None``.
METAL_COMPILER: Setting[str | None] = setting("metal_compiler")
STD: Setting[str | None] = setting("std")
DEPLOYMENT_TARGET: Setting[str | None] = setting("deployment_target")
SDK: Setting[str] = setting("sdk")
JIT: Setting[tuple[str, ...]] = setting("jit")
AOT: Setting[tuple[str, ...]] = setting("aot")
KERNELS: Setting[tuple[str, ...]] = setting("kernels")
DTYPES: Setting[tuple[str, ...]] = setting("dtypes")
CHUNK_SIZE: Setting[int] = setting("chunk_size")
COMPRESS: Setting[bool] = setting("compress")
JIT_NAMESPACE: Setting[str | None] = setting("jit_namespace")
JIT_API: Setting[str | None] = setting("jit_api")
JIT_LOOKUP: Setting[bool | None] = setting("jit_lookup")
BUILD_DIR: Setting[Path | None] = setting("build_dir")


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
    """The Metal version stated, else the one the deployment target runs; None: neither (the
    compiles' std and this: ``builder.kernels.platforms.build_metal_version``)."""
    std: str | None
    """The ``-std=`` the compiles get: the request's, else the tree's, else none."""
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
    aot_only: tuple[str, ...] = field(default=(), omit="empty")
    """The entry files ``[build] aot-only`` keeps AOT whatever is asked: a build of them needs
    the Metal compiler (``builder.subsets.variant_library.held_aot``)."""
    left_out: tuple[str, ...] = field(default=(), omit="empty")
    """The entry files the platform's build leaves out (``[kernels.requires]``; the platform is
    :attr:`metal_version` and :attr:`deployment_target`)."""
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
        build_dir = self.request[BUILD_DIR]
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
            "compiler": self.request[METAL_COMPILER] or "",
            "sdk": self.request[SDK],
            "aot_flags": joined(self.request.metal_flags),
            "dtypes": joined(self.request[DTYPES]),
            "compress": "ON" if self.request[COMPRESS] else "",
            "std": self.std or "",
            "deployment_target": self.deployment_target or "",
            "aot_sources": joined([c.source for c in self.compiles]),
            "jit_units": joined(self.jit),
            "jit_library": "ON" if self.jit or self.preambles else "",
            "include_dirs": joined(self.include_dirs),
            "defines": joined(self.defines),
            "flags": joined(self.flags),
            "configure_depends": joined(depends),
            "aot_only": joined(self.aot_only),
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
            if not isinstance(data.get("request"), dict):
                raise TypeError("'request' is not an object")
            request = BuildRequest.from_json(data["request"])
            return replace(load(cls, {**data, "request": {}}), request=request)
        except (KeyError, TypeError, ValueError) as exc:
            raise UsageError(f"{path}: not a usable build plan: {exc}") from None


def plan_text(plan: BuildPlan) -> str:
    """The bytes of ``plan.json`` (deterministic: compare it to tell whether a plan changed):
    the plan, and the ``cmake`` lists made from it."""
    document = {"schema": PLAN_SCHEMA, **dump(plan), "cmake": plan.cmake_lists()}
    document["request"] = plan.request.to_json()
    return json.dumps(document, indent=1) + "\n"


@dataclass(frozen=True)
class BuildRequest:
    """Everything one build is asked to be: a value for every build setting
    (``builder.settings.declared.REQUEST``), by name; ``request[STD]`` reads one, typed by its
    handle above. Nothing here names a setting: a build setting declared there is in the request,
    its JSON and its flags; it needs a handle only for Python to read it."""

    values: Mapping[str, Any] = field(default_factory=dict, omit="always", hash=False)
    """Every build setting's value (its default when not given); written by :meth:`to_json`."""

    def __post_init__(self) -> None:
        defaults = {name: _default(s) for name, s in request_settings().items()}
        unknown = set(self.values) - set(defaults)
        if unknown:
            raise TypeError(f"no build option {', '.join(sorted(unknown))}")
        object.__setattr__(self, "values", defaults | dict(self.values))

    def __getitem__(self, s: Setting[T]) -> T:
        value: T = self.values[s.name]
        return value

    @property
    def tree(self) -> Tree:
        """The kernel tree and how to read it (the record a budget and the CLI share)."""
        return Tree(**{f.name: self.values[f.name] for f in fields(Tree)})

    @property
    def build_dir(self) -> Path:
        """The build folder (the CLI always names one)."""
        build_dir = self[BUILD_DIR]
        if build_dir is None:
            raise UsageError("the build request names no build folder")
        return build_dir

    @property
    def metal_flags(self) -> tuple[str, ...]:
        """The flags every AOT compile gets (the default when none are asked for)."""
        flags: tuple[str, ...] | None = self.values["metal_flags"]
        return DEFAULT_METAL_FLAGS if flags is None else flags

    def replace(self, **changes: object) -> BuildRequest:
        """A copy with the named settings changed, each checked as its flag's value is:
        ``request.replace(jit=("*",))``."""
        known = request_settings()
        checked = {k: _checked(known[k], v) for k, v in changes.items() if k in known}
        return BuildRequest({**self.values, **changes, **checked})  # unknown: TypeError

    @classmethod
    def from_options(cls, values: Mapping[str, object]) -> BuildRequest:
        """The request of the CLI's values (click parameters named like the settings; a missing
        or None value is the default), each read as its setting reads a flag."""
        given = {}
        for name, s in request_settings().items():
            value = s.from_cli(values.get(name))
            if value is not None:
                given[name] = value
        return cls().replace(**given)

    @classmethod
    def from_json(cls, data: Mapping[str, object]) -> BuildRequest:
        """The request :meth:`to_json` wrote, or a plain CMake run's cache as
        ``metallib_build_request`` words it (a missing setting: its default). ValueError naming
        the setting when a value has the wrong type or fails its setting's check (null only
        where the default is)."""
        known = request_settings()
        unknown = set(data) - set(known)
        if unknown:
            raise ValueError(f"no build option {', '.join(sorted(unknown))}")
        read = {}
        for name, value in data.items():
            s = known[name]
            if value is not None or s.default is not None:
                read[name] = s.read(value, repr(name), error=ValueError)
        return cls(read)

    def to_json(self) -> dict[str, object]:
        """Every setting's value, for plan.json's ``request``."""
        return {name: dump(value) for name, value in self.values.items()}


def _default(s: Setting[Any]) -> Any:
    """A setting's value when none is given (a list default as a tuple, as values are)."""
    return tuple(s.default) if isinstance(s.default, list) else s.default


def _checked(s: Setting[Any], value: object) -> object:
    """``value`` of a request setting checked as its flag's value is (paths and switches have
    nothing more to check; None: the default)."""
    if value is None:
        return _default(s)
    if s.kind in ("path", "real_path", "paths", "bool", "switch"):
        return value
    return s.read(list(value) if isinstance(value, tuple) else value, str(s.long_flag))


def request_settings() -> dict[str, Setting[Any]]:
    """Every setting a build request holds, by name, in plan.json's order."""
    return {s.name: s for s in REQUEST}


def project_dir() -> Path:
    """The CMake project the CLI configures: the checkout root, or ``builder/_data`` in an
    installed wheel."""
    from builder.resources import cmake_dir

    return cmake_dir().parent
