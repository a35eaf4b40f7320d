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
other variant is written (``builder.subsets.variant_writer``; the records it returns are
``builder.subsets.variant_writer``'s). Every figure is then measured on the files written: the
metallib's size and its bytes per entry file (attribution of the written file), the embedded
bytes of the C++ source as its API stores them.

Where a ``variants --from`` run is written versus where its files end up.

The variants are written into a new sibling folder that replaces OUTDIR as a whole only once
every file, ``variants.json`` last, is complete (``builder.files.output_folder``): a run that fails
or
is killed leaves the previous OUTDIR as it was, and OUTDIR never mixes two runs. Every path a run
records (and ``variants.json`` shows) names the files where they end up, so the run is moved
before it is described.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from concurrent.futures import Future, ThreadPoolExecutor
from dataclasses import replace
from pathlib import Path
from typing import TYPE_CHECKING

from builder.errors import UsageError
from builder.metallib import InternalError, open_metallib
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
    settings_of,
)
from builder.subsets.variant_writer import (
    NOT_IN_TREE,
    SourceBytes,
    Variant,
    VariantsInput,
    VariantsRun,
    VariantWriter,
    function_bytes,
    remove_stale,
)

__all__ = [
    "NOT_IN_TREE",
    "SOURCES_FILE",
    "SourceBytes",
    "Variant",
    "VariantsInput",
    "VariantsRun",
    "make_variants",
    "moved",
]


if TYPE_CHECKING:
    from builder.inputs.targets import Library
    from builder.kernels.discovery import KernelTree

SOURCES_FILE = "jit_sources.cpp"
Progress = Callable[[str], None]


def _resolve(
    target: str, platform: str | None, progress: Progress | None, member: str | None
) -> Library:
    """The one metallib behind ``target`` (a file, binary, wheel, PACKAGE==VERSION or build
    folder; ``member`` chooses one of several): a file of its own, or its bytes in a binary."""
    from builder.inputs.targets import one_metallib, resolve_target

    found = resolve_target(target, platform=platform, progress=progress, member=member)
    lib = one_metallib(target, found, member=None, command="variants --from")
    assert lib.path is not None  # one_metallib refuses a build without a metallib
    return lib


def _stem(lib: Library) -> str:
    """The written libraries' name when the tree's settings give none: the input file's
    stem, or for a library inside a binary the binary's name up to its first dot
    (``_C.cpython-312-darwin.so`` -> ``_C``)."""
    assert lib.path is not None
    return lib.path.name.split(".")[0] if lib.window is not None else lib.path.stem


def _plan(
    tree: KernelTree, index: LibraryIndex, writer: VariantWriter, budget: int, budget_of: str
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
    member: str | None = None,
) -> VariantsRun:
    """Write and measure every variant; see the module docstring. ``CheckFailed`` (exit 1) when
    ``budget`` is below the least reachable size (nothing written then); ``UsageError`` for bad
    globs, an unusable target or an output that would overwrite the input. ``budget_of``:
    ``metallib`` (the file's bytes) or ``download`` (``builder.subsets.variant_download``; it
    implies ``download``: each variant's metallib download measured, one zlib pass each).
    ``member`` chooses the library of a target holding several (a binary's ``#2``)."""
    say = progress or (lambda _message: None)
    library = _resolve(target, platform, progress, member)
    path, wheel = library.path, library.wheel
    assert path is not None  # _resolve refuses a build without a metallib
    with open_metallib(path, library.window) as lib:
        index = index_library(lib.columns().names, function_bytes(lib), tree)
        specs = requested_variants(index, aot, jit)
        writer = VariantWriter(lib, index)
        plan = None
        if budget is not None:
            say(f"planning for --budget {budget:,} bytes of {budget_of}")
            spec, plan = _plan(tree, index, writer, budget, budget_of)
            specs.append(spec)
        name = f"{tree.config.library or _stem(library)}.metallib"
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
            whole_file=_whole_files(tree),
            interface=settings_of(tree),
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
    writer: VariantWriter,
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
        remove_stale(path)
    if plan is not None and plan.budget_of == "metallib" and size != plan.metallib_bytes:
        raise InternalError(
            f"planned a {plan.metallib_bytes}-byte metallib, wrote {size} bytes", path=str(path)
        )
    sources = made.result() if made is not None else None
    sources_file = path.parent / SOURCES_FILE
    if sources is not None:
        write_if_changed(sources_file, sources.text)
    else:
        remove_stale(sources_file)
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


def moved(run: VariantsRun, outdir: Path) -> VariantsRun:
    """``run`` as it reads once its folder ``run.outdir`` has become ``outdir``."""

    def there(path: Path | None) -> Path | None:
        return None if path is None else outdir / path.relative_to(run.outdir)

    variants = tuple(
        replace(v, metallib=there(v.metallib), sources_file=there(v.sources_file))
        for v in run.variants
    )
    return replace(run, variants=variants, outdir=outdir)
