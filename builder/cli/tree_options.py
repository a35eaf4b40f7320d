"""The click options of the settings (``option``: one made from each setting's declaration in
``builder.settings.declared``), the kernel-tree options (``--source-dir``, ``-I``, ``-D``,
``--exclude``, ``--config``, ``-j``) shared by every command that reads a tree, and loading it
with progress."""

from __future__ import annotations

import functools
import sys
from collections.abc import Callable, Iterable, Mapping
from dataclasses import dataclass, fields, replace
from pathlib import Path
from typing import TYPE_CHECKING, Any, TypeVar

import click

from builder.settings.declared import Tree

if TYPE_CHECKING:
    from builder.kernels.kernel_tree import KernelTree
    from builder.kernels.platforms import Platform
    from builder.kernels.tree_config import TreeConfig
    from builder.size.budget_file import Budget
    from builder.size.load import TreeSources

__all__ = [
    "TreeOptions",
    "library_platform",
    "option",
    "options",
    "tree_of",
    "tree_options",
    "tree_sources",
    "tree_summary",
]

F = TypeVar("F", bound=Callable[..., object])
R = TypeVar("R")

_CLICK_TYPES = {
    "paths": click.Path(path_type=Path),
    "path": click.Path(dir_okay=False, path_type=Path),
    "real_path": click.Path(file_okay=False, path_type=Path),
    "int": click.IntRange(min=1),
    "count": click.INT,  # the setting's validator says what it must be
}
_MULTIPLE = ("flags", "paths", "texts", "globs")
"""Kinds whose flag repeats (``names`` take one comma-separated value)."""
_TREE = [f.name for f in fields(Tree)]
"""The kernel-tree options, ``--source-dir`` first (``builder.settings.declared.Tree``)."""


def option(name: str, *, note: str | None = None, default: object = None) -> Callable[[F], F]:
    """The click option of the setting ``name`` (``builder.settings.declared``), with its flag,
    help, metavar, type and choices as declared; ``note`` is a sentence the command adds to the
    help (what no value means there), ``default`` the command's own default where it has one
    (the build folder). The parameter is named like the setting (or its ``param``)."""
    from builder.settings.declared import setting

    s = setting(name)
    flag, param = s.option, s.param or s.name
    if flag is None:
        raise ValueError(f"setting {name} has no command-line flag")
    help_text = f"{s.help} {note}" if note else s.help

    def checked(_ctx: click.Context, _param: click.Parameter, value: object) -> object:
        read = s.from_cli(value)  # the setting's one check: UsageError (exit 2) naming the flag
        return read if s.kind in ("size", "growth") else value  # a limit: as it was read

    if s.kind == "switch":  # --x/--no-x, None when neither is given
        return click.option(flag, param, help=help_text, default=None, callback=checked)
    shown, kind_type = default, _CLICK_TYPES.get(s.kind)
    if s.choices:
        kind_type, shown = click.Choice(s.choices), s.default
    # a flag with a value of its own alone (--jit): it takes the next word only when that is
    # not an option, so `--jit --build-dir X` is --jit alone
    bare: dict[str, Any] = {"is_flag": True if s.kind == "bool" else None}
    if s.bare is not None:
        bare = {"is_flag": False, "flag_value": s.bare}
    return click.option(
        *flag.split("/"),
        param,
        help=help_text,
        metavar=s.metavar,
        type=kind_type,
        multiple=s.kind in _MULTIPLE,
        default=False if s.kind == "bool" else shown,
        show_default=shown is not None,
        callback=checked,
        **bare,
    )


def options(*added: str | Callable[[Any], Any]) -> Callable[[F], F]:
    """The options of the settings named (or other option decorators) together, in ``--help``
    in the order given: ``@options("kernels", "dtypes")``."""

    def add(func: F) -> F:
        for item in reversed(added):
            func = option(item)(func) if isinstance(item, str) else item(func)
        return func

    return add


@dataclass(frozen=True, kw_only=True)
class TreeOptions(Tree):
    """The kernel-tree options' values as one record: what ``@tree_options`` hands a command
    as its ``tree`` parameter. The tree (``builder.settings.declared.Tree``, the build request's
    part: the settings, read and checked) and ``-j``."""

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
                config_file=self.config,
                jobs=self.jobs,
                on_progress=on_progress,
                platform=platform,
            )

        if not sys.stderr.isatty():
            return read()
        from rich.progress import BarColumn, MofNCompleteColumn

        from builder.cli.console import stderr_bar

        with stderr_bar("preprocess", BarColumn(), MofNCompleteColumn(), "entry files") as bar:
            task = bar.add_task("preprocess", total=None)
            return read(lambda done, total, _entry: bar.update(task, completed=done, total=total))

    def check(self) -> TreeConfig:
        """Raise what loading would for the tree's settings and folders (exit 2), without
        preprocessing, and return the settings with the flags over them.

        ``report LIBRARY --source-dir TREE`` and ``variants --from LIBRARY`` discover the tree
        for the platform the library states (``builder.kernels.platforms``), so discovery waits
        until the library is resolved, which for ``PACKAGE==VERSION`` is a wheel download. A
        mistake in the tree's own settings (a bad ``metallib.toml``, an include folder that is
        not there, a ``[kernels.requires]`` or ``--exclude`` glob matching no entry file) does
        not depend on the platform: it is reported here at once, with nothing downloaded. The
        platform's own exclusions are not applied: they only ever leave out more."""
        from builder.errors import UsageError
        from builder.kernels.discovery import checked_entries, is_catalog_tree

        source_dir = self.source_dir
        if source_dir is None:
            raise UsageError("no --source-dir: name the kernel tree")
        if not Path(source_dir).is_dir():
            raise UsageError(f"--source-dir {source_dir}: not a folder")
        if is_catalog_tree(source_dir):  # reading a catalog is cheap: its own checks, whole
            return self.load().config
        config = self.settings(source_dir)
        checked_entries(Path(source_dir), config)
        return config

    def settings(self, source_dir: Path) -> TreeConfig:
        """The tree's settings file (metallib.toml, or ``--config``) with the flags over it."""
        from builder.kernels.tree_config import find_config, merge_flags

        found = find_config(source_dir, self.config, self.include_dirs)
        return merge_flags(found, self.include_dirs, self.defines, self.exclude)

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


def tree_options(default: str | None = None) -> Callable[[Callable[..., R]], Callable[..., R]]:
    """Add the kernel-tree options to a command, which gets their values as one
    ``tree: TreeOptions``; ``default`` says what no ``--source-dir`` means
    (``@tree_options("the bundled metal_src")``)."""

    def add(func: Callable[..., R]) -> Callable[..., R]:
        @functools.wraps(func)
        def command(*args: object, jobs: int | None, **values: Any) -> R:
            tree = TreeOptions(jobs=jobs, **{name: values.pop(name) for name in _TREE})
            return func(*args, tree=tree, **values)

        note = f"Default: {default}." if default else None
        return options(option("source_dir", note=note), *_TREE[1:], "jobs")(command)

    return add


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
    tree = TreeOptions(**{name: getattr(budget, name) for name in _TREE})
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
    from builder.metallib.reader import library_provenance

    found = resolve_target(target, platform=wheel_platform, member=member)
    lib = one_metallib(target, found, member=None, command=command)
    with open_library(lib) as metallib:
        stated = library_provenance(metallib, sample=0).as_dict()
    return platform_of(stated, Path(lib.member or lib.path or target).name)
