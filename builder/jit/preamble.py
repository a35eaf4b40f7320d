"""Preamble inlining: one self-contained kernel source made from a header and its quoted includes.

The run-time Metal compiler cannot see our source tree, so a JIT unit's source must carry every
project header it needs. MLX gets this text by running the Metal compiler's preprocessor, which
ties generation to macOS and expands macros away. Here the work is purely textual, in Python:

- A quoted include (``#include "common/types.h"``) is replaced by the included file's text, found
  next to the including file first, then in the ``-I`` directories (the compiler's order). Each
  file is inlined once per preamble (the first time it is included), which is what ``#pragma
  once`` would have done; a ``#pragma once`` line itself becomes an empty line (it would warn in
  a main file).
- Angle includes (``#include <metal_stdlib>``) stay as they are, for the run-time compiler.
- A quoted include must resolve inside the ``-I`` directories or the folder of a header given
  by the caller (real paths: ``..`` and symlinks resolved). A kernel tree may come from anyone
  (a pull request); ``#include "../../../../etc/passwd"`` must not put a file of the machine
  into a shipped source. ``allow_outside_includes=True`` lifts the rule for trees that need it;
  :func:`confine` is the same check for other callers (configured preamble headers).
- Directives inside block comments are not directives; ``#if`` around an include is *not*
  evaluated (the include is inlined in place, inside the same conditional). Macro includes
  (``#include SOME_MACRO``) are left for the run-time compiler.

With ``strip=True`` comments and trailing blanks are left out of the kept text (every newline
stays; see ``builder.jit.literals``).

Nothing else of the text is edited: files are read as bytes and decoded as UTF-8, line ends
are kept as written (a file's last line gets the newline it may lack), and ``#line`` paths are
C string literals (``builder.jit.literals.cxx_string``), whatever bytes the file name holds.

The output is a list of :class:`Fragment`: the runs of a file's lines between two quoted
includes, each starting with a ``#line N "path"`` marker (path relative to the include
directory it was found in), so compiler diagnostics name the real file and line. A fragment's
text depends only on its file, not on which preamble it is part of; that is what lets the host
library store a header shared by several families once (see ``builder.jit.writer``).
"""

from __future__ import annotations

import os
import re
from collections.abc import Iterable, Sequence
from dataclasses import dataclass, field
from functools import lru_cache
from pathlib import Path

from builder.errors import UsageError
from builder.files.reading import UnreadableFile, read_source
from builder.jit.literals import cxx_string, directives, strip_comments
from builder.kernels.confinement import inside, real_roots
from builder.kernels.definitions import LineStarts
from builder.settings.text_rules import control_character

__all__ = [
    "Fragment",
    "IncludeError",
    "OutsideError",
    "Preamble",
    "anchor_line_markers",
    "confine",
    "define_lines",
    "inline_preamble",
    "inlined_files",
    "quoted_includes",
]

_DIRECTIVE = LineStarts(r'[ \t]*#[ \t]*(?:include[ \t]*"([^"\n]+)"|pragma[ \t]+once\b)')
"""A line that quote-includes a file (its name: group 1) or says ``#pragma once``."""
_IDENT = re.compile(r"[A-Za-z_][A-Za-z0-9_]*")
_LONE_CR = re.compile(r"\r(?!\n)")

PathArg = str | os.PathLike[str]


class IncludeError(UsageError):
    """A quoted include cannot be resolved or read (exit code 2: the kernel tree is unusable)."""


class OutsideError(IncludeError):
    """A file resolves outside the folders it must stay in (exit code 2)."""


def confine(path: PathArg, roots: Iterable[PathArg]) -> Path:
    """The real path of ``path`` (``..`` and symlinks resolved) when it lies inside one of
    ``roots`` (compared as real paths too); ``OutsideError`` naming the path, where it resolves
    and the roots otherwise. The inliner applies this rule to every quoted include."""
    real = Path(os.path.realpath(path))
    folders = real_roots(roots)
    if not inside(real, folders):
        shown = ", ".join(str(f) for f in folders) or "none given"
        raise OutsideError(f"{os.fspath(path)} resolves to {real}, outside {shown}")
    return real


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
    body: str  # its lines, each ending in "\n"


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
    try:  # bytes, so line ends stay as written (no newline translation)
        text = read_source(real_path).decode("utf-8")
    except UnreadableFile as exc:
        raise IncludeError(f"{real_path}: cannot read: {exc.why}") from None
    except UnicodeDecodeError as exc:
        raise IncludeError(f"{real_path}: cannot read: {exc}") from None
    lone = _LONE_CR.search(text)
    if lone:  # lines are split at LF: the compiler would count lines the inliner does not see
        at = text.count("\n", 0, lone.start()) + 1
        raise IncludeError(
            f"{real_path}:{at}: carriage return without a line feed (classic Mac OS line "
            "end); convert the file to LF or CRLF line ends"
        )
    # Directives are found in the original text; the kept text may have its comments removed
    # (same line count, so line numbers map one to one).
    original = text.split("\n")
    lines = strip_comments(text).split("\n") if strip else original
    if original and original[-1] == "":
        original.pop()
        lines = lines[: len(original)]
    items: list[_Include | _Run] = []
    run_start = 1

    def add_run(stop: int) -> None:  # the lines from run_start up to line ``stop``, excluded
        body = "\n".join(lines[run_start - 1 : stop - 1]) + "\n"
        if not body.isspace():
            items.append(_Run(run_start, body))

    for number, match in directives(text, _DIRECTIVE):
        if match.group(1) is None:  # #pragma once: the line stays, blank
            lines[number - 1] = ""
            continue
        add_run(number)
        items.append(_Include(match.group(1), number))
        run_start = number + 1
    add_run(len(original) + 1)
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


def _outside(shown: object, line: int, name: str, target: Path, roots: Sequence[Path]) -> str:
    folders = ", ".join(dict.fromkeys(str(r) for r in roots))
    return (
        f'{shown}:{line}: quoted include "{name}" resolves to {target}, outside the include '
        f"folders ({folders}); allow with --allow-outside-includes (allow_outside_includes=True)"
    )


def quoted_includes(
    path: Path, include_dirs: Sequence[Path], *, allow_outside_includes: bool = False
) -> list[Path]:
    """The files ``path`` itself quote-includes (not their includes), resolved as the compiler
    does: beside ``path`` first, then in ``include_dirs``; real paths, in order, each once.

    Each must lie inside ``include_dirs`` or ``path``'s folder (``OutsideError`` otherwise)
    unless ``allow_outside_includes``."""
    real = Path(os.path.realpath(path))
    dirs = [Path(os.path.realpath(d)) for d in include_dirs]
    roots = [*dirs, real.parent]
    found: dict[Path, None] = {}
    for item in _parse(str(real), False):
        if isinstance(item, _Include):
            target = _resolve(item.name, real, dirs)
            if target is None:
                raise IncludeError(f'{path}:{item.line}: quoted include "{item.name}" not found')
            if not allow_outside_includes and not inside(target, roots):
                raise OutsideError(_outside(path, item.line, item.name, target, roots))
            found.setdefault(target)
    return list(found)


def inlined_files(roots: Iterable[Path], include_dirs: Sequence[Path]) -> set[Path]:
    """Real paths of every file inlining ``roots`` reads: each root and, transitively, its
    quoted includes (``#if`` not evaluated, as the inliner does)."""
    seen: set[Path] = set()
    todo = [Path(os.path.realpath(r)) for r in roots]
    while todo:
        path = todo.pop()
        if path in seen:
            continue
        seen.add(path)
        todo.extend(quoted_includes(path, include_dirs))
    return seen


def define_lines(defines: Iterable[str]) -> str:
    """``NAME=VALUE`` / ``NAME`` (= 1, as with ``-D``) as ``#define`` lines. UsageError for a
    name that is no macro name, and for a control character anywhere: a newline would end the
    ``#define`` and start a line of its own in every preamble (``X=1\\n#include "/etc/passwd"``),
    as a tree's ``defines`` already refuse (``builder.kernels.tree_config``)."""
    out = []
    for item in defines:
        name, sep, value = item.partition("=")
        char = control_character(item)
        if char is not None:
            raise UsageError(
                f"preamble define {item!r} holds the control character {char!r}; a #define is "
                "one line"
            )
        if not _IDENT.fullmatch(name):
            raise UsageError(f"preamble define {item!r}: {name!r} is not a macro name")
        out.append(f"#define {name} {value if sep else '1'}".rstrip() + "\n")
    return "".join(out)


def inline_preamble(
    roots: Sequence[str | os.PathLike[str]],
    include_dirs: Sequence[str | os.PathLike[str]] = (),
    defines: Sequence[str] = (),
    *,
    strip: bool = False,
    allow_outside_includes: bool = False,
) -> Preamble:
    """Inline ``roots`` (in order) and everything they quote-include, each file once.

    ``strip`` removes comments and trailing blanks from the embedded text (line structure kept,
    so ``#line`` markers stay exact).

    Raises IncludeError naming the including file and line for a quoted include that is found
    neither beside the including file nor in ``include_dirs``, and OutsideError naming it and
    the resolved path for one that resolves outside ``include_dirs`` and the folders of
    ``roots`` (unless ``allow_outside_includes``).
    """
    dirs = [Path(os.path.realpath(d)) for d in include_dirs]
    allowed = [*dirs, *(Path(os.path.realpath(r)).parent for r in roots)]
    fragments: list[Fragment] = []
    if defines:
        fragments.append(Fragment("", 0, define_lines(defines)))
    seen: dict[Path, str] = {}
    files: list[Path] = []

    def visit(real: Path, shown: Path | str) -> None:
        display = seen[real]
        for item in _parse(str(real), strip):
            if isinstance(item, _Run):
                marker = f"#line {item.first_line} {cxx_string(display)}\n"
                fragments.append(Fragment(display, item.first_line, marker + item.body))
                continue
            target = _resolve(item.name, real, dirs)
            if target is None:
                searched = ", ".join(dict.fromkeys(str(d) for d in (real.parent, *dirs)))
                raise IncludeError(
                    f'{shown}:{item.line}: quoted include "{item.name}" not found '
                    f"(searched {searched})"
                )
            if not allow_outside_includes and not inside(target, allowed):
                raise OutsideError(_outside(shown, item.line, item.name, target, allowed))
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


_MARKER = re.compile(r'^#line (\d+) "((?:[^"\\/]|\\.)(?:[^"\\]|\\.)*)"$', re.MULTILINE)


def anchor_line_markers(text: str, source_dir: Path) -> str:
    """``#line N "rel/path"`` -> ``#line N "<source_dir>/rel/path"`` (absolute ones unchanged).

    The path in a marker is a C string literal (escapes included); the folder is written as one
    too and the two literals' contents joined, so escaped names stay exactly what they were."""
    root = cxx_string(Path(source_dir).resolve().as_posix() + "/")[:-1]  # without its closing "
    return _MARKER.sub(lambda m: f'#line {m.group(1)} {root}{m.group(2)}"', text)
