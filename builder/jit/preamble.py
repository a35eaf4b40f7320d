"""Preamble inlining: one self-contained kernel source made from a header and its quoted includes.

The run-time Metal compiler cannot see our source tree, so a JIT family's source must carry every
project header it needs. MLX gets this text by running the Metal compiler's preprocessor, which
ties generation to macOS and expands macros away. Here the work is purely textual, in Python:

- A quoted include (``#include "common/types.h"``) is replaced by the included file's text, found
  next to the including file first, then in the ``-I`` directories (the compiler's order). Each
  file is inlined once per preamble (the first time it is included), which is what ``#pragma
  once`` would have done; a ``#pragma once`` line itself becomes an empty line (it would warn in
  a main file).
- Angle includes (``#include <metal_stdlib>``) stay as they are, for the run-time compiler.
- Directives inside block comments are not directives; ``#if`` around an include is *not*
  evaluated (the include is inlined in place, inside the same conditional). Macro includes
  (``#include SOME_MACRO``) are left for the run-time compiler.

With ``strip=True`` comments and trailing blanks are left out of the kept text (every newline
stays; see ``builder.jit.lexing``).

The output is a list of :class:`Fragment`: the runs of a file's lines between two quoted
includes, each starting with a ``#line N "path"`` marker (path relative to the include
directory it was found in), so compiler diagnostics name the real file and line. A fragment's
text depends only on its file, not on which preamble it is part of; that is what lets the host
library store a header shared by several families once (see ``builder.jit.codegen``).
"""

from __future__ import annotations

import os
import re
from collections.abc import Iterable, Sequence
from dataclasses import dataclass, field
from functools import lru_cache
from pathlib import Path

from builder.errors import UsageError
from builder.jit.lexing import directive_lines, strip_comments

__all__ = [
    "Fragment",
    "IncludeError",
    "Preamble",
    "define_lines",
    "inline_preamble",
    "quoted_includes",
]

_QUOTED = re.compile(r'^[ \t]*#[ \t]*include[ \t]*"([^"]+)"')
_PRAGMA_ONCE = re.compile(r"^[ \t]*#[ \t]*pragma[ \t]+once\b")
_IDENT = re.compile(r"[A-Za-z_][A-Za-z0-9_]*")


class IncludeError(UsageError):
    """A quoted include cannot be resolved or read (exit code 2: the kernel tree is unusable)."""


@dataclass(frozen=True)
class Fragment:
    """A run of one file's lines, with the ``#line`` marker that places it.

    ``path`` is the display path used in the marker ("" for command-line defines), ``key`` a
    stable identity for sharing (display path and first line).
    """

    path: str
    first_line: int
    text: str  # complete text, marker included, every line ending in "\n"

    @property
    def key(self) -> str:
        return f"{self.path}:{self.first_line}"


@dataclass(frozen=True)
class Preamble:
    """The inlined source for one or more root headers."""

    fragments: tuple[Fragment, ...]
    headers: tuple[str, ...]  # display paths, in inclusion order (first inclusion), roots first
    files: tuple[Path, ...] = field(default=())  # every file read (for depfiles), same order

    @property
    def text(self) -> str:
        return "".join(f.text for f in self.fragments)


@dataclass(frozen=True)
class _Include:
    name: str
    line: int


@dataclass(frozen=True)
class _Run:
    first_line: int
    lines: tuple[str, ...]


def _parse(real_path: str, strip: bool) -> tuple[_Include | _Run, ...]:
    """A file as runs of lines and quoted includes (cached by path, size and mtime: headers
    are shared by families)."""
    try:
        stat = os.stat(real_path)
    except OSError as exc:
        raise IncludeError(f"{real_path}: cannot read: {exc}") from None
    return _parse_file(real_path, stat.st_size, stat.st_mtime_ns, strip)


@lru_cache(maxsize=256)
def _parse_file(
    real_path: str, size: int, mtime_ns: int, strip: bool
) -> tuple[_Include | _Run, ...]:
    try:
        text = Path(real_path).read_text(encoding="utf-8")
    except (OSError, UnicodeDecodeError) as exc:
        raise IncludeError(f"{real_path}: cannot read: {exc}") from None
    # Directives are found in the original text; the kept text may have its comments removed
    # (same line count, so line numbers map one to one).
    original = text.split("\n")
    lines = strip_comments(text).split("\n") if strip else original
    if original and original[-1] == "":
        original.pop()
        lines = lines[: len(original)]
    free = directive_lines(text)
    items: list[_Include | _Run] = []
    run: list[str] = []
    run_start = 1
    for number, line in enumerate(lines, start=1):
        source_line = original[number - 1]
        match = _QUOTED.match(source_line) if free[number - 1] else None
        if match:
            if any(s.strip() for s in run):
                items.append(_Run(run_start, tuple(run)))
            items.append(_Include(match.group(1), number))
            run, run_start = [], number + 1
            continue
        if free[number - 1] and _PRAGMA_ONCE.match(source_line):
            line = ""
        run.append(line)
    if any(s.strip() for s in run):
        items.append(_Run(run_start, tuple(run)))
    return tuple(items)


def _display(real: Path, include_dirs: Sequence[Path]) -> str:
    """Path relative to the first include directory that holds the file, POSIX separators."""
    for directory in include_dirs:
        try:
            return real.relative_to(directory).as_posix()
        except ValueError:
            continue
    try:
        return real.relative_to(Path.cwd().resolve()).as_posix()
    except ValueError:
        return real.as_posix()


def _resolve(name: str, including: Path, include_dirs: Sequence[Path]) -> Path | None:
    for directory in (including.parent, *include_dirs):
        candidate = directory / name
        if candidate.is_file():
            return Path(os.path.realpath(candidate))
    return None


def quoted_includes(path: Path, include_dirs: Sequence[Path]) -> list[Path]:
    """The files ``path`` itself quote-includes (not their includes), resolved as the compiler
    does: beside ``path`` first, then in ``include_dirs``; real paths, in order, each once."""
    real = Path(os.path.realpath(path))
    dirs = [Path(os.path.realpath(d)) for d in include_dirs]
    found: dict[Path, None] = {}
    for item in _parse(str(real), False):
        if isinstance(item, _Include):
            target = _resolve(item.name, real, dirs)
            if target is None:
                raise IncludeError(f'{path}:{item.line}: quoted include "{item.name}" not found')
            found.setdefault(target)
    return list(found)


def define_lines(defines: Iterable[str]) -> str:
    """``NAME=VALUE`` / ``NAME`` (= 1, as with ``-D``) as ``#define`` lines."""
    out = []
    for item in defines:
        name, sep, value = item.partition("=")
        if not _IDENT.fullmatch(name):
            raise UsageError(f"-D {item!r}: {name!r} is not a macro name")
        out.append(f"#define {name} {value if sep else '1'}".rstrip() + "\n")
    return "".join(out)


def inline_preamble(
    roots: Sequence[str | os.PathLike[str]],
    include_dirs: Sequence[str | os.PathLike[str]] = (),
    defines: Sequence[str] = (),
    *,
    strip: bool = False,
) -> Preamble:
    """Inline ``roots`` (in order) and everything they quote-include, each file once.

    ``strip`` removes comments and trailing blanks from the embedded text (line structure kept,
    so ``#line`` markers stay exact).

    Raises IncludeError naming the including file and line for a quoted include that is found
    neither beside the including file nor in ``include_dirs``.
    """
    dirs = [Path(os.path.realpath(d)) for d in include_dirs]
    fragments: list[Fragment] = []
    if defines:
        fragments.append(Fragment("", 0, define_lines(defines)))
    seen: dict[Path, str] = {}
    files: list[Path] = []

    def visit(real: Path, shown: Path | str) -> None:
        display = seen[real]
        for item in _parse(str(real), strip):
            if isinstance(item, _Run):
                body = "".join(line + "\n" for line in item.lines)
                marker = f'#line {item.first_line} "{display}"\n'
                fragments.append(Fragment(display, item.first_line, marker + body))
                continue
            target = _resolve(item.name, real, dirs)
            if target is None:
                searched = ", ".join(dict.fromkeys(str(d) for d in (real.parent, *dirs)))
                raise IncludeError(
                    f'{shown}:{item.line}: quoted include "{item.name}" not found '
                    f"(searched {searched})"
                )
            if target not in seen:
                seen[target] = _display(target, dirs)
                files.append(target)
                visit(target, target)

    for root in roots:
        path = Path(root)
        if not path.is_file():
            raise IncludeError(f"{root}: header not found")
        real = Path(os.path.realpath(path))
        if real in seen:
            continue
        seen[real] = _display(real, dirs)
        files.append(real)
        visit(real, path)
    return Preamble(tuple(fragments), tuple(seen.values()), tuple(files))
