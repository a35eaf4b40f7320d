"""``variants --from``: every AOT/JIT split of a kernel tree, written and measured from the full
library Apple's compiler produced, on any OS, without a rebuild.

For each variant (``builder.subsets.variant_select``; ``--budget`` adds the planner's,
``builder.subsets.variant_plan``) this writes ``OUTDIR/<variant>/<library>.metallib``, a real subset
of the input through the container writer (kept functions byte-identical, copied in the kernel),
and ``OUTDIR/<variant>/jit_sources.cpp``, its JIT entry files' headers (and the run-time-only
kernels' headers every variant carries) embedded as ``embed`` does
(``builder.subsets.variant_sources``). Before anything is written, every variant passes the
coverage check (``builder.subsets.coverage``: each kernel in its metallib or its code among its
embedded sources; exit 1 otherwise). The input is parsed once; its modules are hashed once, beside
the first write (``all-aot``, the input as it is), and checked against their HASH tags before any
other variant is written. Every figure is then measured on the files written: the metallib's size
and its bytes per entry file (attribution of the written file), the embedded bytes of the C++
source.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from concurrent.futures import Future, ThreadPoolExecutor
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING

from builder.errors import UsageError
from builder.metallib import InternalError, layout, open_metallib, parts_from_library
from builder.subsets.coverage import Coverage, check_coverage, require_coverage
from builder.subsets.variant_plan import Candidate, Plan, plan_budget
from builder.subsets.variant_select import (
    LibraryIndex,
    VariantSpec,
    index_library,
    requested_variants,
)
from builder.subsets.variant_sources import (
    EmbedCosts,
    JitSources,
    include_dirs,
    jit_sources,
    preamble_specs,
)

if TYPE_CHECKING:
    from builder.kernels.discovery import KernelTree
    from builder.metallib import LibraryParts, Metallib
    from builder.metallib.hashing import SpanHashes

__all__ = [
    "NOT_IN_TREE",
    "SOURCES_FILE",
    "SourceBytes",
    "Variant",
    "VariantsInput",
    "VariantsRun",
    "make_variants",
]

SOURCES_FILE = "jit_sources.cpp"
NOT_IN_TREE = "[not in tree]"
Progress = Callable[[str], None]


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
    """Entry files embedded whole when JIT (``builder.kernels.embedding``), in tree order."""


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


def _resolve(
    target: str, platform: str | None, progress: Progress | None
) -> tuple[Path, str | None]:
    """The one metallib behind ``target`` (a file, wheel, PACKAGE==VERSION or build folder)."""
    from builder.inputs.targets import one_metallib, resolve_target

    found = resolve_target(target, platform=platform, progress=progress)
    lib = one_metallib(
        target, found, member=None, command="variants --from", choose="name one .metallib file"
    )
    assert lib.path is not None  # one_metallib refuses a build without a metallib
    if lib.window is not None:
        raise UsageError(
            f"{target}: its metallib {lib.member} is inside a binary; write it out first "
            f"(slim {target} --member '{lib.member}' --keep '*' -o LIB.metallib)"
        )
    return lib.path, lib.wheel


def _function_bytes(lib: Metallib) -> list[int]:
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


class _Writer:
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
        from builder.metallib.hashing import SpanHashes

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


def _remove_stale(path: Path) -> None:
    """An output this run does not produce, left by an earlier run, would mislead: remove it."""
    try:
        path.unlink()
    except FileNotFoundError:
        pass
    except OSError as exc:
        from builder.errors import OutputError

        raise OutputError(f"cannot remove stale {path}: {exc.strerror or exc}") from None


def _plan(
    tree: KernelTree, index: LibraryIndex, writer: _Writer, budget: int, budget_of: str
) -> tuple[VariantSpec, Plan]:
    candidates = [
        Candidate(s, len(e.functions), e.bytes) for s, e in index.entries.items() if not e.held
    ]
    held = sum(bool(e.held) for e in index.entries.values())
    fixed = (
        f"{held} entry file(s) that stay AOT, {len(index.other):,} function(s) no entry "
        "file produces and the container's framing"
    )
    if budget_of == "download":
        from builder.subsets.variant_download import plan_download

        plan = plan_download(
            tree,
            index,
            writer.lib,
            budget,
            write=writer.write,
            fixed=fixed,
            sources_compressed=lambda jit: _compressed(tree, jit),
        )
    else:
        plan = plan_budget(
            candidates, budget, size_of=writer.size_of, embedded_of=EmbedCosts(tree), fixed=fixed
        )
    spec = VariantSpec(
        "planned",
        f"--budget {budget:,} bytes of {budget_of}: {len(plan.jit)} entry file(s) JIT, "
        "chosen for the fewest kernels compiled at run time",
        plan.jit,
    )
    return spec, plan


def _compressed(tree: KernelTree, jit: tuple[str, ...]) -> int:
    """The embedded source of ``jit`` compressed, as a variant with them JIT measures it."""
    sources = jit_sources(tree, jit) if jit else None
    return sources.compressed_bytes if sources is not None else 0


def make_variants(
    target: str,
    tree: KernelTree,
    outdir: Path,
    *,
    aot: Sequence[str] = (),
    jit: Sequence[str] = (),
    budget: int | None = None,
    platform: str | None = None,
    progress: Progress | None = None,
    budget_of: str = "metallib",
    download: bool = False,
) -> VariantsRun:
    """Write and measure every variant; see the module docstring. ``CheckFailed`` (exit 1) when
    ``budget`` is below the least reachable size (nothing written then); ``UsageError`` for bad
    globs, an unusable target or an output that would overwrite the input. ``budget_of``:
    ``metallib`` (the file's bytes) or ``download`` (``builder.subsets.variant_download``; it
    implies ``download``: each variant's metallib download measured, one zlib pass each)."""
    say = progress or (lambda _message: None)
    path, wheel = _resolve(target, platform, progress)
    with open_metallib(path) as lib:
        index = index_library(lib.columns().names, _function_bytes(lib), tree)
        specs = requested_variants(index, aot, jit)
        writer = _Writer(lib, index)
        plan = None
        if budget is not None:
            say(f"planning for --budget {budget:,} bytes of {budget_of}")
            spec, plan = _plan(tree, index, writer, budget, budget_of)
            specs.append(spec)
        name = f"{tree.config.library or path.stem}.metallib"
        for spec in specs:
            if (outdir / spec.name / name).resolve() == path.resolve():
                raise UsageError(f"{outdir / spec.name / name}: refusing to write over the input")
        coverage = _check_coverage(tree, index, lib.columns().names, specs)
        # The JIT sources are made on a thread while the metallibs are copied (in the kernel,
        # without the GIL): inlining the headers is the larger share of the Python work.
        pool = ThreadPoolExecutor(max_workers=1, thread_name_prefix="jit-sources")
        try:
            sources = {s.name: pool.submit(jit_sources, tree, s.jit) for s in specs}
            variants = []
            for number, spec in enumerate(specs, start=1):
                say(f"[{number}/{len(specs)}] {spec.name}")
                variants.append(
                    _one(
                        writer,
                        spec,
                        outdir / spec.name / name,
                        sources.get(spec.name),
                        plan if spec.name == "planned" else None,
                        coverage[spec.name],
                        download or budget_of == "download",
                    )
                )
        finally:
            pool.shutdown(wait=True, cancel_futures=True)
        source = VariantsInput(
            target=target,
            metallib=path,
            wheel=wheel,
            file_size=lib.file_size,
            function_count=index.function_count,
            tree_root=tree.root,
            tree_kind=tree.kind,
            config=tree.config.path,
            entry_files=len(tree.sources),
            tree_kernels=len(tree.kernels),
            not_in_tree=len(index.other),
            missing=index.missing,
            held=tuple((s, e.held) for s, e in index.entries.items() if e.held),
            runtime_only=tuple((t.template, t.source) for t in tree.runtime_only),
            whole_file=_whole_files(tree),
        )
    return VariantsRun(source, tuple(variants), outdir)


def _whole_files(tree: KernelTree) -> tuple[str, ...]:
    if tree.kind == "catalog":
        return ()
    from builder.jit.tree_preambles import embedding_of

    return tuple(s for s, how in embedding_of(tree).items() if how == "whole-file")


def _check_coverage(
    tree: KernelTree, index: LibraryIndex, names: Sequence[str], specs: Sequence[VariantSpec]
) -> dict[str, Coverage]:
    """Every variant's coverage; CheckFailed (exit 1) for the first that would lose kernels."""
    dirs = include_dirs(tree)
    found: dict[str, Coverage] = {}
    present = set(names)
    for spec in specs:
        kept = present - {names[i] for s in spec.jit for i in index.entries[s].functions}
        coverage = check_coverage(
            tree, spec.jit, preamble_specs(tree, spec.jit), dirs, in_metallib=kept.__contains__
        )
        require_coverage(coverage, f"variant {spec.name}")
        found[spec.name] = coverage
    return found


def _one(
    writer: _Writer,
    spec: VariantSpec,
    path: Path,
    made: Future[JitSources | None] | None,
    plan: Plan | None,
    coverage: Coverage,
    download: bool,
) -> Variant:
    from builder.files.atomic import make_dirs, write_if_changed

    index = writer.index
    make_dirs(path.parent)
    kept = index.kept(spec.jit)
    by_source: list[SourceBytes] = []
    overhead = size = 0
    downloaded: int | None = 0 if download else None
    if kept:
        size = writer.write(kept, path)
        by_source, overhead, downloaded = writer.measure(path, kept, download)
    else:
        _remove_stale(path)
    if plan is not None and plan.budget_of == "metallib" and size != plan.metallib_bytes:
        raise InternalError(
            f"planned a {plan.metallib_bytes}-byte metallib, wrote {size} bytes", path=str(path)
        )
    sources = made.result() if made is not None else None
    sources_file = path.parent / SOURCES_FILE
    if sources is not None:
        write_if_changed(sources_file, sources.text)
    else:
        _remove_stale(sources_file)
    if (
        plan is not None
        and plan.budget_of == "download"
        and (
            (downloaded or 0) + (sources.compressed_bytes if sources else 0) != plan.metallib_bytes
        )
    ):
        raise InternalError(
            f"planned a {plan.metallib_bytes}-byte download, measured another", path=str(path)
        )
    aot = index.aot_sources(spec.jit)
    return Variant(
        name=spec.name,
        description=spec.description,
        jit=spec.jit,
        aot=aot,
        metallib=path if kept else None,
        metallib_bytes=size,
        function_count=len(kept),
        jit_kernels=index.kernels(spec.jit),
        jit_kernels_discovered=sum(index.entries[s].discovered for s in spec.jit),
        aot_kernels=index.kernels(aot),
        other_kernels=len(index.other),
        sources=sources,
        sources_file=sources_file if sources is not None else None,
        by_source=tuple(by_source),
        overhead_bytes=overhead,
        plan=plan,
        coverage=coverage,
        metallib_download_bytes=downloaded,
    )
