"""``metallib.toml``: a kernel tree's settings, so users do not repeat flags.

The file is optional. It sits in the source folder (or is named with ``--config FILE``); keys
are kebab-case as in ``pyproject.toml``. The tree's own file names folders inside the tree only
(``builder.kernels.confinement``). Paths in it are relative to the file; globs are matched
against entry-file paths relative to the source folder. Command-line flags win (see
:func:`merge_flags`). Unknown keys and wrong types stop with exit 2, naming the key and the file
and suggesting the closest known key. The keys and their meaning are docs/discovery.md's
"Settings: metallib.toml" (each key a setting of ``builder.settings.declared``).

What a build of a kernel tree carries into CMake, build.ninja and command lines is checked here
too: every value of a tree that reaches a build (the source folder, include folders, defines,
flags, preamble paths, entry-file names) has no control character (a newline would add lines to
build.ninja), no CMake list or generator-expression syntax (``;`` would cut one flag in two), and
for entry files nothing CMake cannot name a build output with. :func:`build_library` runs the
checks and names the library the build writes.
"""

from __future__ import annotations

import os
import re
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field, fields, replace
from pathlib import Path
from types import MappingProxyType
from typing import Any

from builder.errors import UsageError, closest_hint
from builder.files.bounds import brief
from builder.files.reading import UnreadableFile, parse_toml, read_bytes
from builder.kernels.confinement import confine_folders, confine_preambles, inside
from builder.kernels.platforms import Platform, Requirement, parse_requires
from builder.kernels.runtime_sources import RuntimeSources, runtime_sources
from builder.settings.declared import EMBEDDINGS, setting_field, toml_keys
from builder.settings.model import read_table
from builder.settings.text_rules import control_character, plain_text
from builder.settings.validators import library_problem, parse_define, std_version

__all__ = [
    "CONFIG_FILE",
    "EMBEDDINGS",
    "ConfigError",
    "TreeConfig",
    "build_library",
    "find_config",
    "library_problem",
    "load_config",
    "merge_flags",
    "std_version",
]


CONFIG_FILE = "metallib.toml"


class ConfigError(UsageError):
    """metallib.toml is unreadable or does not follow the schema (exit 2)."""


@dataclass(frozen=True)
class TreeConfig:
    """A kernel tree's settings, from metallib.toml and the command line (flags first): a field
    holding a setting (``setting_field``) is that setting's value; the others are made from the
    file's tables."""

    path: Path | None = None
    """The file these settings came from; None when there is none (flags and defaults only)."""
    include_dirs: tuple[Path, ...] = setting_field("include_dirs")
    """``-I`` folders, absolute, in search order (flags' folders before the file's)."""
    defines: tuple[str, ...] = setting_field("defines")
    """For one NAME the later one wins (flags come last)."""
    exclude: tuple[str, ...] = setting_field("exclude")
    file_exclude: tuple[str, ...] = ()
    """Those of ``exclude`` the settings file gave (the others came from ``--exclude``)."""
    metal_version: int | None = setting_field("metal_version")
    """None means the default, 310."""
    library: str | None = setting_field("library")
    aot_only: tuple[str, ...] = setting_field("aot_only")
    keep_aot: tuple[str, ...] = setting_field("keep_aot")
    """[build] keep-aot: entry files the ``--ceiling`` plan never moves (with ``--keep-aot``)."""
    preambles: Mapping[str, tuple[Path, ...]] = field(default_factory=lambda: MappingProxyType({}))
    """[build.preambles] JIT source function name -> headers (absolute) inlined into it."""
    std: str | None = setting_field("std")
    deployment_target: str | None = setting_field("deployment_target")
    flags: tuple[str, ...] = setting_field("flags")
    embedding: tuple[tuple[str, str], ...] = ()
    """[build.embedding] (glob, ``whole-file`` or ``preamble``) in file order: how a JIT entry
    file is embedded, over the automatic choice (``KernelTree.embeddings``)."""
    runtime: RuntimeSources = field(default_factory=RuntimeSources)
    """[build] how the run-time sources are written: namespace, API, lookup, always-embedded
    preambles, preamble set (``builder.kernels.runtime_sources``)."""
    requires: tuple[Requirement, ...] = ()
    """[kernels.requires]: entry files only platforms meeting some minimums build."""
    platform: Platform | None = None
    """The platform discovery assumes, once ``builder.kernels.platforms.for_platform`` has
    applied it (its unmet ``requires`` added to ``exclude``); None before."""


_TABLES = ("kernels", "build")
"""The tables of the file; each key of one is a setting (``builder.settings.declared``)."""
_PLAIN = {f.name for f in fields(TreeConfig) if "setting" in f.metadata}
"""The settings of the file a :class:`TreeConfig` holds as they are read (its fields named
like their settings, which say what each is: ``builder.settings.declared``)."""


def _preamble(value: Any) -> tuple[str, ...]:
    if isinstance(value, str):
        value = [value]
    if not isinstance(value, list) or not value or not all(isinstance(v, str) for v in value):
        raise TypeError("a header path or a non-empty list of them")
    return tuple(plain_text(v) for v in value)


def _table(path: Path, raw: Mapping[str, Any], name: str) -> dict[str, Any]:
    """One table's keys, each read and checked as its setting says (paths from the file's
    folder), by setting name."""
    table = raw.get(name, {})
    if not isinstance(table, dict):
        raise ConfigError(f"{path}: [{name}] must be a table")
    return read_table(
        table,
        toml_keys(name),
        lambda key: f"{path}: [{name}] {key}",
        f"{path}: unknown key in [{name}]: ",
        error=ConfigError,
        base=path.resolve().parent,
    )


def _under(base: Path, relative: str) -> Path:
    """``relative`` taken from ``base`` (absolute paths stay), with ``..`` folded."""
    return Path(os.path.normpath(base / relative))


def load_config(path: Path, tree: Path | None = None) -> TreeConfig:
    """Read and check ``path``; relative paths in it become absolute (relative to its folder).
    With ``tree`` (the file is the tree's own), its include folders must lie inside ``tree``
    (``builder.kernels.confinement``)."""
    path = Path(path)
    try:  # a FIFO, a device or an endless file is refused, naming it
        data = read_bytes(path, "the settings")
    except UnreadableFile as exc:
        raise ConfigError(str(exc)) from None
    raw = parse_toml(data, path, ConfigError)
    for key in raw:
        if key not in _TABLES:
            raise ConfigError(f"{path}: unknown key {brief(key)}{closest_hint(key, _TABLES)}")
    kernels = _table(path, raw, "kernels")
    build = _table(path, raw, "build")
    base = path.resolve().parent
    preambles: dict[str, tuple[Path, ...]] = {}
    for name, headers in build.get("preambles", {}).items():
        if not name.isidentifier():
            raise ConfigError(f"{path}: [build.preambles] {brief(name)} is not a C++ function name")
        try:
            preambles[name] = tuple(_under(base, h) for h in _preamble(headers))
        except (TypeError, ValueError) as exc:
            raise ConfigError(
                f"{path}: [build.preambles] {name} must be {exc}, got {brief(headers)}"
            ) from None
    embedding: list[tuple[str, str]] = []
    for glob, value in build.get("embedding", {}).items():
        if control_character(glob) is not None:
            raise ConfigError(f"{path}: [build.embedding] {brief(glob)} holds a control character")
        if value not in EMBEDDINGS:
            raise ConfigError(
                f"{path}: [build.embedding] {brief(glob)} must be one of "
                f"{', '.join(repr(e) for e in EMBEDDINGS)}, got {brief(value)}"
            )
        embedding.append((glob, value))
    folders = tuple(raw["kernels"]["include-dirs"]) if "include_dirs" in kernels else ()
    if tree is not None:
        confine_folders(
            path, "[kernels] include-dirs", folders, kernels.get("include_dirs", ()), tree
        )
    try:
        runtime = runtime_sources(build, preambles)
    except ValueError as exc:
        raise ConfigError(f"{path}: {exc}") from None
    # the settings a TreeConfig holds as read; the tables' others are made into its records
    plain = {k: v for k, v in {**kernels, **build}.items() if k in _PLAIN}
    return TreeConfig(
        path=path,
        **plain,
        file_exclude=kernels.get("exclude", ()),
        preambles=MappingProxyType(preambles),
        embedding=tuple(embedding),
        runtime=runtime,
        requires=parse_requires(path, kernels.get("requires", {}), ConfigError),
    )


def find_config(
    source_dir: Path, explicit: Path | None = None, include_dirs: Sequence[Path] = ()
) -> TreeConfig:
    """``explicit`` (must exist), else ``source_dir/metallib.toml`` if present, else defaults.

    The tree's own file (``source_dir/metallib.toml``, or an ``explicit`` one that lies in the
    tree) names include folders inside the tree only; a file elsewhere named with ``--config``
    is the operator's, as the command line's ``-I`` folders are. Preamble headers must lie in
    the source folder, an include folder (the file's or ``include_dirs``, the command line's)
    or the operator's file's folder (``confinement.confine_preambles``)."""
    root = Path(os.path.realpath(source_dir))
    trusted: tuple[Path, ...] = tuple(include_dirs)
    if explicit is not None:
        if not Path(explicit).exists():
            raise ConfigError(f"--config {explicit}: no such file")
        # A file named on the command line is the operator's, unless it is the tree's own.
        folder = Path(explicit).resolve().parent
        owned = inside(Path(os.path.realpath(explicit)), (root,))
        config = load_config(Path(explicit), source_dir if owned else None)
        trusted += () if owned else (folder,)
    else:
        # Any metallib.toml that is there is read: one that is a FIFO, a link to /dev/zero or a
        # dangling link is refused, not taken for "no settings".
        candidate = Path(source_dir) / CONFIG_FILE
        config = load_config(candidate, source_dir) if os.path.lexists(candidate) else TreeConfig()
    folders = (Path(source_dir), *config.include_dirs)
    confine_preambles(config.path, config.preambles, folders, trusted)
    return config


def merge_flags(
    config: TreeConfig,
    include_dirs: Sequence[Path] = (),
    defines: Sequence[str] = (),
    exclude: Sequence[str] = (),
) -> TreeConfig:
    """Command-line flags over the file: ``-I`` folders are searched first, ``-D`` wins over the
    file's definition of the same name, ``--exclude`` globs add to the file's."""
    for text in defines:
        try:
            parse_define(text)
        except ValueError:
            raise UsageError(f"-D {text}: expected NAME or NAME=VALUE") from None
    return replace(
        config,
        include_dirs=tuple(Path(os.path.abspath(d)) for d in include_dirs) + config.include_dirs,
        defines=config.defines + tuple(defines),
        exclude=config.exclude + tuple(exclude),
    )


# CMake list syntax: ';' separates items, '[' ']' group them, '\' escapes the next ';'; and
# '$<' starts a generator expression.
_CMAKE_SYNTAX = re.compile(r"[;\[\]\\]|\$<")
# What CMake refuses in a custom command's OUTPUT (each entry file's .air is one), and what it
# writes into build.ninja unescaped in the paths made from an entry's name: '|' (Ninja's
# dependency separator) and '$' (CMake 4, in DEP_FILE).
_NOT_IN_OUTPUT = re.compile(r"[#<>$|]")
_SURROGATE = re.compile("[\ud800-\udfff]")  # a file name byte that is not UTF-8


def _unsafe_for_build(text: str, output: bool = False) -> str | None:
    char = control_character(text)
    if char is not None:
        return f"holds the control character {char!r}, which would end a line of build.ninja"
    found = _SURROGATE.search(text)
    if found is not None:
        return f"is not UTF-8 (byte \\x{ord(found.group()) & 0xFF:02x}), which CMake cannot carry"
    found = _CMAKE_SYNTAX.search(text)
    if found is not None:
        return f"holds {found.group()!r}, which CMake reads as list or expression syntax"
    found = _NOT_IN_OUTPUT.search(text) if output else None
    if found is not None:
        return f"holds {found.group()!r}, which CMake cannot name a build output with"
    return None


def build_library(config: TreeConfig, root: Path, entries: Sequence[str]) -> str:
    """The library a build of the tree at ``root`` writes (``[build] library``, else the folder's
    name), once every value of the tree that reaches CMake, build.ninja or a command line has
    been checked: no control character (a newline would add lines to build.ninja) and no CMake
    list syntax (``;`` would cut one flag in two). ConfigError names the key or the file."""
    where = f"{config.path}: " if config.path else ""
    values: list[tuple[str, Sequence[str]]] = [
        ("source folder", [str(root)]),
        ("include folder (-I or [kernels] include-dirs)", [str(d) for d in config.include_dirs]),
        ("define (-D or [kernels] defines)", config.defines),
        ("[build] flags", config.flags),
        *((f"[build.preambles] {f}", [str(h) for h in hs]) for f, hs in config.preambles.items()),
    ]
    for key, items in values:
        for item in items:
            problem = _unsafe_for_build(item)
            if problem is not None:
                raise ConfigError(f"{where}{key} {item!r} {problem}; a build cannot carry it")
    for entry in entries:
        problem = _unsafe_for_build(entry, output=True)
        if problem is not None:
            raise ConfigError(
                f"entry file {entry!r} {problem}; rename it, or --exclude it to build the others"
            )
    if config.library is not None:
        return config.library
    problem = library_problem(root.name)
    if problem is not None:
        raise ConfigError(
            f"{root}: the folder's name {root.name!r} would name the library, and "
            f"{problem}; set [build] library in {CONFIG_FILE}"
        )
    return root.name
