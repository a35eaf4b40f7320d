"""Which functions of a library each AOT/JIT split of its kernel tree keeps (``variants --from``).

A variant is a set of JIT entry files; every other entry file stays AOT. Its metallib is an exact
subset of the full library Apple's compiler produced: the functions of its AOT entry files plus
the functions no entry file produces (they stay AOT, counted apart as "not in the tree"). So the
split needs no compiler, only discovery's name -> entry file map and the library's function list.

Some entry files stay AOT in every split (:func:`held_aot`): the ones ``[build] aot-only`` names.
``--jit`` naming one keeps it AOT and says so; the ``--budget`` planner never moves one. An entry
file that writes its own kernel templates (MLX's ``arg_reduce.metal``, ggml's
``ggml-metal.metal``) is not held: it goes JIT embedded whole (``KernelTree.embeddings``).

Pure functions (names and numbers in, indices out), so the planner and the tests can ask "what
would this split keep?" without writing anything.
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence, Sized
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING

from builder.errors import UsageError
from builder.kernels.discovery import path_matches
from builder.kernels.tree_files import entry_files, unmatched_glob

if TYPE_CHECKING:
    from builder.kernels.discovery import KernelTree

__all__ = [
    "AOT_ONLY",
    "EntryShare",
    "LibraryIndex",
    "VariantSpec",
    "held_aot",
    "index_library",
    "requested_variants",
]


AOT_ONLY = "named by [build] aot-only in metallib.toml"


def held_aot(tree: KernelTree) -> dict[str, str]:
    """Entry files that stay AOT in every split, in tree order, with the reason (shown in the
    tables and JSON of ``variants`` and in ``build``'s plan). An ``aot-only`` glob that matches
    no entry file is a UsageError naming it: the file it meant would silently go JIT."""
    if unmatched_glob(tree.config.aot_only, tree.sources) is not None:
        # one that names only excluded files keeps nothing AOT, and is no typo
        every = entry_files(tree.root) if tree.kind == "discovered" else tree.sources
        missing = unmatched_glob(tree.config.aot_only, every)
        if missing is not None:
            raise UsageError(
                f"{tree.config.path}: [build] aot-only {missing!r} matches no entry file of "
                f"{tree.root} ({_counted(every)})"
            )
    return {
        source: AOT_ONLY
        for source in tree.sources
        if tree.config.aot_only and path_matches(source, tree.config.aot_only)
    }


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
    held: str | None
    """Why the file stays AOT in every split (:func:`held_aot`), or None: it may go JIT."""


@dataclass(frozen=True)
class LibraryIndex:
    """A library's functions divided by entry file of a kernel tree."""

    entries: dict[str, EntryShare]
    """Every entry file of the tree, in tree order."""
    other: tuple[int, ...]
    """Functions no entry file produces: they stay AOT in every variant."""
    function_count: int
    missing: int
    """Kernels the tree lists that the library does not have (another release, other -D)."""
    root: Path | None = None
    """The kernel tree the entry files are in (named when a glob matches none of them)."""

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
    held = held_aot(tree)
    entries = {
        source: EntryShare(
            source,
            tuple(indices),
            sum(function_bytes[i] for i in indices),
            len(discovered.get(source, ())),
            held.get(source),
        )
        for source, indices in members.items()
    }
    missing = sum(1 for name in source_of if name not in present)
    return LibraryIndex(entries, tuple(other), len(names), missing, tree.root)


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
            raise UsageError(
                f"{option} {glob!r} matches no entry file of {index.root or 'the tree'} "
                f"({_counted(index.entries)}, after exclusions)"
            )
        found |= hits
    return found


def _counted(entries: Sized) -> str:
    return f"{len(entries):,} entry file{'s' if len(entries) != 1 else ''}"


def _movable(index: LibraryIndex, sources: Iterable[str]) -> tuple[str, ...]:
    chosen = set(sources)
    return tuple(s for s, e in index.entries.items() if s in chosen and not e.held)


def _kept_note(index: LibraryIndex, asked: set[str]) -> str:
    held = [s for s in index.entries if s in asked and index.entries[s].held]
    verb = "stays" if len(held) == 1 else "stay"
    return f" ({', '.join(held)} {verb} AOT)" if held else ""


def requested_variants(
    index: LibraryIndex, aot: Sequence[str] = (), jit: Sequence[str] = ()
) -> list[VariantSpec]:
    """``all-aot``, the JIT mode of metallib.toml when it names aot-only files, then one variant
    per ``--aot`` value (those AOT, every other one JIT) and per ``--jit`` value (those JIT).
    Entry files :func:`held_aot` names stay AOT in every variant."""
    specs = [VariantSpec("all-aot", "every entry file AOT: the input library as it is", ())]
    if any(e.held == AOT_ONLY for e in index.entries.values()):
        held = sum(e.held == AOT_ONLY for e in index.entries.values())
        others = _kept_note(index, {s for s, e in index.entries.items() if e.held != AOT_ONLY})
        specs.append(
            VariantSpec(
                "jit-mode",
                f"metallib.toml's JIT mode: {held} aot-only entry file(s) AOT, every "
                f"other one JIT{others}",
                _movable(index, index.entries),
            )
        )
    for number, value in enumerate(aot, start=1):
        named = _matching(index, "--aot", value)
        others = _kept_note(index, set(index.entries) - named)
        specs.append(
            VariantSpec(
                f"aot-{number}",
                f"--aot {value}: {len(named)} entry file(s) AOT, every other one JIT{others}",
                _movable(index, set(index.entries) - named),
            )
        )
    for number, value in enumerate(jit, start=1):
        named = _matching(index, "--jit", value)
        moved = _movable(index, named)
        specs.append(
            VariantSpec(
                f"jit-{number}",
                f"--jit {value}: {len(moved)} entry file(s) "
                f"JIT{_kept_note(index, named)}, the rest AOT",
                moved,
            )
        )
    return specs
