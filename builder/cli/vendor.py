"""``vendor``: ``metallib_embed_headers`` and a generator needing only Python's standard library,
written into a project's own folder (``builder.jit.vendor``), and ``--check`` of such a copy."""

from __future__ import annotations

from pathlib import Path

import click

from builder.cli.publishing import say
from builder.cli.tree_options import option
from builder.errors import CheckFailed

__all__ = ["vendor_command"]


@click.command(
    "vendor",
    epilog="""\b
Examples:
  metallib-builder vendor cmake
  metallib-builder vendor --check cmake
Then, in the project's CMake: include(cmake/MetallibEmbed.cmake) and metallib_embed_headers(...).
Exit status: 0 written or current, 1 (--check) the copy is stale or edited, 2 DIR is no vendored
folder, or holds a MetallibEmbed.cmake of its own.
""",
)
@click.argument("folder", metavar="DIR", type=click.Path(file_okay=False, path_type=Path))
@option("check")
def vendor_command(folder: Path, check: bool) -> None:
    """Write MetallibEmbed.cmake and its generator into DIR: builds need no installed package.

    DIR/MetallibEmbed.cmake defines metallib_embed_headers(...) with the signature of the
    package's module; it runs DIR/metallib_embed/metallib_embed.py with the Python interpreter
    CMake's FindPython3 finds, as `python -I -S`: only the standard library, no package from
    site-packages. The generator is this version's own embed code, so it writes the bytes
    `metallib-builder embed` writes. Every file names the version it came from; the same version
    writes the same bytes. Nothing is written when the copy in DIR is current.
    """
    import builder
    from builder.jit.vendor import check_vendored, write_vendored

    version = builder.__version__
    if check:
        problem, count = check_vendored(folder)
        if problem is not None:
            raise CheckFailed(problem)
        say(f"vendor: {folder}: metallib-builder {version}'s copy, current ({count} files)")
        return
    written, files = write_vendored(folder)
    size = sum(len(data) for data in files.values())
    say(
        f"vendor: metallib-builder {version}'s MetallibEmbed.cmake and generator, {len(files)} "
        f"files, {size:,} bytes -> {folder}{'' if written else ' (current, unchanged)'}"
    )
