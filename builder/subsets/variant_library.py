"""The input library of ``variants --from``, divided by entry file of a kernel tree: which of its
functions each split keeps, the subsets written from it, and the measures a ceiling plans by.

A variant is a set of JIT entry files; every other entry file stays AOT. Its metallib is an exact
subset of the full library Apple's compiler produced: the functions of its AOT entry files plus
the functions no entry file produces (they stay AOT, counted apart as "not in the tree"). So the
split needs no compiler, only discovery's name -> entry file map and the library's function list.

Some entry files stay AOT in every split (:func:`held_aot`): the ones ``[build] aot-only`` names.
``--jit`` naming one keeps it AOT and says so; the ``--ceiling`` planner never moves one. An entry
file that writes its own kernel templates (MLX's ``arg_reduce.metal``, ggml's
``ggml-metal.metal``) is not held: it goes JIT embedded whole (``KernelTree.embeddings``).

:class:`VariantWriter` writes the subsets: exact sizes by layout, each subset through the
container writer. The input's modules are hashed once, beside the first write (``all-aot``, the
input as it is), and checked against their HASH tags before any other variant is written; a
mismatch names the functions and writes nothing more. ``measure`` attributes the written file and
checks that it holds exactly the planned functions.
"""

from __future__ import annotations

import tempfile
import zlib
from collections.abc import Callable, Iterable, Sequence, Sized
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING

from builder.errors import InternalError, UsageError
from builder.kernels.tree_files import entry_files, path_matches, unmatched_glob
from builder.metallib import Piece, layout, open_metallib, parts_from_library
from builder.subsets.coverage import ZLIB_LEVEL, jit_sources
from builder.subsets.split_costs import EmbedCosts

if TYPE_CHECKING:
    from builder.inputs.targets import Library
    from builder.kernels.kernel_tree import KernelTree
    from builder.metallib import LibraryParts, Metallib

__all__ = [
    "AOT_ONLY",
    "NOT_IN_TREE",
    "DownloadMeasure",
    "EntryShare",
    "LibraryIndex",
    "MetallibMeasure",
    "SourceBytes",
    "VariantWriter",
    "counted",
    "held_aot",
    "index_library",
    "library_stem",
    "remove_stale",
    "resolve_input",
]

AOT_ONLY = "named by [build] aot-only in metallib.toml"
NOT_IN_TREE = "[not in tree]"


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
                f"{tree.root} ({counted(every)})"
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


def counted(entries: Sized) -> str:
    return f"{len(entries):,} entry file{'s' if len(entries) != 1 else ''}"


def function_bytes(lib: Metallib) -> list[int]:
    """Each function's bytes in ``lib``, its five pieces."""
    table = lib.columns()
    return list(map(sum, zip(*(table.sizes(piece) for piece in Piece))))


class VariantWriter:
    """Writes the subsets of one open library: exact sizes by layout, outputs through the
    writer, the modules' SHA-256 checked once (beside the first write)."""

    def __init__(self, lib: Metallib, index: LibraryIndex) -> None:
        self.lib = lib
        self.index = index
        self.owner: list[str | None] = [None] * index.function_count
        for source, entry in index.entries.items():
            for i in entry.functions:
                self.owner[i] = source
        self._hashes_checked = False

    def _parts(self, kept: Sequence[int]) -> LibraryParts:
        return parts_from_library(
            self.lib, None if len(kept) == self.index.function_count else kept
        )

    def size_of(self, jit: frozenset[str]) -> int:
        """The exact file size of the metallib with ``jit`` JIT (0: it would keep nothing)."""
        kept = self.index.kept(jit)
        return layout(self._parts(kept)).file_size if kept else 0

    def write(self, kept: Sequence[int], path: Path) -> int:
        """The subset keeping ``kept`` written to ``path``; the first write hashes the input's
        modules beside the copy (``builder.subsets.slim.ModuleHashes``) and refuses a mismatch."""
        from builder.metallib.writer import atomic_output, check_written, write_to
        from builder.subsets.slim import ModuleHashes, describe_mismatches

        parts = self._parts(kept)
        with atomic_output(path) as out:
            hashes = None if self._hashes_checked else ModuleHashes(self.lib.columns(), self.lib)
            try:
                lay = write_to(parts, out)
                check_written(out, lay, path)
                bad = hashes.mismatches() if hashes is not None else []
            finally:
                if hashes is not None:
                    hashes.close()
            if bad:
                raise UsageError(
                    f"{self.lib.display_name}: {len(bad)} function(s) have a module whose SHA-256 "
                    f"does not match its HASH tag: {describe_mismatches(bad)}; {path} not written"
                )
            self._hashes_checked = True
        return lay.file_size

    def measure(
        self, path: Path, kept: Sequence[int], download: bool
    ) -> tuple[list[SourceBytes], int, int | None]:
        """Bytes per AOT entry file (tree order) and not-in-tree, the overhead, attributed in the
        written file, and (``download``) its modelled download; its functions must be exactly
        ``kept``."""
        from builder.size.attribution import attribute
        from builder.size.download import download_total

        with open_metallib(path) as written:
            attribution = attribute(written)
            downloaded = download_total(written, attribution) if download else None
        names = self.lib.columns().names
        if attribution.names != [names[i] for i in kept]:
            raise InternalError(
                "a written variant does not hold the planned functions", path=str(path)
            )
        totals: dict[str | None, list[int]] = {}
        for i, row in zip(kept, attribution.functions):
            slot = totals.setdefault(self.owner[i], [0, 0])
            slot[0] += 1
            slot[1] += row.bytes
        rows = [SourceBytes(s, *totals[s]) for s in self.index.entries if s in totals]
        if None in totals:
            rows.append(SourceBytes(NOT_IN_TREE, *totals[None]))
        return rows, attribution.overhead_bytes, downloaded


def remove_stale(path: Path) -> None:
    """An output this run does not produce, left by an earlier run, would mislead: remove it."""
    try:
        path.unlink()
    except FileNotFoundError:
        pass
    except OSError as exc:
        from builder.errors import OutputError

        raise OutputError(f"cannot remove stale {path}: {exc.strerror or exc}") from None


@dataclass(frozen=True)
class SourceBytes:
    """An entry file's (or the not-in-tree functions') bytes in a written metallib."""

    source: str
    function_count: int
    bytes: int


def resolve_input(
    target: str, platform: str | None, progress: Callable[[str], None] | None, member: str | None
) -> Library:
    """The one metallib behind ``target`` (a file, binary, wheel, PACKAGE==VERSION or build
    folder; ``member`` chooses one of several): a file of its own, or its bytes in a binary."""
    from builder.inputs.targets import one_metallib, resolve_target

    found = resolve_target(target, platform=platform, progress=progress, member=member)
    lib = one_metallib(target, found, member=None, command="variants --from")
    assert lib.path is not None  # one_metallib refuses a build without a metallib
    return lib


def library_stem(lib: Library) -> str:
    """The written libraries' name when the tree's settings give none: the input file's
    stem, or for a library inside a binary the binary's name up to its first dot
    (``_C.cpython-312-darwin.so`` -> ``_C``)."""
    assert lib.path is not None
    return lib.path.name.split(".")[0] if lib.window is not None else lib.path.stem


class MetallibMeasure:
    """What ``--ceiling-of metallib`` limits: the metallib's bytes, exact (the writer's layout of
    the subset); what the written variant measures is what was planned."""

    of = "metallib"
    words = "metallib size"

    def __init__(self, writer: VariantWriter) -> None:
        self._writer = writer

    def saving(self, source: str) -> int:
        return self._writer.index.entries[source].bytes

    def size_of(self, jit: frozenset[str]) -> int:
        return self._writer.size_of(jit)

    def measured(self, jit: tuple[str, ...], planned: int) -> int:
        return planned


class DownloadMeasure:
    """What ``--ceiling-of download`` limits: the metallib as a wheel stores it (zlib level 6,
    ``builder.size.download``) plus the embedded source compressed; estimated by ``size_of``
    (``builder.subsets.variant_plan`` says how; cached per set of JIT entry files), measured on
    the planned split."""

    of = "download"
    words = "download (estimated)"

    def __init__(self, writer: VariantWriter, tree: KernelTree, costs: EmbedCosts) -> None:
        from builder.size.attribution import attribute
        from builder.size.download import download_share

        share = download_share(writer.lib, attribute(writer.lib))
        self._writer, self._tree, self._costs = writer, tree, costs
        self._total = share.total
        self._by_source = {
            s: sum(share.functions[i] for i in e.functions) for s, e in writer.index.entries.items()
        }
        self._cache: dict[frozenset[str], int] = {}

    def saving(self, source: str) -> int:
        return self._by_source[source]

    def size_of(self, jit: frozenset[str]) -> int:
        if jit not in self._cache:
            kept = self._writer.index.kept(jit)
            metallib = self._total - sum(self._by_source[s] for s in jit) if kept else 0
            text = self._costs.joined(jit)
            embedded = len(zlib.compress(text.encode("utf-8"), ZLIB_LEVEL)) if text else 0
            self._cache[jit] = metallib + embedded
        return self._cache[jit]

    def measured(self, jit: tuple[str, ...], planned: int) -> int:
        """The planned split's metallib written to a temporary file and modelled, plus its JIT
        source compressed: what the written variant measures."""
        metallib = 0
        kept = self._writer.index.kept(jit)
        if kept:
            with tempfile.TemporaryDirectory(prefix=".plan-") as scratch:
                path = Path(scratch) / "planned.metallib"
                self._writer.write(kept, path)
                metallib = self._writer.measure(path, kept, download=True)[2] or 0
        sources = jit_sources(self._tree, jit)  # with no JIT file too: run-time-only headers
        return metallib + (sources.compressed_bytes if sources is not None else 0)
