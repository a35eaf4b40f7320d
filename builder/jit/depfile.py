"""Make-syntax depfiles for generated sources: which files an output was made from.

Ninja (``deps = gcc``), CMake's ``add_custom_command(DEPFILE)`` and GNU Make all read the format
GCC writes with ``-MD``: one rule ``target: prerequisite...``, continued with ``\\``-newline.
Paths are escaped the way GCC escapes them, which is what those readers undo:

- a space or tab becomes ``\\ `` (backslashes right before it are doubled, so they stay literal);
- ``#`` becomes ``\\#`` (Make would start a comment);
- ``$`` becomes ``$$`` (Make would expand a variable; Ninja and CMake read ``$$`` as ``$``).

A newline cannot be written in a rule at all, so a path holding one is refused. A path's bytes
that are not UTF-8 are written as they are (the file names the same file for Make and Ninja). The
depfile is written atomically and only when its bytes change, like the output it describes: a build
tool that compares timestamps (Ninja's ``restat``) then sees no change after a regeneration that
changed nothing.
"""

from __future__ import annotations

import os
import re
import sys
from collections.abc import Iterable
from pathlib import Path

from builder.errors import UsageError
from builder.files.atomic import write_if_changed

__all__ = ["depfile_text", "escape_make_path", "own_modules", "write_depfile"]

_BLANK = re.compile(r"(\\*)([ \t])")


def escape_make_path(path: str | os.PathLike[str]) -> str:
    """``path`` as one word of a Make rule (GCC's ``-MD`` escaping)."""
    text = os.fspath(path)
    if "\n" in text or "\r" in text:
        raise UsageError(f"cannot name {text!r} in a depfile: it holds a line break")
    text = _BLANK.sub(lambda m: m.group(1) * 2 + "\\" + m.group(2), text)
    return text.replace("#", "\\#").replace("$", "$$")


def depfile_text(
    target: str | os.PathLike[str], prerequisites: Iterable[str | os.PathLike[str]]
) -> str:
    """One rule: ``target`` depends on ``prerequisites`` (in order, each once)."""
    unique = dict.fromkeys(os.fspath(p) for p in prerequisites)
    words = [escape_make_path(p) for p in unique]
    return f"{escape_make_path(target)}:" + "".join(f" \\\n  {w}" for w in words) + "\n"


def write_depfile(
    path: str | os.PathLike[str],
    target: str | os.PathLike[str],
    prerequisites: Iterable[str | os.PathLike[str]],
) -> bool:
    """Write the depfile at ``path`` (atomically, only on change); True when it was written."""
    text = depfile_text(target, prerequisites)
    return write_if_changed(path, text.encode("utf-8", "surrogateescape"))


def own_modules() -> list[Path]:
    """The files of this package's modules loaded in this process, sorted: what a generator or
    the planner ran, so what its output depends on besides its inputs. Read from the process,
    never a hand-kept list, so a module that shapes the output cannot be left out of it."""
    package = Path(__file__).resolve().parents[1]
    found = set()
    for module in list(sys.modules.values()):
        path = getattr(module, "__file__", None)
        if path and path.endswith(".py") and Path(path).resolve().is_relative_to(package):
            found.add(Path(path).resolve())
    return sorted(found)
