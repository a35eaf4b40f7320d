"""The build request: every option of a build, typed, in one frozen dataclass tree.

A build option is declared once, here, as a field of one part of :class:`BuildRequest`
(``toolchain``, ``tree``, ``selection``, ``output``) with everything said about it in the
field's metadata (:class:`Option`): its command-line flag, help, metavar, its CMake cache
variable (``METALLIB_*``) and its kind. Everything else is generated from that declaration:

* the click options of ``build`` and ``presets`` (``builder.cli.build_options``; the CLI builds
  the request with :meth:`BuildRequest.from_options`, a click parameter named like its field);
* ``cmake/MetallibBuildOptions.cmake``, the cache variables of a plain CMake run, and the option
  table of docs/build.md (``python -m builder.cmake_build.options --write``).

The request travels one way: ``BuildRequest`` -> plan.json's ``request`` (:meth:`to_json`) ->
:meth:`from_json`. A plain CMake run hands its cache variables to the planner as that same JSON
object (``metallib_build_request`` in the generated CMake file).

Names: ``tree.source_dir`` is the kernel tree (``--source-dir``, ``METALLIB_SOURCE_DIR``), and
only that; the CMake project CMake configures is :func:`project_dir`.
"""

from __future__ import annotations

from collections.abc import Callable, Iterator, Mapping
from dataclasses import Field, dataclass, field, fields, replace
from pathlib import Path
from typing import TYPE_CHECKING, TypeVar

from builder.cmake_build.option_values import (
    Option,
    from_cli,
    from_json,
    meta,
    option_of,
    to_json,
)
from builder.errors import UsageError
from builder.kernels.chunking import DEFAULT_CHUNK_SIZE
from builder.kernels.runtime_sources import APIS, DEFAULT_NAMESPACE

if TYPE_CHECKING:
    from _typeshed import DataclassInstance

__all__ = [
    "DEFAULT_METAL_FLAGS",
    "SDKS",
    "BuildLocation",
    "BuildRequest",
    "Option",
    "Toolchain",
    "Tree",
    "UnitSelection",
    "option_fields",
    "project_dir",
]

DEFAULT_METAL_FLAGS = ("-Wall", "-Wextra", "-fno-fast-math")
"""The flags of every AOT compile when none are asked for (MetalAot.cmake's
METALLIB_DEFAULT_FLAGS says the same; ``options --check`` compares them)."""
SDKS = ("macosx", "iphoneos", "iphonesimulator")
"""The xcrun SDKs a build may ask for."""


_FLAGS_TEXT = " ".join(DEFAULT_METAL_FLAGS)


@dataclass(frozen=True, kw_only=True)
class Toolchain:
    """How AOT units are compiled."""

    metal_compiler: str | None = field(
        default=None,
        metadata=meta(
            "text",
            "Metal compiler driver for AOT, which also links (default: $METAL_COMPILER, then "
            "xcrun -sdk SDK metal).",
            flag="--metal-compiler",
            cmake="METALLIB_COMPILER",
            metavar="PATH",
            shown_default="via xcrun",
        ),
    )
    metal_flags: tuple[str, ...] | None = field(
        default=None,
        metadata=meta(
            "flags",
            f"Flags of every AOT compile, replacing the default {_FLAGS_TEXT} (words as a "
            "shell reads them; repeatable; --metal-flags '' for none). In CMake a list: ',' "
            "before a '-' separates too.",
            flag="--metal-flags",
            cmake="METALLIB_AOT_FLAGS",
            metavar="FLAGS",
            cmake_default=";".join(DEFAULT_METAL_FLAGS),
        ),
    )
    """None: :data:`DEFAULT_METAL_FLAGS`."""
    std: str | None = field(
        default=None,
        metadata=meta(
            "text",
            "Metal language standard of the AOT compiles (-std=), e.g. metal3.1 or "
            "macos-metal2.4 (default: [build] std of metallib.toml, else from the stated Metal "
            "version, else the compiler's).",
            flag="--std",
            cmake="METALLIB_STD",
            metavar="STD",
        ),
    )
    deployment_target: str | None = field(
        default=None,
        metadata=meta(
            "text",
            "OS version the AOT library targets: -mmacosx-version-min= (with --sdk iphoneos "
            "-mios-version-min=) on compile and link (default: [build] deployment-target of "
            "metallib.toml, else none).",
            flag="--deployment-target",
            cmake="METALLIB_DEPLOYMENT_TARGET",
            metavar="VERSION",
        ),
    )
    sdk: str = field(
        default=SDKS[0],
        metadata=meta(
            "text",
            "xcrun SDK of the Metal compiler (and of the deployment-target flag).",
            flag="--sdk",
            cmake="METALLIB_SDK",
            choices=SDKS,
        ),
    )


@dataclass(frozen=True, kw_only=True)
class Tree:
    """The kernel tree and how to read it."""

    source_dir: Path | None = field(
        default=None,
        metadata=meta(
            "real_path",
            "Kernel tree: a folder with catalog.json, or any folder of .metal entry files "
            "(discovered with the host preprocessor).",
            flag="--source-dir",
            cmake="METALLIB_SOURCE_DIR",
            cmake_default="${PROJECT_SOURCE_DIR}/metal_src",
            shown_default="the bundled metal_src/ (a catalog tree)",
        ),
    )
    include_dirs: tuple[Path, ...] = field(
        default=(),
        metadata=meta(
            "paths",
            "Folder searched for quoted includes (repeatable); before the ones in metallib.toml.",
            flag="-I/--include-dir",
            cmake="METALLIB_INCLUDE_DIRS",
            metavar="DIR",
        ),
    )
    defines: tuple[str, ...] = field(
        default=(),
        metadata=meta(
            "texts",
            "Preprocessor definition (repeatable); wins over metallib.toml and over Metal's "
            "predefined macros, e.g. -D __METAL_VERSION__=320.",
            flag="-D/--define",
            cmake="METALLIB_DEFINES",
            metavar="NAME[=VALUE]",
        ),
    )
    exclude: tuple[str, ...] = field(
        default=(),
        metadata=meta(
            "texts",
            "Skip entry files whose path relative to --source-dir matches (repeatable; "
            "fnmatch, '*' also crosses '/').",
            flag="--exclude",
            cmake="METALLIB_EXCLUDE",
            metavar="GLOB",
        ),
    )
    config_file: Path | None = field(
        default=None,
        metadata=meta(
            "path",
            "Settings file to use instead of DIR/metallib.toml.",
            flag="--config",
            cmake="METALLIB_CONFIG",
            metavar="FILE",
        ),
    )


_UNITS = (
    "catalog families, or entry files of a tree without catalog.json (comma-separated names or "
    "globs, '*' crossing '/'; repeatable)"
)


@dataclass(frozen=True, kw_only=True)
class UnitSelection:
    """Which units are built, and in which mode (the split: ``jit``/``aot``)."""

    jit: tuple[str, ...] = field(
        default=(),
        metadata=meta(
            "globs",
            f"Units built JIT, the rest AOT: {_UNITS}; '*' for all. Entry files [build] "
            "aot-only names stay AOT; entry files that define their own kernels are embedded "
            "whole.",
            flag="--jit",
            cmake="METALLIB_JIT",
            metavar="GLOBS",
            shown_default="none (`*` under `pip install`)",
        ),
    )
    aot: tuple[str, ...] = field(
        default=(),
        metadata=meta(
            "globs",
            f"Units built AOT, every other one JIT: {_UNITS}.",
            flag="--aot",
            cmake="METALLIB_AOT",
            metavar="GLOBS",
            shown_default="none",
        ),
    )
    kernels: tuple[str, ...] = field(
        default=(),
        metadata=meta(
            "names",
            "Catalog families to build (default: every family in the catalog).",
            flag="--kernels",
            cmake="METALLIB_KERNELS",
            metavar="F,...",
            shown_default="all",
        ),
    )
    dtypes: tuple[str, ...] = field(
        default=(),
        metadata=meta(
            "names",
            "dtypes a catalog tree instantiates (default: all).",
            flag="--dtypes",
            cmake="METALLIB_DTYPES",
            metavar="D,...",
            shown_default="all",
        ),
    )
    chunk_size: int = field(
        default=DEFAULT_CHUNK_SIZE,
        metadata=meta(
            "int",
            "Mean instantiations per chunk (one generated AOT source) of a catalog tree's "
            "AOT units.",
            flag="--chunk-size",
            cmake="METALLIB_AOT_CHUNK_SIZE",
        ),
    )
    compress: bool = field(
        default=False,
        metadata=meta(
            "bool",
            "Compress the sources a catalog tree embeds in the host library.",
            flag="--compress",
            cmake="METALLIB_JIT_COMPRESS",
        ),
    )
    jit_namespace: str | None = field(
        default=None,
        metadata=meta(
            "text",
            "C++ namespace of the run-time sources' functions (a or a::b), over [build] "
            f"jit-namespace of metallib.toml (default {DEFAULT_NAMESPACE}); a tree of entry files "
            "only.",
            flag="--jit-namespace",
            cmake="METALLIB_JIT_NAMESPACE",
            metavar="NS",
            shown_default=f"[build] jit-namespace, else `{DEFAULT_NAMESPACE}`",
        ),
    )
    jit_api: str | None = field(
        default=None,
        metadata=meta(
            "text",
            "What each run-time source function returns, over [build] jit-api of metallib.toml: "
            "string (const std::string&, shared pieces stored once; the default) or cstring "
            "(const char*, each function's whole text on its own, as MLX stores it); the "
            "embedded bytes count what it stores. A tree of entry files only.",
            flag="--jit-api",
            cmake="METALLIB_JIT_API",
            choices=APIS,
            shown_default="[build] jit-api, else `string`",
        ),
    )
    jit_lookup: bool | None = field(
        default=None,
        metadata=meta(
            "switch",
            "Define the lookup by name, preamble(name) (and a build's unit_source(unit)), over "
            "[build] jit-lookup of metallib.toml (default: defined). In CMake ON, OFF or empty "
            "(metallib.toml's). A tree of entry files only.",
            flag="--jit-lookup/--no-jit-lookup",
            cmake="METALLIB_JIT_LOOKUP",
            shown_default="[build] jit-lookup, else defined",
        ),
    )


@dataclass(frozen=True, kw_only=True)
class BuildLocation:
    """Where the build goes (CMake's ``-B``: not a cache variable)."""

    build_dir: Path | None = field(
        default=None,
        metadata=meta("real_path", "Build directory.", flag="--build-dir"),
    )


@dataclass(frozen=True, kw_only=True)
class BuildRequest:
    """Everything one build is asked to be."""

    toolchain: Toolchain = field(default_factory=Toolchain)
    tree: Tree = field(default_factory=Tree)
    selection: UnitSelection = field(default_factory=UnitSelection)
    location: BuildLocation = field(default_factory=BuildLocation)

    @property
    def build_dir(self) -> Path:
        """The build folder (the CLI always names one)."""
        if self.location.build_dir is None:
            raise UsageError("the build request names no build folder")
        return self.location.build_dir

    @property
    def metal_flags(self) -> tuple[str, ...]:
        """The flags every AOT compile gets (the default when none are asked for)."""
        flags = self.toolchain.metal_flags
        return DEFAULT_METAL_FLAGS if flags is None else flags

    def replace(self, **changes: object) -> BuildRequest:
        """A copy with the named fields (of any part) changed: ``request.replace(jit=("*",))``."""
        parts = {}
        for part, _ in _parts():
            own = {f.name for f in fields(type(getattr(self, part)))}
            mine = {k: v for k, v in changes.items() if k in own}
            if mine:
                parts[part] = replace(getattr(self, part), **mine)
        unknown = set(changes) - {f.name for _, cls in _parts() for f in fields(cls)}
        if unknown:
            raise TypeError(f"no build option {', '.join(sorted(unknown))}")
        return replace(self, **parts)

    @classmethod
    def from_options(cls, values: Mapping[str, object]) -> BuildRequest:
        """The request of the CLI's values (click parameters named like the fields; a missing
        or None value is the field's default)."""
        return cls._build(lambda f: from_cli(f, values.get(f.name)))

    @classmethod
    def from_json(cls, data: Mapping[str, object]) -> BuildRequest:
        """The request :meth:`to_json` wrote, or a plain CMake run's cache as
        ``metallib_build_request`` words it (a missing field: its default). ValueError naming
        the field when a value has the wrong type."""
        unknown = set(data) - {f.name for f, _ in option_fields()}
        if unknown:
            raise ValueError(f"no build option {', '.join(sorted(unknown))}")
        return cls._build(lambda f: from_json(f, data.get(f.name)))

    def to_json(self) -> dict[str, object]:
        """Every field, for plan.json (flat: field names are unique)."""
        return {f.name: to_json(value) for f, value in self._values()}

    @classmethod
    def _build(cls, value_of: Callable[[Field[object]], object]) -> BuildRequest:
        return cls(
            toolchain=_part(Toolchain, value_of),
            tree=_part(Tree, value_of),
            selection=_part(UnitSelection, value_of),
            location=_part(BuildLocation, value_of),
        )

    def _values(self) -> Iterator[tuple[Field[object], object]]:
        for part, part_cls in _parts():
            for f in fields(part_cls):
                yield f, getattr(getattr(self, part), f.name)


_Part = TypeVar("_Part", bound="DataclassInstance")


def _part(part_cls: type[_Part], value_of: Callable[[Field[object]], object]) -> _Part:
    """One part of a request from ``value_of`` each field (None: the field's default)."""
    given = {}
    for f in fields(part_cls):
        value = value_of(f)
        if value is not None or f.default is None:
            given[f.name] = value
    return part_cls(**given)


def _parts() -> tuple[tuple[str, type[DataclassInstance]], ...]:
    return (
        ("toolchain", Toolchain),
        ("tree", Tree),
        ("selection", UnitSelection),
        ("location", BuildLocation),
    )


def option_fields() -> list[tuple[Field[object], Option]]:
    """Every request field with its :class:`Option`, in declaration order."""
    return [(f, option_of(f)) for _, cls in _parts() for f in fields(cls)]


def project_dir() -> Path:
    """The CMake project the CLI configures: the checkout root, or ``builder/_data`` in an
    installed wheel."""
    from builder.resources import cmake_dir

    return cmake_dir().parent
