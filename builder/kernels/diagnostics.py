"""Reading g++/clang output and blaming the right line of the kernel library.

The compiler reports an error where it detects it: often inside the shim (a kernel called a Metal
function wrongly) or in a generated instantiation source (the catalog names a template that does
not exist). Neither is where the mistake is. This module walks each error's instantiation chain
(g++ prints it before the error, clang after it as notes) and attributes the error to the
innermost location in a real kernel source; errors in generated sources are attributed to the
instantiation (its host name) that the offending line declares. Identical locations reached from
many instantiations are reported once, with the count.

Which folder, given with ``-I``, would resolve a quoted include that discovery could not find.

An MLX-style tree includes its headers by a path from a root above it
(``#include "mlx/backend/metal/kernels/utils.h"`` from ``mlx/backend/metal/kernels``): the
preprocessor's "No such file or directory" does not say that ``-I`` of that root is missing.

The hint only ever points at files the build may read: inside the tree or inside a folder
already given with ``-I``. A header that merely sits next to the tree (another project's, in a
sibling folder) is never proposed. The search is bounded and reads folder listings only: first
every folder above the tree (one ``stat`` each), kept only when the path found leads back into
the tree or a given folder (the include root of an MLX checkout); then the sub-folders of the
tree and of the given folders, breadth first, at most ``MAX_FOLDERS`` folders, hidden folders and
symlinked ones not entered.
"""

from __future__ import annotations

import os
import re
from collections import deque
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, replace
from pathlib import Path, PurePosixPath
from typing import TYPE_CHECKING

from builder.files.dataclass_json import dump, field

if TYPE_CHECKING:
    from builder.kernels.bounded_run import Compiler

__all__ = [
    "CHECK_SCHEMA",
    "MAX_FOLDERS",
    "CheckResult",
    "ChunkResult",
    "Diagnostic",
    "Locator",
    "missing_include",
    "parse_compiler_output",
    "resolving_folder",
    "shim_dir_for",
    "with_hint",
]


_LOCATED = re.compile(r"^(?P<file>[^\s:][^:]*):(?P<line>\d+):(?:(?P<col>\d+):)?\s*(?P<rest>.*)$")
_SEVERITY = re.compile(r"^(?P<sev>fatal error|error|warning|note): (?P<msg>.*)$")


@dataclass
class Diagnostic:
    """One reported problem, attributed to a kernel source line (or to the catalog)."""

    severity: str  # "error" or "warning"
    path: str  # display path of the blamed file
    line: int
    column: int
    message: str
    where: str = "source"  # "source" (kernel file), "catalog" (generated line), "shim", "other"
    host_names: list[str] = field(default_factory=list, key="instantiations")
    """The instantiations that hit it (``--format json``: ``instantiations``, after ``where``)."""

    def format(self) -> str:
        """``path:line:col: severity: message`` plus which instantiations hit it."""
        text = f"{self.path}:{self.line}:{self.column}: {self.severity}: {self.message}"
        if self.host_names:
            n = len(self.host_names)
            shown = ", ".join(self.host_names[:3]) + (", ..." if n > 3 else "")
            text += f" [in {n} instantiation{'s' if n != 1 else ''}: {shown}]"
        return text


@dataclass(frozen=True)
class Locator:
    """Classifies compiler paths: kernel sources (shown under ``display_root``), the shim, and
    generated units, whose lines map to host names and those to catalog lines."""

    source_dir: Path
    display_root: str
    shim_dir: Path
    generated: Mapping[str, Mapping[int, str]]  # generated file (real path) -> {line: host name}
    catalog_lines: Mapping[str, int] = field(default_factory=dict)  # host name -> catalog line

    def kind(self, path: str) -> str:
        """The path's role: generated, shim, source (a kernel file) or other."""
        real = Path(os.path.realpath(path))
        if str(real) in self.generated:
            return "generated"
        if real.is_relative_to(self.shim_dir.resolve()):
            return "shim"
        if real.is_relative_to(self.source_dir.resolve()):
            return "source"
        return "other"

    def display(self, path: str) -> str:
        """Kernel files as ``<display_root>/<relative path>``; anything else unchanged."""
        real = Path(os.path.realpath(path))
        root = self.source_dir.resolve()
        if real.is_relative_to(root):
            return str(Path(self.display_root) / real.relative_to(root))
        return path

    def host_name(self, path: str, line: int) -> str | None:
        """The instantiation declared at ``line`` of a generated unit, if that is one."""
        table = self.generated.get(os.path.realpath(path))
        return table.get(line) if table else None


@dataclass
class _Raw:
    file: str
    line: int
    col: int
    severity: str
    message: str
    chain: list[tuple[str, int, int]]
    macro_depth: int = 0  # >0: the error sits in a macro definition, expanded at chain[:depth]


_CONTEXT = re.compile(
    r"^\S.*: (In instantiation of|In function|In member function|In constructor|"
    r"In static member function|In lambda function|At global scope)"
)


def _split(lines: Iterable[str]) -> list[_Raw]:
    """Group output into errors/warnings, each with the chain of locations that led to it.

    g++ prints an instantiation context ("In instantiation of ...", then "required from" lines)
    once and then every diagnostic raised in it, so a chain stays current until a new context
    starts. clang prints the chain after each error as "requested here" notes.
    """
    out: list[_Raw] = []
    chain: list[tuple[str, int, int]] = []
    chain_used = False  # a diagnostic consumed the chain; the next "required from" starts anew
    last: _Raw | None = None
    for text in lines:
        if text.startswith("In file included from"):
            continue  # include stacks locate headers, not instantiations
        match = _LOCATED.match(text)
        if match is None:
            if _CONTEXT.match(text):
                chain, chain_used = [], False
            continue
        loc = (match["file"], int(match["line"]), int(match["col"] or 0))
        sev = _SEVERITY.match(match["rest"])
        if sev is None:  # "required from ...", "in 'constexpr' expansion of ..."
            if chain_used:
                chain, chain_used = [], False
            chain.append(loc)
            continue
        severity = "error" if sev["sev"] == "fatal error" else sev["sev"]
        if severity == "note":
            if last is not None and "in expansion of macro" in sev["msg"]:
                last.chain.insert(last.macro_depth, loc)
                last.macro_depth += 1
            elif last is not None and (
                "requested here" in sev["msg"] or "in instantiation" in sev["msg"]
            ):
                last.chain.append(loc)
            continue
        last = _Raw(loc[0], loc[1], loc[2], severity, sev["msg"], list(chain))
        chain_used = True
        out.append(last)
    return out


def parse_compiler_output(text: str, locator: Locator) -> list[Diagnostic]:
    """Attributed, de-duplicated diagnostics from one compiler run, in output order."""
    merged: dict[tuple[str, int, int, str, str], Diagnostic] = {}
    for raw in _split(text.splitlines()):
        candidates = [(raw.file, raw.line, raw.col), *raw.chain]
        host = next((h for f, ln, _ in candidates if (h := locator.host_name(f, ln))), None)
        if raw.macro_depth:  # blame where the macro was used, not its definition
            candidates = candidates[1:]
        blamed = next((c for c in candidates if locator.kind(c[0]) == "source"), None)
        message = raw.message
        if blamed is not None:
            where, (file, line, col) = "source", blamed
            path = locator.display(file)
        elif host is not None:
            # Nothing in the kernel sources is at fault: the catalog declared this instantiation.
            where, line, col = "catalog", locator.catalog_lines.get(host, 1), 1
            path = str(Path(locator.display_root) / "catalog.json")
        else:
            where = locator.kind(raw.file)
            file, line, col = raw.file, raw.line, raw.col
            path = locator.display(file)
        key = (path, line, col, raw.severity, message if where == "catalog" else "")
        diag = merged.get(key)
        if diag is None:
            diag = merged[key] = Diagnostic(raw.severity, path, line, col, message, where=where)
        if host is not None and host not in diag.host_names:
            diag.host_names.append(host)
    return list(merged.values())


MAX_FOLDERS = 2000
"""At most this many folders are listed in one search: a hint must not cost a slow disk scan."""

_MISSING = (
    re.compile(r"fatal error: (?P<path>[^:\n]+): No such file or directory"),  # GCC
    re.compile(r"fatal error: '(?P<path>[^'\n]+)' file not found"),  # Clang
)


def missing_include(message: str) -> str | None:
    """The include path a preprocessor diagnostic says it could not find, or None (not a
    missing include, or a path that leaves its folder: absolute or with ``..``)."""
    for pattern in _MISSING:
        found = pattern.search(message)
        if found:
            path = PurePosixPath(found["path"].strip())
            if path.is_absolute() or ".." in path.parts or not path.parts:
                return None
            return path.as_posix()
    return None


def resolving_folder(
    source_dir: Path, include: str, include_dirs: Sequence[Path] = ()
) -> Path | None:
    """The nearest folder ``D`` in which ``D/include`` is a file inside the tree or one of
    ``include_dirs``, or None when the bounded search finds none. The folders already searched
    by the preprocessor (the tree's root, ``include_dirs``) are never the answer."""
    tree = Path(os.path.abspath(source_dir))
    allowed = [tree, *(Path(os.path.abspath(d)) for d in include_dirs)]
    for above in tree.parents:
        found = above / include
        if found.is_file() and any(found.is_relative_to(root) for root in allowed):
            return above
    queue: deque[Path] = deque(allowed)
    seen: set[Path] = set()
    while queue and len(seen) < MAX_FOLDERS:
        folder = queue.popleft()
        if folder in seen:
            continue
        seen.add(folder)
        if folder not in allowed and (folder / include).is_file():
            return folder
        queue.extend(_subfolders(folder))
    return None


def _subfolders(folder: Path) -> list[Path]:
    try:
        with os.scandir(folder) as entries:
            return sorted(
                Path(entry.path)
                for entry in entries
                if not entry.name.startswith(".") and entry.is_dir(follow_symlinks=False)
            )
    except OSError:  # unreadable: nothing to suggest from there
        return []


def with_hint(message: str, source_dir: Path, include_dirs: Sequence[Path] = ()) -> str:
    """``message`` with ``; did you mean -I DIR?`` when it reports a missing quoted include and
    the search finds the folder that holds it (DIR relative to the working folder when under
    it, as the user would type it)."""
    include = missing_include(message)
    if include is None:
        return message
    folder = resolving_folder(source_dir, include, include_dirs)
    if folder is None:
        return message
    shown = os.path.relpath(folder)
    if shown.startswith(".."):
        shown = str(folder)
    return f"{message}; did you mean -I {shown}?"


def shim_dir_for(source_dir: Path) -> Path:
    """The tree's own shim when it has one, else the bundled shim."""
    own = source_dir / "shim"
    if (own / "metal_stdlib").is_file():
        return own
    from builder.resources import metal_src_dir

    return metal_src_dir() / "shim"


# -- results of a check (``builder.jit.check``) ----------------------------------------------
CHECK_SCHEMA = 2
"""2: ``chunks[]`` with ``chunk`` and ``unit`` (1 said ``units[]`` with ``unit`` and ``family``)."""


@dataclass
class ChunkResult:
    """The outcome of compiling one chunk."""

    chunk: str
    unit: str | None
    instantiations: int
    returncode: int
    seconds: float
    diagnostics: list[Diagnostic] = field(default_factory=list)

    @property
    def ok(self) -> bool:
        return self.returncode == 0 and not any(d.severity == "error" for d in self.diagnostics)


@dataclass
class CheckResult:
    """All chunks' outcomes plus totals; ``ok`` is the verdict."""

    compiler: Compiler
    source_dir: Path
    mode: str
    chunks: list[ChunkResult]
    seconds: float

    @property
    def diagnostics(self) -> list[Diagnostic]:
        """Diagnostics of all chunks, merged when several chunks hit the same line."""
        merged: dict[tuple[str, int, int, str, str], Diagnostic] = {}
        for chunk in self.chunks:
            for diag in chunk.diagnostics:
                key = (diag.path, diag.line, diag.column, diag.severity, diag.message)
                if key in merged:
                    seen = merged[key].host_names
                    seen.extend(h for h in diag.host_names if h not in seen)
                else:
                    merged[key] = replace(diag, host_names=list(diag.host_names))
        return list(merged.values())

    @property
    def errors(self) -> int:
        return sum(1 for d in self.diagnostics if d.severity == "error")

    @property
    def warnings(self) -> int:
        return sum(1 for d in self.diagnostics if d.severity == "warning")

    @property
    def instantiations(self) -> int:
        return sum(c.instantiations for c in self.chunks)

    @property
    def ok(self) -> bool:
        return all(c.ok for c in self.chunks)

    def to_json(self) -> dict[str, object]:
        """The machine-readable result (schema :data:`CHECK_SCHEMA`)."""
        return {
            "schema": CHECK_SCHEMA,
            "ok": self.ok,
            "compiler": self.compiler.version,
            "mode": self.mode,
            "source_dir": str(self.source_dir),
            "instantiations": self.instantiations,
            "errors": self.errors,
            "warnings": self.warnings,
            "seconds": round(self.seconds, 3),
            "chunks": [
                {
                    "chunk": c.chunk,
                    "unit": c.unit,
                    "instantiations": c.instantiations,
                    "ok": c.ok,
                    "seconds": round(c.seconds, 3),
                }
                for c in self.chunks
            ],
            "diagnostics": dump(self.diagnostics),
        }
