"""The options that name a kernel tree (``--source-dir``, ``-I``, ``-D``, ``--exclude``,
``--config``, ``-j``), shared by every command that reads one, and loading it with progress."""

from __future__ import annotations

import sys
from collections.abc import Callable
from pathlib import Path
from typing import TYPE_CHECKING, Any, TypeVar, overload

import click

if TYPE_CHECKING:
    from builder.kernels.discovery import KernelTree
    from builder.kernels.platforms import Platform
    from builder.size.load import TreeSources

__all__ = [
    "BUILD_JOBS",
    "library_platform",
    "load_tree_with_progress",
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
_PREPROCESS_JOBS = "Entry files preprocessed at once. Default: the number of CPUs."
BUILD_JOBS = (
    "Ninja's parallel jobs (-j of ninja; default: Ninja's own choice from the number of CPUs)."
)
"""What ``-j`` means for a command that builds (``build``, ``presets``)."""


F = TypeVar("F", bound=Callable[..., Any])


@overload
def tree_options(func: F) -> F: ...
@overload
def tree_options(
    *, default: str | None = None, jobs_help: str = _PREPROCESS_JOBS
) -> Callable[[F], F]: ...
def tree_options(
    func: F | None = None, *, default: str | None = None, jobs_help: str = _PREPROCESS_JOBS
) -> Any:
    """Add the kernel-tree options to a command (``@tree_options``, or
    ``@tree_options(default="the bundled metal_src")`` to say what no ``--source-dir`` means;
    ``jobs_help`` says what ``-j`` runs in parallel when it is not the preprocessing)."""

    def add(func: F) -> F:
        func = click.option(
            "-j", "--jobs", type=click.IntRange(min=1), default=None, help=jobs_help
        )(func)
        for option in reversed(_OPTIONS):
            func = option(func)
        help_text = _SOURCE_DIR_HELP + (f" Default: {default}." if default else "")
        added: F = click.option("--source-dir", type=_DIR, default=None, help=help_text)(func)
        return added

    return add(func) if func is not None else add


def load_tree_with_progress(source_dir: Path, **options: Any) -> KernelTree:
    """``load_tree`` with a files-done bar on stderr, only when stderr is a terminal (rich is
    not even imported otherwise: scripts and CI pay no start-up time for it)."""
    from builder.errors import UsageError
    from builder.kernels.discovery import load_tree

    if not source_dir.is_dir():
        raise UsageError(f"--source-dir {source_dir}: not a folder")
    if not sys.stderr.isatty():
        return load_tree(source_dir, **options)
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
        return load_tree(source_dir, on_progress=advance, **options)


def tree_sources(by: str, tree: dict[str, Any]) -> tuple[str, Any]:
    """``--by`` and the entry file of every kernel of the tree named by ``--source-dir`` (a
    ``TreeSources``, discovered for each library's platform; None without one), from the
    kernel-tree options' values ``tree`` (emptied of ``source_dir``). ``--source-dir`` alone
    means ``--by source``; shared by every command that groups a library's functions by source
    file (report, compare, history)."""
    from builder.errors import UsageError

    source_dir = tree.pop("source_dir")
    if source_dir is None:
        if any(tree.values()):
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
    return by, tree_of(source_dir, **tree)


def tree_of(source_dir: Path, **options: Any) -> TreeSources:
    """The entry file of every kernel of the tree at ``source_dir`` (``options``: the
    kernel-tree options' values), for each platform a measured library states: loaded with
    progress and a line on stderr saying what was found, for ``--source-dir`` and for a
    budget's ``source-dir`` alike. Discovered when the first library is measured; its settings
    and folders are checked now, before any target is resolved (or downloaded)."""
    from builder.kernels.settings_check import check_settings
    from builder.size.load import TreeSources

    check_settings(source_dir, **options)

    def discover(platform: Platform | None) -> KernelTree:
        found = load_tree_with_progress(source_dir, platform=platform, **options)
        click.echo(f"kernel tree {found.root}: {tree_summary(found)}", err=True)
        return found

    return TreeSources(discover)


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


def library_platform(target: str, wheel_platform: str | None, command: str) -> Platform | None:
    """The platform the one library of ``target`` states (its header and ``VERS`` tags), which
    ``command`` discovers the tree for; None when it states no Metal version. Resolving the
    target here raises what the command itself would (no library, several)."""
    from builder.inputs.targets import one_metallib, open_library, resolve_target
    from builder.kernels.platforms import platform_of
    from builder.metallib.provenance import library_provenance

    found = resolve_target(target, platform=wheel_platform)
    lib = one_metallib(
        target, found, member=None, command=command, choose="name one .metallib file"
    )
    with open_library(lib) as metallib:
        stated = library_provenance(metallib, sample=0).as_dict()
    return platform_of(stated, Path(lib.member or lib.path or target).name)
