"""The parts of a build request (:class:`builder.cmake_build.request.BuildRequest`), each a
frozen dataclass whose fields are build options, declared once with everything said about them
in their metadata (``option_values.Option``): how AOT units are compiled (:class:`Toolchain`),
which kernel tree (:class:`Tree`), which units are AOT or JIT and how they are cut
(:class:`UnitSelection`), and where the build goes (:class:`BuildLocation`)."""

from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path

from builder.cmake_build.option_values import meta
from builder.kernels.catalog_tree import DEFAULT_CHUNK_SIZE
from builder.kernels.runtime_sources import APIS, DEFAULT_NAMESPACE

__all__ = [
    "DEFAULT_METAL_FLAGS",
    "SDKS",
    "BuildLocation",
    "Toolchain",
    "Tree",
    "UnitSelection",
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
