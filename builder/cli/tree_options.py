"""The options that name a kernel tree (``--source-dir``, ``-I``, ``-D``, ``--exclude``,
``--config``, ``-j``), shared by every command that reads one, and loading it with progress."""

from __future__ import annotations

import functools
import sys
from collections.abc import Callable, Iterable, Mapping
from dataclasses import dataclass, replace
from pathlib import Path
from typing import TYPE_CHECKING, TypeVar, overload

import click

if TYPE_CHECKING:
    from builder.kernels.discovery import KernelTree
    from builder.kernels.platforms import Platform
    from builder.kernels.tree_config import TreeConfig
    from builder.size.budget_file import Budget
    from builder.size.load import TreeSources

__all__ = [
    "BUILD_JOBS",
    "TreeOptions",
    "catalog_selection",
    "library_platform",
    "tree_of",
    "tree_options",
    "tree_sources",
    "tree_summary",
]

_DIR = click.Path(file_okay=False, path_type=Path)

_SOURCE_DIR_HELP = (
    "Kernel tree: a folder with catalog.json, or any folder of .metal entry files (discovered "
    "with the host preprocessor)."
)
_OPTIONS = [
    click.option(
        "-I",
        "--include-dir",
        "include_dirs",
        multiple=True,
        type=click.Path(path_type=Path),
        metavar="DIR",
        help="Folder searched for quoted includes (repeatable); before the ones in metallib.toml.",
    ),
    click.option(
        "-D",
        "--define",
        "defines",
        multiple=True,
        metavar="NAME[=VALUE]",
        help="Preprocessor definition (repeatable); wins over metallib.toml and over Metal's "
        "predefined macros, e.g. -D __METAL_VERSION__=320.",
    ),
    click.option(
        "--exclude",
        multiple=True,
        metavar="GLOB",
        help="Skip entry files whose path relative to --source-dir matches (repeatable; "
        "fnmatch, '*' also crosses '/').",
    ),
    click.option(
        "--config",
        "config_file",
        type=click.Path(dir_okay=False, path_type=Path),
        default=None,
        metavar="FILE",
        help="Settings file to use instead of DIR/metallib.toml.",
    ),
]
_CATALOG_SELECTION = [
    click.option(
        "--kernels",
        "kernels",
        metavar="F,...",
        default=None,
        help="Catalog trees only: these units (catalog families), comma-separated (e.g. "
        "unary,binary). Default: all.",
    ),
    click.option(
        "--dtypes",
        metavar="D,...",
        default=None,
        help="Catalog trees only: instantiations whose value dtypes are all listed (index "
        "dtypes are kept), e.g. float16,float32. Default: all.",
    ),
]
_PREPROCESS_JOBS = "Entry files preprocessed at once. Default: the number of CPUs."
BUILD_JOBS = (
    "Ninja's parallel jobs (-j of ninja; default: Ninja's own choice from the number of CPUs)."
)
"""What ``-j`` means for a command that builds (``build``, ``presets``)."""


R = TypeVar("R")


@dataclass(frozen=True)
class TreeOptions:
    """The kernel-tree options' values as one record: what ``@tree_options`` hands a command
    as its ``tree`` parameter (the fields of the build request's ``Tree`` part, and ``-j``)."""

    source_dir: Path | None = None
    include_dirs: tuple[Path, ...] = ()
    defines: tuple[str, ...] = ()
    exclude: tuple[str, ...] = ()
    config_file: Path | None = None
    jobs: int | None = None

    def load(self, platform: Platform | None = None) -> KernelTree:
        """``load_tree`` (for ``platform``: None, the flags' and settings' platform) with a
        files-done bar on stderr, only when stderr is a terminal (rich is not even imported
        otherwise: scripts and CI pay no start-up time for it)."""
        from builder.errors import UsageError
        from builder.kernels.discovery import load_tree

        source_dir = self.source_dir
        if source_dir is None or not source_dir.is_dir():
            raise UsageError(f"--source-dir {source_dir}: not a folder")

        def read(on_progress: Callable[[int, int, str], None] | None = None) -> KernelTree:
            return load_tree(
                source_dir,
                include_dirs=self.include_dirs,
                defines=self.defines,
                exclude=self.exclude,
                config_file=self.config_file,
                jobs=self.jobs,
                on_progress=on_progress,
                platform=platform,
            )

        if not sys.stderr.isatty():
            return read()
        from rich.console import Console
        from rich.progress import BarColumn, MofNCompleteColumn, Progress, TextColumn

        progress = Progress(
            TextColumn("preprocess"),
            BarColumn(),
            MofNCompleteColumn(),
            TextColumn("entry files"),
            console=Console(stderr=True),
            transient=True,
        )
        task = progress.add_task("preprocess", total=None)

        def advance(done: int, total: int, _entry: str) -> None:
            progress.update(task, completed=done, total=total)

        with progress:
            return read(advance)

    def check(self) -> TreeConfig:
        """Raise what loading would for the tree's settings and folders (exit 2), without
        preprocessing: run before a command resolves its target, which may be a download.
        Returns the settings with the flags over them."""
        from builder.errors import UsageError
        from builder.kernels.settings_check import check_settings

        if self.source_dir is None:
            raise UsageError("no --source-dir: name the kernel tree")
        return check_settings(
            self.source_dir,
            include_dirs=self.include_dirs,
            defines=self.defines,
            exclude=self.exclude,
            config_file=self.config_file,
        )

    def discovered(
        self, catalog_only: Mapping[str, object], *, catalog_jobs: bool = False
    ) -> Path | None:
        """The folder of .metal entry files ``--source-dir`` names, or None for a catalog tree
        (the bundled one when none is named). UsageError (exit 2) for a ``--source-dir`` that
        is not a folder, for any of ``catalog_only`` (option -> value) given with a folder of
        entry files, and for -I, -D, --exclude (and -j, unless ``catalog_jobs``) given with a
        catalog tree."""
        from builder.errors import UsageError
        from builder.kernels.discovery import is_catalog_tree

        source_dir = self.source_dir
        if source_dir is not None and not source_dir.is_dir():
            raise UsageError(f"--source-dir {source_dir}: not a folder")
        if source_dir is not None and not is_catalog_tree(source_dir):
            if any(catalog_only.values()):
                raise UsageError(
                    f"{_listed(catalog_only)} apply to catalog trees; {source_dir} has no "
                    "catalog.json"
                )
            return source_dir
        flags: dict[str, object] = {"-I": self.include_dirs, "-D": self.defines}
        flags["--exclude"] = self.exclude
        if not catalog_jobs:
            flags["-j"] = self.jobs
        if any(flags.values()):
            raise UsageError(
                f"{_listed(flags)} apply to a folder of .metal entry files; "
                f"{source_dir or 'the bundled tree'} is a catalog tree (catalog.json)"
            )
        return None


def _listed(names: Iterable[str]) -> str:
    """``-I, -D and --exclude``."""
    *rest, last = names
    return f"{', '.join(rest)} and {last}" if rest else last


def catalog_selection(func: Callable[..., R]) -> Callable[..., R]:
    """Add ``--kernels`` and ``--dtypes``, the selection of a catalog tree's instantiations."""
    for option in reversed(_CATALOG_SELECTION):
        func = option(func)
    return func


@overload
def tree_options(func: Callable[..., R]) -> Callable[..., R]: ...
@overload
def tree_options(
    *, default: str | None = None, jobs_help: str = _PREPROCESS_JOBS
) -> Callable[[Callable[..., R]], Callable[..., R]]: ...
def tree_options(
    func: Callable[..., R] | None = None,
    *,
    default: str | None = None,
    jobs_help: str = _PREPROCESS_JOBS,
) -> Callable[..., R] | Callable[[Callable[..., R]], Callable[..., R]]:
    """Add the kernel-tree options to a command, which gets their values as one
    ``tree: TreeOptions`` (``@tree_options``, or ``@tree_options(default="the bundled
    metal_src")`` to say what no ``--source-dir`` means; ``jobs_help`` says what ``-j`` runs in
    parallel when it is not the preprocessing)."""

    def add(func: Callable[..., R]) -> Callable[..., R]:
        @functools.wraps(func)
        def command(
            *args: object,
            source_dir: Path | None,
            include_dirs: tuple[Path, ...],
            defines: tuple[str, ...],
            exclude: tuple[str, ...],
            config_file: Path | None,
            jobs: int | None,
            **values: object,
        ) -> R:
            tree = TreeOptions(source_dir, include_dirs, defines, exclude, config_file, jobs)
            return func(*args, tree=tree, **values)

        added: Callable[..., R] = click.option(
            "-j", "--jobs", type=click.IntRange(min=1), default=None, help=jobs_help
        )(command)
        for option in reversed(_OPTIONS):
            added = option(added)
        help_text = _SOURCE_DIR_HELP + (f" Default: {default}." if default else "")
        return click.option("--source-dir", type=_DIR, default=None, help=help_text)(added)

    return add(func) if func is not None else add


def tree_sources(by: str, tree: TreeOptions) -> tuple[str, TreeSources | None]:
    """``--by`` and the entry file of every kernel of the tree named by ``--source-dir`` (a
    ``TreeSources``, discovered for each library's platform; None without one).
    ``--source-dir`` alone means ``--by source``; shared by every command that groups a
    library's functions by source file (report, compare, history)."""
    from builder.errors import UsageError

    if tree.source_dir is None:
        if replace(tree, source_dir=None) != TreeOptions():
            raise UsageError(
                "-I, -D, --exclude, --config and -j describe a kernel tree; "
                "name it with --source-dir"
            )
        return by, None
    ctx = click.get_current_context()
    if ctx.get_parameter_source("by") is click.core.ParameterSource.DEFAULT:
        by = "source"
    elif "source" not in by.split(","):
        raise UsageError(
            f"--source-dir attributes functions to entry files; it goes with "
            f"--by source, not --by {by}"
        )
    return by, _per_platform(tree)


def tree_of(budget: Budget) -> TreeSources:
    """The entry file of every kernel of a budget's tree, for each platform a measured library
    states: ``check_budgets``'s tree loader, reading a budget's ``source-dir`` as
    ``--source-dir`` is read."""
    tree = TreeOptions(
        budget.source_dir, budget.include_dirs, budget.defines, budget.exclude, budget.config
    )
    return _per_platform(tree)


def _per_platform(tree: TreeOptions) -> TreeSources:
    """``tree`` discovered, when the first library is measured, for that library's platform,
    with progress and a line on stderr saying what was found; its settings and folders are
    checked now, before any target is resolved (or downloaded)."""
    from builder.size.load import TreeSources

    config = tree.check()
    assert tree.source_dir is not None  # check() refuses a tree without one

    def discover(platform: Platform | None) -> KernelTree:
        found = tree.load(platform)
        click.echo(f"kernel tree {found.root}: {tree_summary(found)}", err=True)
        return found

    return TreeSources(discover, (tree.source_dir.resolve(), *config.include_dirs))


def tree_summary(found: KernelTree) -> str:
    """What a loaded tree holds, for a line on stderr: its kernels and entry files, and for a
    discovered tree the platform it was taken for and the entry files that platform's build
    leaves out (``[kernels.requires]``)."""
    from builder.kernels.platforms import left_out

    units = "entry files" if found.kind == "discovered" else "family headers"
    text = f"{len(found.kernels):,} kernels in {len(found.sources):,} {units}"
    platform = found.config.platform
    if found.kind != "discovered" or platform is None:
        return text
    text += f", for {platform.describe()}"
    skipped = left_out(found.config)
    return text + (f"; left out there: {', '.join(skipped)}" if skipped else "")


def library_platform(
    target: str, wheel_platform: str | None, command: str, member: str | None = None
) -> Platform | None:
    """The platform the one library of ``target`` (``member``: the one it names) states (its
    header and ``VERS`` tags), which ``command`` discovers the tree for; None when it states no
    Metal version. Resolving the target here raises what the command itself would (no
    library, several)."""
    from builder.inputs.targets import one_metallib, open_library, resolve_target
    from builder.kernels.platforms import platform_of
    from builder.metallib.provenance import library_provenance

    found = resolve_target(target, platform=wheel_platform, member=member)
    lib = one_metallib(target, found, member=None, command=command)
    with open_library(lib) as metallib:
        stated = library_provenance(metallib, sample=0).as_dict()
    return platform_of(stated, Path(lib.member or lib.path or target).name)
