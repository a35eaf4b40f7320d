"""A kernel tree's settings checked before a command spends anything on its target.

``report LIBRARY --source-dir TREE`` and ``variants --from LIBRARY`` discover the tree for the
platform the library states (``builder.kernels.platforms``), so discovery waits until the library
is resolved, which for ``PACKAGE==VERSION`` is a wheel download. A mistake in the tree's own
settings (a bad ``metallib.toml``, an include folder that is not there, a
``[kernels.requires]`` or ``--exclude`` glob matching no entry file) does not depend on the
platform: :func:`check_settings` reads and checks them first, so it is reported at once, exit 2,
with nothing downloaded.
"""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path

from builder.errors import UsageError
from builder.kernels.discovery import checked_entries, is_catalog_tree, load_tree
from builder.kernels.tree_config import TreeConfig, find_config, merge_flags

__all__ = ["check_settings"]


def check_settings(
    source_dir: Path,
    *,
    include_dirs: Sequence[Path] = (),
    defines: Sequence[str] = (),
    exclude: Sequence[str] = (),
    config_file: Path | None = None,
) -> TreeConfig:
    """Raise what ``load_tree`` would for ``source_dir``'s settings and folders (UsageError,
    exit 2), without preprocessing anything; return the settings with the flags over them.
    The platform's own exclusions are not applied: they only ever leave out more, and the
    checks here hold for every platform."""
    if not Path(source_dir).is_dir():
        raise UsageError(f"--source-dir {source_dir}: not a folder")
    if is_catalog_tree(source_dir):  # reading a catalog is cheap: its own checks, whole
        return load_tree(
            source_dir,
            include_dirs=include_dirs,
            defines=defines,
            exclude=exclude,
            config_file=config_file,
        ).config
    settings = find_config(source_dir, config_file, include_dirs)
    config = merge_flags(settings, include_dirs, defines, exclude)
    checked_entries(Path(source_dir), config)
    return config
