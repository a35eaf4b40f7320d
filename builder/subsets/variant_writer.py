"""Writing the variants of one open library: exact sizes by layout, each subset through the
container writer, and each written file measured back.

The input's modules are hashed once, beside the first write (``all-aot``, the input as it is),
and checked against their HASH tags before any other variant is written; a mismatch names the
functions and writes nothing more. ``measure`` attributes the written file and checks that it
holds exactly the planned functions. Used by ``builder.subsets.variants``.

What ``variants --from`` writes and measures, as data: the input, each variant, the run.

``builder.subsets.variants`` makes them (through ``builder.subsets.variant_writer``);
``builder.render.variants`` shows them. Every figure is measured on the files written.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING

from builder.errors import UsageError
from builder.kernels.runtime_sources import RuntimeSources
from builder.metallib import InternalError, layout, open_metallib, parts_from_library
from builder.subsets.coverage import Coverage
from builder.subsets.variant_plan import Plan
from builder.subsets.variant_select import LibraryIndex
from builder.subsets.variant_sources import JitSources

if TYPE_CHECKING:
    from builder.metallib import LibraryParts, Metallib
    from builder.metallib.native import SpanHashes

__all__ = [
    "NOT_IN_TREE",
    "SourceBytes",
    "Variant",
    "VariantWriter",
    "VariantsInput",
    "VariantsRun",
    "function_bytes",
    "remove_stale",
]


def function_bytes(lib: Metallib) -> list[int]:
    t = lib.columns()
    return list(
        map(
            sum,
            zip(
                t.entry_bytes,
                t.public_md_bytes,
                t.private_md_bytes,
                t.module_bytes,
                t.reflection_bytes,
            ),
        )
    )


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
        from builder.metallib.writer import atomic_output, check_written, write_to

        parts = self._parts(kept)
        with atomic_output(path) as out:
            hashes = None if self._hashes_checked else self._start_hashes()
            try:
                lay = write_to(parts, out)
                check_written(out, lay, path)
                if hashes is not None:
                    self._check_hashes(hashes.digests(), path)
            finally:
                if hashes is not None:
                    hashes.cancel()
        return lay.file_size

    def _start_hashes(self) -> SpanHashes:
        from builder.metallib.native import SpanHashes

        table = self.lib.columns()
        data, offsets, fd = self.lib.file_spans(table.module_offsets)
        return SpanHashes(data, offsets, table.module_bytes, fd=fd)

    def _check_hashes(self, digests: bytes, path: Path) -> None:
        table = self.lib.columns()
        if digests != table.hashes:
            from builder.subsets.slim import HashMismatch, describe_mismatches

            bad = [
                HashMismatch(table.names[i], table.module_offsets[i])
                for i in range(len(table))
                if digests[32 * i : 32 * i + 32] != table.hash(i)
            ]
            raise UsageError(
                f"{self.lib.display_name}: {len(bad)} function(s) have a module whose SHA-256 does "
                f"not match its HASH tag: {describe_mismatches(bad)}; {path} not written"
            )
        self._hashes_checked = True

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


NOT_IN_TREE = "[not in tree]"


@dataclass(frozen=True)
class VariantsInput:
    """Where the figures come from: the input library and the kernel tree."""

    target: str
    metallib: Path
    wheel: str | None
    file_size: int
    function_count: int
    tree_root: Path
    tree_kind: str
    config: Path | None
    entry_files: int
    tree_kernels: int
    not_in_tree: int
    """Functions of the library no entry file produces (AOT in every variant)."""
    missing: int
    """Kernels of the tree the library does not have."""
    held: tuple[tuple[str, str], ...] = ()
    """(entry file, reason) of the entry files that stay AOT in every variant."""
    runtime_only: tuple[tuple[str, str], ...] = ()
    """(kernel template, header) of the tree's run-time-only kernels."""
    whole_file: tuple[str, ...] = ()
    """Entry files embedded whole when JIT (``KernelTree.embeddings``), in tree order."""
    interface: RuntimeSources = field(default_factory=RuntimeSources)
    """How every variant's ``jit_sources.cpp`` is written and its bytes stored (the tree's
    ``[build]`` settings; a catalog tree: ``embed``'s defaults)."""
    member: str | None = None
    """For a library inside a binary (``metallib`` is then the binary): its name there."""


@dataclass(frozen=True)
class SourceBytes:
    """An entry file's (or the not-in-tree functions') bytes in a written metallib."""

    source: str
    function_count: int
    bytes: int


@dataclass(frozen=True)
class Variant:
    """One written variant, measured."""

    name: str
    description: str
    jit: tuple[str, ...]
    aot: tuple[str, ...]
    metallib: Path | None
    """None when no function stays AOT (nothing to ship as a metallib)."""
    metallib_bytes: int
    function_count: int
    jit_kernels: int
    """Functions of the library its JIT entry files produce: compiled at run time."""
    jit_kernels_discovered: int
    aot_kernels: int
    other_kernels: int
    sources: JitSources | None
    sources_file: Path | None
    by_source: tuple[SourceBytes, ...]
    overhead_bytes: int
    plan: Plan | None = None
    coverage: Coverage | None = None
    """Where the tree's kernels ship in this variant (checked complete before writing)."""
    metallib_download_bytes: int | None = None
    """The metallib as a wheel stores it, modelled (``builder.size.download``; 0: no metallib;
    None: not measured, ``download`` was not asked for)."""

    @property
    def total_download_bytes(self) -> int | None:
        """What a user downloads: the metallib compressed as in a wheel, the source compressed."""
        if self.metallib_download_bytes is None:
            return None
        return self.metallib_download_bytes + self.embedded_compressed_bytes

    @property
    def embedded_bytes(self) -> int:
        """What ``jit_sources.cpp`` stores, as its API stores it (``JitSources.storage``)."""
        return self.sources.embedded_bytes if self.sources else 0

    @property
    def embedded_compressed_bytes(self) -> int:
        return self.sources.compressed_bytes if self.sources else 0

    @property
    def total_bytes(self) -> int:
        """What ships: the metallib file plus the embedded source text."""
        return self.metallib_bytes + self.embedded_bytes

    @property
    def total_compressed_bytes(self) -> int:
        return self.metallib_bytes + self.embedded_compressed_bytes


@dataclass(frozen=True)
class VariantsRun:
    input: VariantsInput
    variants: tuple[Variant, ...]
    outdir: Path
