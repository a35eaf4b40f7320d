"""What a build of a kernel tree carries into CMake, build.ninja and command lines, checked.

Every value of a tree that reaches a build (the source folder, include folders, defines, flags,
preamble paths, entry-file names) is checked here before CMake sees it: no control character (a
newline would add lines to build.ninja), no CMake list or generator-expression syntax (``;``
would cut one flag in two), and for entry files nothing CMake cannot name a build output with.
:func:`build_library` runs the checks and names the library the build writes. Split from
``builder.kernels.tree_config``, which reads the settings; this module judges them for a build.
"""

from __future__ import annotations

import re
from collections.abc import Sequence
from pathlib import Path

from builder.kernels.tree_config import (
    CONFIG_FILE,
    ConfigError,
    TreeConfig,
    control_character,
    library_problem,
)

__all__ = ["build_library"]

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
