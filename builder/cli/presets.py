"""``presets``: build every preset of CMakePresets.json this machine can build, side by side,
and compare their sizes.

The bundled (catalog) tree is built with CMake + Ninja once per preset, each in a subfolder of
``--build-dir`` (``builder.cmake_build.presets``). Writing subsets of a built library is another
job, ``variants --from`` (``builder.cli.variants``): a preset is a build, a variant a subset.
"""

from __future__ import annotations

from pathlib import Path

import click

from builder.cli.build import build_only_options, build_request, no_wait_option
from builder.cli.publishing import format_option
from builder.cli.tree_options import option
from builder.errors import UsageError

__all__ = ["presets_command"]

_EPILOG = """\b
Examples:
  metallib-builder presets --build-dir build -j 2
  metallib-builder presets --kernels unary,binary --build-dir build --format json
"""


@click.command("presets", epilog=_EPILOG)
@option("source_dir", note="presets: a catalog tree only. Default: the bundled metal_src/.")
@option("build_jobs")
@format_option(("table", "json"), "Output on stdout: table, or json (schema 1).")
@no_wait_option
@build_only_options
def presets_command(
    source_dir: Path | None,
    jobs: int | None,
    fmt: str,
    verbose: bool,
    no_wait: bool,
    **options: object,
) -> None:
    """Build the presets of CMakePresets.json side by side and compare their sizes.

    \b
    Each preset this machine can build is built in a subfolder of --build-dir:
      jit-on   every unit JIT (host C++ compiler only)
      jit-off  every unit AOT into mlx.metallib (needs the Metal compiler)
      mixed    the units of the mixed preset in CMakePresets.json JIT, the rest
               AOT (needs the Metal compiler)
    A preset this machine cannot build is listed with the reason; the exit code is 0 when
    every buildable preset built. --source-dir names a catalog tree, -j Ninja's jobs.
    To write subsets of a built library instead, see 'variants --from'.
    """
    from builder.cli.console import stderr_console
    from builder.cmake_build.presets import build_presets
    from builder.errors import CheckFailed
    from builder.render.build import presets_json, presets_text

    if source_dir is not None and not source_dir.is_dir():
        raise UsageError(f"--source-dir {source_dir}: not a folder")
    request = build_request({**options, "source_dir": source_dir})
    results = build_presets(
        request,
        request.build_dir,
        jobs=jobs,
        console=stderr_console(),
        verbose=verbose,
        wait=not no_wait,
    )
    if fmt == "json":
        click.echo(presets_json(results))
    else:
        click.echo(presets_text(results))
    failed = [r.name for r in results if r.reason and r.reason.startswith("build failed")]
    if failed:
        raise CheckFailed(f"preset(s) {', '.join(failed)} failed to build")
