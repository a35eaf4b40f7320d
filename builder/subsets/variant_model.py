"""What ``variants --from`` writes and measures, as data: the input, each variant, the run.

``builder.subsets.variants`` makes them (through ``builder.subsets.variant_writer``);
``builder.render.variants`` shows them. Every figure is measured on the files written.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path

from builder.kernels.runtime_sources import RuntimeSources
from builder.subsets.coverage import Coverage
from builder.subsets.variant_plan import Plan
from builder.subsets.variant_sources import JitSources

__all__ = ["NOT_IN_TREE", "SourceBytes", "Variant", "VariantsInput", "VariantsRun"]

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
