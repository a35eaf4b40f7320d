"""Which functions of a library each AOT/JIT split of its kernel tree keeps (``variants --from``).

A variant is a set of JIT entry files; every other entry file stays AOT. Its metallib is an exact
subset of the full library Apple's compiler produced: the functions of its AOT entry files plus
the functions no entry file produces (they stay AOT, counted apart as "not in the tree"). So the
split needs no compiler, only discovery's name -> entry file map and the library's function list.

Pure functions (names and numbers in, indices out), so the planner and the tests can ask "what
would this split keep?" without writing anything.
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING

from builder.errors import UsageError
from builder.kernels.discovery import path_matches

if TYPE_CHECKING:
    from builder.kernels.discovery import KernelTree

__all__ = [
    "EntryShare",
    "LibraryIndex",
    "VariantSpec",
    "index_library",
    "requested_variants",
]


@dataclass(frozen=True)
class EntryShare:
    """One entry file's part of the library."""

    source: str
    """Entry file relative to the tree root (``/`` separators)."""
    functions: tuple[int, ...]
    """Indices (ascending) of the library's functions this file produces."""
    bytes: int
    """Those functions' bytes in the input (all five pieces each): what making the file JIT
    removes from the metallib, up to a few bytes of reflection padding (exact sizes come from
    the writer's layout)."""
    discovered: int
    """Kernels discovery lists for this file (some may be absent from the library)."""
    aot_only: bool
    """Named by ``[build] aot-only`` in metallib.toml: never compiled at run time."""


@dataclass(frozen=True)
class LibraryIndex:
    """A library's functions split by entry file of a kernel tree."""

    entries: dict[str, EntryShare]
    """Every entry file of the tree, in tree order."""
    other: tuple[int, ...]
    """Functions no entry file produces: they stay AOT in every variant."""
    function_count: int
    missing: int
    """Kernels the tree lists that the library does not have (another release, other -D)."""

    def kept(self, jit: Iterable[str]) -> list[int]:
        """Ascending indices of the functions a variant with ``jit`` entry files keeps."""
        dropped: set[int] = set()
        for source in jit:
            dropped.update(self.entries[source].functions)
        if not dropped:
            return list(range(self.function_count))
        return [i for i in range(self.function_count) if i not in dropped]

    def kernels(self, sources: Iterable[str]) -> int:
        """How many of the library's functions ``sources`` produce."""
        return sum(len(self.entries[s].functions) for s in sources)

    def aot_sources(self, jit: Iterable[str]) -> tuple[str, ...]:
        chosen = set(jit)
        return tuple(s for s in self.entries if s not in chosen)


@dataclass(frozen=True)
class VariantSpec:
    """A split to write: its name (the output folder), what it is, and its JIT entry files."""

    name: str
    description: str
    jit: tuple[str, ...]
    """JIT entry files, in tree order."""


def index_library(
    names: Sequence[str], function_bytes: Sequence[int], tree: KernelTree
) -> LibraryIndex:
    """Attribute every function (``names[i]``, ``function_bytes[i]``) to its entry file."""
    source_of = tree.source_of()
    members: dict[str, list[int]] = {source: [] for source in tree.sources}
    other: list[int] = []
    for index, name in enumerate(names):
        source = source_of.get(name)
        if source is None:
            other.append(index)
        else:
            members.setdefault(source, []).append(index)
    discovered: dict[str, set[str]] = {}
    for record in tree.kernels:
        discovered.setdefault(record.source, set()).add(record.name)
    present = set(names)
    aot_only = tree.config.aot_only
    entries = {
        source: EntryShare(
            source, tuple(indices), sum(function_bytes[i] for i in indices),
            len(discovered.get(source, ())), bool(aot_only) and path_matches(source, aot_only),
        )
        for source, indices in members.items()
    }  # fmt: skip
    missing = sum(1 for name in source_of if name not in present)
    return LibraryIndex(entries, tuple(other), len(names), missing)


def _matching(index: LibraryIndex, option: str, value: str) -> set[str]:
    """The entry files one ``--aot``/``--jit`` value names (comma-separated globs); a glob that
    names no entry file is a typo (exit 2)."""
    from builder.kernels.catalog import split_names

    globs = split_names(value)
    if not globs:
        raise UsageError(f"{option} {value!r}: names no entry file glob")
    found: set[str] = set()
    for glob in globs:
        hits = {s for s in index.entries if path_matches(s, [glob])}
        if not hits:
            raise UsageError(f"{option} {glob!r} matches no entry file of the tree")
        found |= hits
    return found


def _movable(index: LibraryIndex, sources: Iterable[str]) -> tuple[str, ...]:
    chosen = set(sources)
    return tuple(s for s, e in index.entries.items() if s in chosen and not e.aot_only)


def _kept_note(index: LibraryIndex, asked: set[str]) -> str:
    held = sorted(s for s in asked if index.entries[s].aot_only)
    return f"; {len(held)} aot-only file(s) stay AOT" if held else ""


def requested_variants(
    index: LibraryIndex, aot: Sequence[str] = (), jit: Sequence[str] = ()
) -> list[VariantSpec]:
    """``all-aot``, the JIT mode of metallib.toml when it names aot-only files, then one variant
    per ``--aot`` value (those AOT, every other one JIT) and per ``--jit`` value (those JIT).
    Entry files marked aot-only stay AOT in every variant."""
    specs = [VariantSpec("all-aot", "every entry file AOT: the input library as it is", ())]
    if any(e.aot_only for e in index.entries.values()):
        held = sum(e.aot_only for e in index.entries.values())
        specs.append(VariantSpec(
            "jit-mode", f"metallib.toml's JIT mode: {held} aot-only entry file(s) AOT, every "
            "other one JIT", _movable(index, index.entries),
        ))  # fmt: skip
    for number, value in enumerate(aot, start=1):
        named = _matching(index, "--aot", value)
        specs.append(VariantSpec(
            f"aot-{number}", f"--aot {value}: {len(named)} entry file(s) AOT, every other one JIT",
            _movable(index, set(index.entries) - named),
        ))  # fmt: skip
    for number, value in enumerate(jit, start=1):
        named = _matching(index, "--jit", value)
        specs.append(VariantSpec(
            f"jit-{number}",
            f"--jit {value}: {len(named)} entry file(s) JIT{_kept_note(index, named)}, the rest AOT",
            _movable(index, named),
        ))  # fmt: skip
    return specs
