"""``variants --from``: every AOT/JIT split of a kernel tree, written and measured from the full
library Apple's compiler produced, on any OS, without a rebuild.

A :class:`Variant` is one split, from its selection (:func:`requested_variants`; ``--ceiling`` adds
the planner's, ``builder.subsets.variant_plan``) to its record (``variants.json``): for each,
:func:`make_variants` writes ``OUTDIR/<variant>/<library>.metallib``, a real subset of the input
through the container writer (kept functions byte-identical, copied in the kernel;
``builder.subsets.variant_library``), and ``OUTDIR/<variant>/jit_sources.cpp``, its JIT entry
files' headers (and the run-time-only kernels' headers every variant carries) written by
``embed``'s writer (``builder.subsets.coverage``). Before anything is written, every variant
passes the coverage check (each kernel in its metallib or its code among its embedded sources;
exit 1 otherwise). Every figure is measured on the files written: the metallib's size and its
bytes per entry file, the embedded bytes of the C++ source as its API stores them.

The command writes them into a sibling folder (``staged``) that replaces OUTDIR as a whole once
every file, ``variants.json`` last, is complete (``builder.files.output_folder``): a failed run
leaves the previous OUTDIR as it was. Every path a run records names where its file ends up.
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from concurrent.futures import Future, ThreadPoolExecutor
from dataclasses import dataclass, replace
from pathlib import Path
from typing import TYPE_CHECKING

from builder.errors import InternalError, UsageError
from builder.files.dataclass_json import field
from builder.kernels.runtime_sources import RuntimeSources
from builder.metallib import open_metallib
from builder.subsets.coverage import (
    Coverage,
    JitSources,
    jit_sources,
    split_coverage,
    whole_files,
)
from builder.subsets.planned import kept_aot, matching, plan_split
from builder.subsets.split_costs import EmbedCosts
from builder.subsets.variant_library import (
    AOT_ONLY,
    NOT_IN_TREE,
    LibraryIndex,
    SourceBytes,
    VariantWriter,
    function_bytes,
    index_library,
    library_stem,
    remove_stale,
    resolve_input,
)
from builder.subsets.variant_plan import Plan

if TYPE_CHECKING:
    from builder.inputs.targets import Progress
    from builder.kernels.kernel_tree import KernelTree

__all__ = [
    "NOT_IN_TREE",
    "SOURCES_FILE",
    "SourceBytes",
    "Variant",
    "VariantsInput",
    "VariantsRun",
    "make_variants",
    "requested_variants",
]

SOURCES_FILE = "jit_sources.cpp"


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
class Variant:
    """One split: selected (its name, description and JIT entry files), then written and
    measured into the same value (every figure measured on the files written). Its fields are
    its record in ``variants.json``, in order (``builder.files.dataclass_json.dump``)."""

    name: str
    """Its output folder: ``all-aot``, ``jit-mode``, ``aot-N``, ``jit-N`` or ``planned``."""
    description: str
    metallib: Path | None = None
    """None when no function stays AOT (nothing to ship as a metallib)."""
    metallib_bytes: int = 0
    function_count: int = 0
    sources_file: Path | None = field(default=None, key="jit_sources_file")
    embedded_bytes: int = 0
    """What ``jit_sources.cpp`` stores, as its API stores it (``embedded_storage``)."""
    embedded_storage: str | None = None
    embedded_compressed_bytes: int = 0
    total_bytes: int = 0
    """What ships: the metallib file plus the embedded source text."""
    total_compressed_bytes: int = 0
    metallib_download_bytes: int | None = None
    """The metallib as a wheel stores it, modelled (``builder.size.download``; 0: no metallib;
    None: not measured, ``download`` was not asked for)."""
    total_download_bytes: int | None = None
    """What a user downloads: the metallib compressed as in a wheel, the source compressed."""
    jit: tuple[str, ...] = field(default=(), key="jit_sources")
    """JIT entry files, in tree order; every other entry file stays AOT."""
    aot: tuple[str, ...] = field(default=(), key="aot_sources")
    jit_kernels: int = 0
    """Functions of the library its JIT entry files produce: compiled at run time."""
    first_use_bytes: int = field(default=0, key="first_use_source_bytes_proxy")
    """The proxy of what run-time compilation costs (``builder.subsets.split_costs``): the
    source bytes each JIT entry file's first use compiles, summed."""
    jit_kernels_discovered: int = 0
    aot_kernels: int = 0
    other_kernels: int = 0
    preambles: tuple[str, ...] = ()
    embed_command: tuple[str, ...] | None = None
    """The ``embed`` command that writes the same ``jit_sources.cpp``."""
    by_source: tuple[SourceBytes, ...] = field(default=(), key="bytes_by_source")
    overhead_bytes: int = 0
    plan: Plan | None = None
    coverage: Coverage | None = None
    """Where the tree's kernels ship in this variant (checked complete before writing)."""
    sources: JitSources | None = field(default=None, omit="always")
    """The source written to ``sources_file`` (its text is not part of the record)."""


@dataclass(frozen=True)
class VariantsRun:
    input: VariantsInput
    variants: tuple[Variant, ...]
    outdir: Path


def _movable(index: LibraryIndex, sources: Iterable[str]) -> tuple[str, ...]:
    chosen = set(sources)
    return tuple(s for s, e in index.entries.items() if s in chosen and not e.held)


def _kept_note(index: LibraryIndex, asked: set[str]) -> str:
    held = [s for s in index.entries if s in asked and index.entries[s].held]
    verb = "stays" if len(held) == 1 else "stay"
    return f" ({', '.join(held)} {verb} AOT)" if held else ""


def requested_variants(
    index: LibraryIndex, aot: Sequence[str] = (), jit: Sequence[str] = ()
) -> list[Variant]:
    """``all-aot``, the JIT mode of metallib.toml when it names aot-only files, then one variant
    per ``--aot`` value (those AOT, every other one JIT) and per ``--jit`` value (those JIT).
    Entry files ``held_aot`` names stay AOT in every variant."""
    every = set(index.entries)
    variants = [Variant("all-aot", "every entry file AOT: the input library as it is", jit=())]
    held = {s for s, e in index.entries.items() if e.held == AOT_ONLY}
    if held:
        variants.append(
            Variant(
                "jit-mode",
                f"metallib.toml's JIT mode: {len(held)} aot-only entry file(s) AOT, every "
                f"other one JIT{_kept_note(index, every - held)}",
                jit=_movable(index, every),
            )
        )
    for number, value in enumerate(aot, start=1):
        named = matching(index, "--aot", value)
        variants.append(
            Variant(
                f"aot-{number}",
                f"--aot {value}: {len(named)} entry file(s) AOT, every other one "
                f"JIT{_kept_note(index, every - named)}",
                jit=_movable(index, every - named),
            )
        )
    for number, value in enumerate(jit, start=1):
        named = matching(index, "--jit", value)
        moved = _movable(index, named)
        variants.append(
            Variant(
                f"jit-{number}",
                f"--jit {value}: {len(moved)} entry file(s) "
                f"JIT{_kept_note(index, named)}, the rest AOT",
                jit=moved,
            )
        )
    return variants


def _planned(
    tree: KernelTree,
    writer: VariantWriter,
    limit: tuple[int, str],
    keep: Sequence[str],
    costs: EmbedCosts,
) -> Variant:
    """The variant ``--ceiling`` adds: the planner's split by ``limit``'s measure, the entry
    files ``keep`` and ``[build] keep-aot`` name pinned AOT."""
    ceiling, ceiling_of = limit
    kept = kept_aot(tree, writer.index, keep)
    plan = plan_split(tree, writer, limit, kept, costs)
    pins = f", {len(plan.kept_aot)} pinned AOT" if plan.kept_aot else ""
    return Variant(
        "planned",
        f"--ceiling {ceiling:,} bytes of {ceiling_of}: {len(plan.jit)} entry file(s) JIT{pins}, "
        "chosen for the least run-time compile cost (first-use source bytes, a proxy)",
        jit=plan.jit,
        plan=plan,
    )


def make_variants(
    target: str,
    tree: KernelTree,
    outdir: Path,
    *,
    staged: Path | None = None,
    aot: Sequence[str] = (),
    jit: Sequence[str] = (),
    ceiling: int | None = None,
    platform: str | None = None,
    progress: Progress | None = None,
    ceiling_of: str = "metallib",
    download: bool = False,
    member: str | None = None,
    keep_aot: Sequence[str] = (),
) -> VariantsRun:
    """Write and measure every variant into ``staged`` (default: ``outdir``), recording the
    paths under ``outdir``. ``CheckFailed`` (exit 1) when ``ceiling`` is below the least
    reachable size (nothing written then); ``UsageError`` for bad globs, an unusable target or an
    output over the input. ``ceiling_of``: ``metallib`` or ``download`` (which implies
    ``download``: each variant's download measured). ``member``: as ``--member``; ``keep_aot``: as
    ``--keep-aot`` (with ``ceiling``)."""
    say = progress or (lambda _message: None)
    written_in = staged or outdir
    library = resolve_input(target, platform, progress, member)
    path = library.path
    assert path is not None  # resolve_input refuses a build without a metallib
    with open_metallib(path, library.window) as lib:
        names = lib.columns().names
        index = index_library(names, function_bytes(lib), tree)
        variants = requested_variants(index, aot, jit)
        writer = VariantWriter(lib, index)
        costs = EmbedCosts(tree)
        if ceiling is not None:
            say(f"planning for --ceiling {ceiling:,} bytes of {ceiling_of}")
            variants.append(_planned(tree, writer, (ceiling, ceiling_of), keep_aot, costs))
        name = f"{tree.config.library or library_stem(library)}.metallib"
        for v in variants:
            if (written_in / v.name / name).resolve() == path.resolve():
                raise UsageError(f"{written_in / v.name / name}: refusing to write over the input")
        for number, v in enumerate(variants):  # all checked before anything is written
            kept = {names[i] for i in index.kept(v.jit)}
            variants[number] = replace(
                v,
                coverage=split_coverage(tree, v.jit, kept, v.name),
                first_use_bytes=sum(costs.first_use(s) for s in v.jit),
            )
        # The JIT sources are made on a thread while the metallibs are copied (in the kernel,
        # without the GIL): inlining the headers is the larger share of the Python work.
        pool = ThreadPoolExecutor(max_workers=1, thread_name_prefix="jit-sources")
        try:
            sources = [pool.submit(jit_sources, tree, v.jit) for v in variants]
            for number, (v, made) in enumerate(zip(variants, sources), start=1):
                say(f"[{number}/{len(variants)}] {v.name}")
                variants[number - 1] = _one(
                    writer,
                    v,
                    (written_in / v.name / name, outdir / v.name / name),
                    made,
                    download or ceiling_of == "download",
                )
        finally:
            pool.shutdown(wait=True, cancel_futures=True)
        source = VariantsInput(
            target=target,
            metallib=path,
            wheel=library.wheel,
            member=library.member if library.window is not None else None,
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
            whole_file=whole_files(tree),
            interface=tree.config.runtime,
        )
    return VariantsRun(source, tuple(variants), outdir)


def _one(
    writer: VariantWriter,
    variant: Variant,
    paths: tuple[Path, Path],
    made: Future[JitSources | None],
    download: bool,
) -> Variant:
    """``variant`` written (to the first of ``paths``) and measured, as it reads where its files
    end up (the second); its plan's figure checked against what was measured."""
    from builder.files.atomic import make_dirs, write_if_changed

    path, shown = paths
    index = writer.index
    make_dirs(path.parent)
    kept = index.kept(variant.jit)
    by_source: list[SourceBytes] = []
    overhead = size = 0
    downloaded: int | None = 0 if download else None
    if kept:
        size = writer.write(kept, path)
        by_source, overhead, downloaded = writer.measure(path, kept, download)
    else:
        remove_stale(path)
    sources = made.result()
    if sources is not None:
        write_if_changed(path.parent / SOURCES_FILE, sources.text)
    else:
        remove_stale(path.parent / SOURCES_FILE)
    aot = index.aot_sources(variant.jit)
    embedded = sources.embedded_bytes if sources is not None else 0
    compressed = sources.compressed_bytes if sources is not None else 0
    sources_file = shown.parent / SOURCES_FILE if sources is not None else None
    measured = replace(
        variant,
        metallib=shown if kept else None,
        metallib_bytes=size,
        function_count=len(kept),
        sources_file=sources_file,
        embedded_bytes=embedded,
        embedded_storage=sources.storage if sources is not None else None,
        embedded_compressed_bytes=compressed,
        total_bytes=size + embedded,
        total_compressed_bytes=size + compressed,
        metallib_download_bytes=downloaded,
        total_download_bytes=None if downloaded is None else downloaded + compressed,
        aot=aot,
        jit_kernels=index.kernels(variant.jit),
        jit_kernels_discovered=sum(index.entries[s].discovered for s in variant.jit),
        aot_kernels=index.kernels(aot),
        other_kernels=len(index.other),
        preambles=sources.preambles if sources is not None else (),
        embed_command=None
        if sources is None
        else ("metallib-builder", *sources.embed_args, "-o", str(sources_file)),
        by_source=tuple(by_source),
        overhead_bytes=overhead,
        sources=sources,
    )
    plan = variant.plan
    if plan is not None:
        of_download = plan.ceiling_of == "download"
        figure = measured.total_download_bytes if of_download else size
        if figure != plan.metallib_bytes:
            said = "measured another" if of_download else f"wrote {size} bytes"
            raise InternalError(
                f"planned a {plan.metallib_bytes}-byte {plan.ceiling_of}, {said}", path=str(path)
            )
    return measured
