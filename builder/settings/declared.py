"""Every setting, declared once (``builder.settings.model.Setting``): a kernel tree and how to
read it, how AOT units are compiled, which units are AOT or JIT, the interface of the run-time
sources; with what a command takes for its own run (``builder.settings.commands``) and those of
files, gates and targets (``builder.settings.file_keys``), the registry of them all.

Adding a setting is one declaration here, plus its use. A build setting (one of ``REQUEST``'s
groups) is then in the build request, on ``build`` and ``presets`` and, with a cache variable,
in the CMake module and the docs table (``python -m builder.cmake_build.options --write``
regenerates both); another command lists the setting's name (``builder.cli.tree_options.option``).
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path
from typing import Any

from builder.settings import validators as c
from builder.settings.commands import COMMAND
from builder.settings.file_keys import (
    BUDGET_LIMITS,
    DEFAULT_PLATFORM,
    EMBEDDINGS,
    FILE_KEYS,
    GATES,
    PREAMBLE_SETS,
    TARGETS,
)
from builder.settings.model import Setting
from builder.settings.text_rules import APIS, DEFAULT_NAMESPACE, namespace
from builder.settings.validators import Limit

__all__ = [
    "BUDGET_LIMITS",
    "DEFAULT_CHUNK_SIZE",
    "DEFAULT_METAL_FLAGS",
    "DEFAULT_PLATFORM",
    "EMBEDDINGS",
    "PREAMBLE_SETS",
    "REQUEST",
    "SDKS",
    "SETTINGS",
    "Tree",
    "setting",
    "setting_field",
    "toml_keys",
]

DEFAULT_METAL_FLAGS = ("-Wall", "-Wextra", "-fno-fast-math")
"""The flags of every AOT compile when none are asked for (MetalAot.cmake's
METALLIB_DEFAULT_FLAGS says the same; ``options --check`` compares them)."""
SDKS = ("macosx", "iphoneos", "iphonesimulator")
"""The xcrun SDKs a build may ask for."""
DEFAULT_CHUNK_SIZE = 250
"""Mean instantiations per generated entry file of a catalog tree (``kernels.catalog_tree``)."""


_UNITS = (
    "catalog families, or entry files of a tree without catalog.json (comma-separated names or "
    "globs, '*' crossing '/'; repeatable)"
)
_TOML = "of metallib.toml"  # the settings a flag and a key give (the flag wins)

_TREE: tuple[Setting[Any], ...] = (
    Setting(
        "source_dir",
        "Kernel tree: a folder with catalog.json, or any folder of .metal entry files "
        "(discovered with the host preprocessor).",
        kind="real_path",
        budget="source-dir",
        cmake="METALLIB_SOURCE_DIR",
        cmake_default="${PROJECT_SOURCE_DIR}/metal_src",
        shown_default="the bundled metal_src/ (a catalog tree)",
    ),
    Setting(
        "include_dirs",
        "Folder searched for quoted includes, in order (repeatable); a tree's before the ones "
        "in its metallib.toml.",
        kind="paths",
        default=(),
        flag="-I/--include-dir",
        toml="kernels.include-dirs",
        budget="include-dirs",
        cmake="METALLIB_INCLUDE_DIRS",
        metavar="DIR",
    ),
    Setting(
        "defines",
        "Preprocessor definition (repeatable); wins over metallib.toml and over Metal's "
        "predefined macros, e.g. -D __METAL_VERSION__=320.",
        kind="texts",
        default=(),
        flag="-D/--define",
        toml="kernels.defines",
        budget="defines",
        cmake="METALLIB_DEFINES",
        validate=c.define,
        metavar="NAME[=VALUE]",
    ),
    Setting(
        "exclude",
        "Skip entry files whose path relative to --source-dir matches (repeatable; "
        "fnmatch, '*' also crosses '/').",
        kind="texts",
        default=(),
        toml="kernels.exclude",
        budget="exclude",
        cmake="METALLIB_EXCLUDE",
        metavar="GLOB",
    ),
    Setting(
        "config",
        "Settings file to use instead of DIR/metallib.toml.",
        kind="path",
        budget="config",
        cmake="METALLIB_CONFIG",
        metavar="FILE",
    ),
)

_TOOLCHAIN: tuple[Setting[Any], ...] = (
    Setting(
        "metal_compiler",
        "Metal compiler driver for AOT, which also links (default: $METAL_COMPILER, then "
        "xcrun -sdk SDK metal).",
        cmake="METALLIB_COMPILER",
        metavar="PATH",
        shown_default="via xcrun",
    ),
    Setting(
        "metal_flags",
        f"Flags of every AOT compile, replacing the default {' '.join(DEFAULT_METAL_FLAGS)} "
        "(words as a shell reads them; repeatable; --metal-flags '' for none). In CMake a "
        "list: ',' before a '-' separates too.",
        kind="flags",
        cmake="METALLIB_AOT_FLAGS",
        metavar="FLAGS",
        cmake_default=";".join(DEFAULT_METAL_FLAGS),
    ),
    Setting(
        "std",
        "Metal language standard of the AOT compiles (-std=), e.g. metal3.1 or "
        "macos-metal2.4 (default: [build] std of metallib.toml, else from the stated Metal "
        "version, else the compiler's).",
        toml="build.std",
        cmake="METALLIB_STD",
        validate=c.std,
        expected='a Metal language standard such as "metal3.1" or "macos-metal2.4"',
        metavar="STD",
    ),
    Setting(
        "deployment_target",
        "OS version the AOT library targets: -mmacosx-version-min= (with --sdk iphoneos "
        "-mios-version-min=) on compile and link (default: [build] deployment-target of "
        "metallib.toml, else none).",
        toml="build.deployment-target",
        cmake="METALLIB_DEPLOYMENT_TARGET",
        validate=c.deployment_target,
        expected='an OS version such as "14.0"',
        metavar="VERSION",
    ),
    Setting(
        "sdk",
        "xcrun SDK of the Metal compiler (and of the deployment-target flag).",
        default=SDKS[0],
        cmake="METALLIB_SDK",
        choices=SDKS,
    ),
)

_SELECTION: tuple[Setting[Any], ...] = (
    Setting(
        "jit",
        f"Units built JIT, the rest AOT: {_UNITS}; --jit alone or '*': all; in CMake any "
        "boolean too (ON, Y, 1: all; OFF, N, 0: none). Entry files [build] aot-only names "
        "stay AOT; those that define their own kernels are embedded whole.",
        kind="globs",
        default=(),
        cmake="METALLIB_JIT",
        metavar="[GLOBS]",
        bare="*",
        shown_default="none (`*` under `pip install`)",
    ),
    Setting(
        "aot",
        f"Units built AOT, every other one JIT: {_UNITS}.",
        kind="globs",
        default=(),
        cmake="METALLIB_AOT",
        metavar="GLOBS",
        shown_default="none",
    ),
    Setting(
        "kernels",
        "Catalog trees only: these units (catalog families), comma-separated (e.g. "
        "unary,binary); repeatable. Default: all.",
        kind="names",
        default=(),
        cmake="METALLIB_KERNELS",
        metavar="F,...",
        shown_default="all",
    ),
    Setting(
        "dtypes",
        "Catalog trees only: instantiations whose value dtypes are all listed (index dtypes "
        "are kept), e.g. float16,float32. Default: all.",
        kind="names",
        default=(),
        cmake="METALLIB_DTYPES",
        metavar="D,...",
        shown_default="all",
    ),
    Setting(
        "chunk_size",
        "Mean instantiations per chunk (one generated AOT source) of a catalog tree's "
        f"AOT units. Default: {DEFAULT_CHUNK_SIZE}.",
        kind="int",
        default=DEFAULT_CHUNK_SIZE,
        cmake="METALLIB_AOT_CHUNK_SIZE",
    ),
    Setting(
        "compress",
        "Compress the sources a catalog tree embeds in the host library.",
        kind="bool",
        default=False,
        cmake="METALLIB_JIT_COMPRESS",
    ),
)

_RUNTIME: tuple[Setting[Any], ...] = (
    Setting(
        "jit_namespace",
        "C++ namespace (a or a::b) of the run-time sources' functions: the one written (over "
        f"[build] jit-namespace {_TOML}; default {DEFAULT_NAMESPACE}), or for sources the one "
        "read (default: any).",
        toml="build.jit-namespace",
        cmake="METALLIB_JIT_NAMESPACE",
        validate=namespace,
        metavar="NS",
        shown_default=f"[build] jit-namespace, else `{DEFAULT_NAMESPACE}`",
    ),
    Setting(
        "jit_api",
        f"What each run-time source function returns, over [build] jit-api {_TOML}: string "
        "(const std::string&, shared pieces stored once; the default) or cstring (const "
        "char*, each function's whole text on its own, as MLX's jit/includes.h declares "
        "them); the embedded bytes count what it stores.",
        toml="build.jit-api",
        cmake="METALLIB_JIT_API",
        choices=APIS,
        shown_default="[build] jit-api, else `string`",
    ),
    Setting(
        "jit_lookup",
        "Define the lookup by name, preamble(name) (and a build's unit_source(unit)), over "
        f"[build] jit-lookup {_TOML} (default: defined); --no-jit-lookup for a host that "
        "calls the functions by name (MLX). In CMake ON, OFF or empty (metallib.toml's).",
        kind="switch",
        flag="--jit-lookup/--no-jit-lookup",
        toml="build.jit-lookup",
        cmake="METALLIB_JIT_LOOKUP",
        shown_default="[build] jit-lookup, else defined",
    ),
)

_LOCATION: tuple[Setting[Any], ...] = (Setting("build_dir", "Build directory.", kind="real_path"),)
"""The build request's settings, in the order of plan.json's request: a build setting is one
declaration in one of these groups (``builder.cmake_build.plan_model.BuildRequest`` holds its
value, ``build`` and ``presets`` take its flag, the CMake module and docs/build.md its cache
variable)."""
REQUEST = (*_TOOLCHAIN, *_TREE, *_SELECTION, *_RUNTIME, *_LOCATION)

SETTINGS: dict[str, Setting[Any]] = {
    s.name: s for s in (*REQUEST, *COMMAND, *TARGETS, *GATES, *FILE_KEYS)
}
"""Every setting by name."""


def setting(name: str) -> Setting[Any]:
    """The setting ``name`` declares (KeyError: none)."""
    return SETTINGS[name]


def setting_field(name: str) -> Any:
    """The dataclass field of a document holding the setting ``name`` (``Setting.field``)."""
    return SETTINGS[name].field()


def toml_keys(table: str) -> dict[str, Setting[Any]]:
    """The settings of one ``metallib.toml`` table (``kernels``, ``build``) by key."""
    found = {}
    for s in SETTINGS.values():
        if s.toml is not None and s.toml.partition(".")[0] == table:
            found[s.toml.partition(".")[2]] = s
    return found


@dataclass(frozen=True, kw_only=True)
class Tree:
    """A kernel tree and how to read it, as every surface names one: the build request's part
    (``builder.cmake_build.plan_model``), the kernel-tree options of every command that reads a
    tree (``builder.cli.tree_options.TreeOptions``, which adds ``-j``) and a budget's tree
    (``builder.size.budget_file.Budget``, ``by = "source"``)."""

    source_dir: Path | None = setting_field("source_dir")
    include_dirs: tuple[Path, ...] = setting_field("include_dirs")
    defines: tuple[str, ...] = setting_field("defines")
    exclude: tuple[str, ...] = setting_field("exclude")
    config: Path | None = setting_field("config")


@dataclass(frozen=True, kw_only=True)
class Limits:
    """The limits ``compare`` checks as gates and a budget as its keys, one field each, named as
    their settings (``GATES``: ``--max-size`` and ``max-size`` are ``max_size``): declared here
    once for ``builder.size.verdicts.Gates`` and ``builder.size.budget_file.Budget``, which add
    what only one of them has. All optional: None, False or () is not asked for."""

    max_size: int | None = None
    max_total_size: int | None = None
    """The metallib plus the host library (``builder.size.verdicts.shipped_size``)."""
    max_download_size: int | None = None
    max_growth: Limit | None = None
    require: tuple[str, ...] = ()
    """``GLOB[>=N]`` as written, each checked by ``builder.size.content_gates.required``."""
    fail_on_removed: str | None = None
    """The glob of base's functions head must keep (``*``: every one)."""
    min_functions: int | None = None
    max_deployment_target: str | None = None
    max_metal_version: str | None = None
    fail_on_platform_change: bool = False
    fail_on_missing: bool = False
    """Head lacks kernels of the ``--source-dir`` tree for its platform."""
    max_unattributed: int | None = None
    """Bytes no entry file produces (``builder.size.tree_match.unattributed``)."""
