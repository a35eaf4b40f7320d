"""Kernel trees: every kernel a source folder produces, with the entry file it comes from.

Two kinds of tree give one shape (:class:`KernelTree` of :class:`KernelRecord`):

- a **catalog tree** (``catalog.json``, like the bundled ``metal_src/``): records come from the
  catalog; ``source`` is the family's template header (e.g. ``unary/unary.h``), the file its
  kernels are written in (the build generates the instantiation sources);
- a **discovered tree** (anything else): every ``.metal`` entry file under the folder is run
  through the host C++ preprocessor (``builder.kernels.preprocess``), in parallel, and the kernels
  the Metal compiler would emit are read from the result (``builder.kernels.kernel_scan``).

:func:`load_tree` is the one entry point: a folder (+ flags, + ``metallib.toml``) in, a tree out.
``KernelTree.source_of`` maps each kernel name to its entry file (source attribution);
``KernelTree.defined_in`` names the file its code is written in (read off the preprocessor's line
markers, ``builder.kernels.definitions``), and ``KernelTree.runtime_only`` lists the kernel
templates no entry file instantiates (``builder.kernels.runtime_only``, searched beside the entry
files in the same pool).
"""

from __future__ import annotations

import functools
import os
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import TYPE_CHECKING, NamedTuple

from builder.errors import UsageError
from builder.kernels.bounded_run import PreprocessError
from builder.kernels.kernel_scan import KernelRecord, ScanError, scan_text
from builder.kernels.preprocess import (
    check_regular,
    find_preprocessor,
    metal_defines,
    preprocess,
)

if TYPE_CHECKING:
    from builder.kernels.catalog import Catalog
    from builder.kernels.kernel_tree import KernelTree
    from builder.kernels.platforms import Platform
    from builder.kernels.runtime_only import RuntimeTemplate
    from builder.kernels.tree_config import TreeConfig

__all__ = [
    "KernelRecord",
    "Progress",
    "catalog_tree",
    "checked_entries",
    "discover",
    "discover_file",
    "is_catalog_tree",
    "load_tree",
]

CATALOG_FILE = "catalog.json"  # as builder.kernels.catalog, which discovery does not import
Progress = Callable[[int, int, str], None]  # (files done, files in all, entry just finished)


def is_catalog_tree(source_dir: Path) -> bool:
    """A folder described by catalog.json (as opposed to plain .metal entry files). One that is
    there but not a file (a FIFO, a link to /dev/zero) counts: reading it refuses it, by name."""
    return os.path.lexists(Path(source_dir) / CATALOG_FILE)


def checked_entries(root: Path, config: TreeConfig) -> list[str]:
    """The entry files of a folder of ``.metal`` files, after checking what the settings name:
    a missing folder, a missing ``-I`` folder, an exclude glob that matches nothing, an entry
    file that resolves outside the tree or no entry file left is a UsageError (exit 2)."""
    from builder.kernels.confinement import confine_entries, tree_bounds
    from builder.kernels.platforms import check_requires
    from builder.kernels.tree_files import ENTRY_SUFFIX, check_excludes, entry_files, path_matches

    if not root.is_dir():
        raise UsageError(f"{root}: not a folder")
    for folder in config.include_dirs:
        if not folder.is_dir():
            origin = f" (from {config.path})" if config.path else ""
            raise UsageError(f"include folder {folder}{origin}: not a folder")
    everything = entry_files(root)
    check_requires(root, config.requires, everything, config.path)
    settings = (config.path, config.file_exclude) if config.path else None
    check_excludes(root, config.exclude, everything, settings)
    entries = [e for e in everything if not path_matches(e, config.exclude)]
    for entry in entries:
        check_regular(root, entry)  # a FIFO or a device named as such, wherever it is
    if not entries:
        detail = (
            f"all {len(everything)} entry files are excluded"
            if everything
            else f"no {ENTRY_SUFFIX} entry files and no {CATALOG_FILE}"
        )
        raise UsageError(f"{root}: {detail}")
    confine_entries(root, entries, tree_bounds(root, config.include_dirs))
    return entries


def _batches(files: int, jobs: int, allowed: bool) -> list[tuple[int, int]]:
    """Contiguous (start, stop) ranges of entry files, one compiler run each: about four per
    job, at most eight files, so that the cores stay evenly busy to the end; one file each
    when the preprocessor cannot take several."""
    size = max(1, min(8, files // (4 * jobs))) if allowed else 1
    return [(i, min(i + size, files)) for i in range(0, files, size)]


def _jobs(jobs: int | None, files: int) -> int:
    if jobs is None:
        try:
            jobs = len(os.sched_getaffinity(0))
        except AttributeError:  # pragma: no cover - not Linux
            jobs = os.cpu_count() or 1
    return max(1, min(jobs, files))


def discover(
    source_dir: Path,
    config: TreeConfig | None = None,
    *,
    jobs: int | None = None,
    compiler: str | None = None,
    on_progress: Progress | None = None,
) -> KernelTree:
    """Preprocess every entry file of ``source_dir`` (``jobs`` at a time, default: all cores)
    and list the kernels each one emits.

    ``-I`` folders are the config's, then ``source_dir`` itself. Raises UsageError (exit 2) for
    a missing folder, no entry files, no preprocessor, or a file that does not preprocess: then
    the message names the first such file in tree order, whatever ``jobs`` is (and, for a quoted
    include not found, the ``-I`` folder in the tree that would find it: ``diagnostics.with_hint``).
    """
    from concurrent.futures import CancelledError, ThreadPoolExecutor, as_completed

    from builder.kernels.confinement import tree_bounds
    from builder.kernels.definitions import tree_path
    from builder.kernels.kernel_tree import KernelTree
    from builder.kernels.runtime_only import candidate_headers, runtime_templates
    from builder.kernels.tree_config import TreeConfig

    root = Path(source_dir)
    config = config or TreeConfig()
    entries = checked_entries(root, config)
    pp = find_preprocessor(compiler)
    defines = metal_defines(config.defines, config.metal_version)
    include_dirs = [*config.include_dirs, root.resolve()]
    bounds = tree_bounds(root, config.include_dirs)

    batches = _batches(len(entries), _jobs(jobs, len(entries)), pp.batches)

    where = functools.lru_cache(maxsize=None)(lambda name: tree_path(name, root))

    def work(first: int, stop: int) -> list[_EntryScan]:
        names = entries[first:stop]
        texts = preprocess(
            pp, names, include_dirs, defines, root, line_markers=True, confine=bounds
        )
        return [_scan_entry(entry, text, where) for entry, text in zip(names, texts)]

    results: list[_EntryScan] = [_EntryScan([], {}, set()) for _ in entries]
    failures: dict[int, UsageError] = {}
    with ThreadPoolExecutor(max_workers=_jobs(jobs, len(batches))) as pool:

        def search_runtime_only() -> tuple[RuntimeTemplate, ...]:
            # in the pool: reading the tree's includes for the candidates (0.3-0.5 s of Python
            # on MLX's tree) no longer holds back the first compiler run
            headers = candidate_headers(root, config, bounds)
            return runtime_templates(root, headers, pp, include_dirs, defines, bounds)

        runtime = pool.submit(search_runtime_only)
        futures = {pool.submit(work, a, b): (a, b) for a, b in batches}
        done = 0
        for future in as_completed(futures):
            first, stop = futures[future]
            try:
                results[first:stop] = future.result()
            except CancelledError:
                continue
            except (PreprocessError, UsageError) as exc:
                # Batches start in tree order, so every earlier one has started: the lowest
                # failing batch once the running ones finish holds the first failing file in
                # tree order (a batch reports its own first one).
                failures[first] = exc
                for other in futures:
                    other.cancel()
            done += stop - first
            if on_progress is not None and not failures:
                on_progress(done, len(entries), entries[stop - 1])
    if failures:
        from builder.kernels.diagnostics import with_hint

        failure = failures[min(failures)]
        hinted = with_hint(str(failure), root, config.include_dirs)  # which -I would find it
        if hinted != str(failure):
            raise type(failure)(hinted) from None
        raise failure
    kernels = tuple(record for result in results for record in result.kernels)
    written_in = {
        (entry, key): file
        for entry, result in zip(entries, results)
        for key, file in result.written_in.items()
    }
    read: set[str] = set().union(*(r.files for r in results))
    # a header an entry file read after all (a computed #include the text did not show)
    runtime_only = tuple(t for t in runtime.result() if t.source not in read)
    return KernelTree(
        root,
        "discovered",
        tuple(entries),
        kernels,
        config,
        written_in,
        runtime_only,
        tuple(sorted(read)),
    )


class _EntryScan(NamedTuple):
    """One entry file's kernels, where their code is written and the files it reads (tree
    paths)."""

    kernels: list[KernelRecord]
    written_in: dict[str, str]
    files: set[str]


def _scan_entry(entry: str, text: str, where: Callable[[str], str]) -> _EntryScan:
    from builder.kernels.definitions import split_markers

    clean, runs = split_markers(text)
    try:
        scan = scan_text(clean, entry)
    except ScanError as exc:
        raise UsageError(f"{entry}: {exc}") from None

    def file_at(offset: int) -> str:
        name = runs.file_at(offset)
        return where(name) if name is not None else entry

    written: dict[str, str] = {}
    for name, offset in scan.templates:
        written.setdefault(name, file_at(offset))
    for name, offset in scan.functions.items():
        written[name] = file_at(offset)
    files = {where(f) for f in runs.files if not f.startswith("<")}
    return _EntryScan(scan.kernels, written, files)


def discover_file(
    path: Path,
    include_dirs: Sequence[Path] = (),
    defines: Sequence[str] = (),
    metal_version: int | None = None,
    compiler: str | None = None,
) -> list[KernelRecord]:
    """The kernels one ``.metal`` file emits, preprocessed as :func:`discover` does (``source``
    is the file's name): for a tool handed a single file, such as a stand-in Metal compiler that
    receives the same ``-I``/``-D`` flags as the real one. Raises UsageError like discovery."""
    path = Path(path)
    dirs = [Path(os.path.abspath(d)) for d in include_dirs]
    pp = find_preprocessor(compiler)
    text = preprocess(pp, [path.name], dirs, metal_defines(defines, metal_version), path.parent)[0]
    try:
        return scan_text(text, path.name).kernels
    except ScanError as exc:
        raise UsageError(f"{path}: {exc}") from None


def catalog_tree(
    source_dir: Path | None = None,
    families: Sequence[str] | None = None,
    dtypes: Sequence[str] | None = None,
    config: TreeConfig | None = None,
    catalog: Catalog | None = None,
) -> KernelTree:
    """The catalog's instantiations (optionally selected) as a tree of kernel records; pass
    ``catalog`` when it is loaded already."""
    from builder.kernels.catalog import load_catalog
    from builder.kernels.cxx_text import normalize_arg
    from builder.kernels.kernel_tree import KernelTree
    from builder.kernels.tree_config import TreeConfig

    catalog = catalog or load_catalog(source_dir)
    items = catalog.expand(families, dtypes)
    headers = [
        f.header for f in catalog.families.values() if families is None or f.name in families
    ]
    kernels = tuple(
        KernelRecord(
            i.host_name, i.header, i.template, tuple(normalize_arg(a) for a in i.template_args)
        )
        for i in items
    )
    return KernelTree(
        catalog.source_dir, "catalog", tuple(headers), kernels, config or TreeConfig()
    )


def load_tree(
    source_dir: Path | None = None,
    *,
    include_dirs: Sequence[Path] = (),
    defines: Sequence[str] = (),
    exclude: Sequence[str] = (),
    config_file: Path | None = None,
    jobs: int | None = None,
    compiler: str | None = None,
    on_progress: Progress | None = None,
    platform: Platform | None = None,
) -> KernelTree:
    """The tree at ``source_dir`` (default: the bundled catalog tree), whatever its kind.

    For a discovered tree, ``metallib.toml`` in the folder (or ``config_file``) is read, the
    flags are merged over it (``tree_config.merge_flags``), and the tree is taken for
    ``platform`` (a library's, ``builder.kernels.platforms``; None: the flags' and settings').
    ``-I``/``-D``/``--exclude`` make no sense for a catalog tree and are refused (exit 2) rather
    than silently ignored.
    """
    from builder.kernels.platforms import for_platform
    from builder.kernels.tree_config import find_config, merge_flags

    if source_dir is None:
        from builder.resources import metal_src_dir

        source_dir = metal_src_dir()
    if is_catalog_tree(source_dir):
        if include_dirs or defines or exclude:
            raise UsageError(
                f"{source_dir} is a catalog tree ({CATALOG_FILE}); -I, -D and --exclude apply "
                "only to a folder of .metal entry files"
            )
        return catalog_tree(source_dir, config=find_config(source_dir, config_file))
    settings = find_config(source_dir, config_file, include_dirs)
    config = for_platform(
        merge_flags(settings, include_dirs, defines, exclude), platform, given=defines
    )
    return discover(source_dir, config, jobs=jobs, compiler=compiler, on_progress=on_progress)
