"""``build``: drive CMake + Ninja, then print what the build produced, measured.

Progress goes to stderr (a bar on a terminal, plain ``[n/N]`` lines otherwise); the size summary
or ``--json`` goes to stdout. Exit 2 before configuring when AOT is asked for without a Metal
compiler or the selection is bad; exit 1 when the build itself fails. The build options and
settings are shared with ``variants`` (``builder.cli.variants``), which builds several.
"""

from __future__ import annotations

import json
from collections.abc import Callable
from pathlib import Path
from typing import Any, TypeVar

import click

__all__ = ["BUILD_ONLY", "build_command", "build_only_options", "build_options", "build_settings"]

F = TypeVar("F", bound=Callable[..., Any])


def _families(value: str | None) -> tuple[str, ...]:
    from builder.kernels.catalog import split_names

    return tuple(split_names(value) or ())


_SHARED = [
    click.option("-j", "--jobs", type=click.IntRange(min=1), default=None,
                 help="Parallel jobs for Ninja (default: Ninja's choice)."),
    click.option("--source-dir", type=click.Path(file_okay=False, exists=True, path_type=Path),
                 default=None, help="Kernel tree with catalog.json (default: bundled metal_src/)."),
]  # fmt: skip
_BUILD_ONLY = [
    click.option("--kernels", metavar="F,...",
                 help="Kernel families to build (default: every family in the catalog)."),
    click.option("--dtypes", metavar="D,...", help="dtypes to instantiate (default: all)."),
    click.option("--build-dir", type=click.Path(file_okay=False, path_type=Path),
                 default=Path("build"), show_default=True, help="Build directory."),
    click.option("--metal-compiler", metavar="PATH", default=None,
                 help="Metal compiler for AOT (default: $METAL_COMPILER, then xcrun)."),
    click.option("--metallib-linker", metavar="PATH", default=None,
                 help="metallib linker (default: $METALLIB_LINKER, beside the compiler, xcrun)."),
    click.option("--chunk-size", type=click.IntRange(min=1), default=None,
                 help="Instantiations per generated AOT source (default 250)."),
    click.option("--compress", is_flag=True, help="Compress embedded JIT sources."),
    click.option("--json", "as_json", is_flag=True, help="Print the sizes as JSON."),
    click.option("-v", "--verbose", is_flag=True, help="Show CMake's and Ninja's output."),
]  # fmt: skip
BUILD_ONLY = ("kernels", "dtypes", "build_dir", "metal_compiler", "metallib_linker", "chunk_size",
              "compress", "as_json", "verbose")  # fmt: skip
"""Parameter names of the options only a build takes (``variants`` refuses them with --from)."""


def build_options(func: F) -> F:
    """Add the build options."""
    for option in reversed([*_SHARED, *_BUILD_ONLY]):
        func = option(func)
    return func


def build_only_options(func: F) -> F:
    """Add the build options but ``-j`` and ``--source-dir``, for a command that declares those
    itself (``variants``, through the kernel-tree options)."""
    for option in reversed(_BUILD_ONLY):
        func = option(func)
    return func


def build_settings(**kw: Any) -> Any:
    """The ``BuildSettings`` for the build options' values."""
    from builder.cmake_build.cmake import BuildSettings
    from builder.cmake_build.driver import project_source_dir

    return BuildSettings(
        source_dir=project_source_dir(),
        build_dir=kw["build_dir"].resolve(),
        jit=bool(kw.get("jit")),
        kernels=_families(kw["kernels"]),
        jit_kernels=_families(kw.get("jit_kernels")),
        dtypes=_families(kw["dtypes"]),
        metal_compiler=kw["metal_compiler"],
        metallib_linker=kw["metallib_linker"],
        chunk_size=kw["chunk_size"],
        compress=kw["compress"],
        kernel_dir=kw["source_dir"].resolve() if kw["source_dir"] else None,
    )


@click.command("build")
@click.option("--jit/--no-jit", default=False, show_default=True,
              help="JIT: embed every selected family's source in the host library; "
              "no JIT: compile them AOT into mlx.metallib (needs the Metal compiler).")  # fmt: skip
@click.option(
    "--jit-kernels",
    metavar="F,...",
    help="Families built JIT whatever --jit says; the other selected ones AOT.",
)
@build_options
def build_command(**kw: Any) -> None:
    """Build the kernel library: AOT into mlx.metallib, JIT into the host library, or mixed.

    \b
    Examples:
      metallib-builder build --jit                       # no Metal compiler needed
      metallib-builder build --kernels unary,binary --dtypes float32,float16
      metallib-builder build --jit-kernels binary,copy   # mixed: those JIT, the rest AOT
      METAL_COMPILER=/path/to/metal metallib-builder build --no-jit
    """
    from builder.cmake_build.driver import run_build
    from builder.console import stderr_console
    from builder.render.build import build_text
    from builder.size.build_sizes import sizes_to_dict

    outcome = run_build(
        build_settings(**kw), jobs=kw["jobs"], console=stderr_console(), verbose=kw["verbose"]
    )
    stderr_console().print(
        f"Built {outcome.settings.build_dir} in {outcome.seconds:.1f} s "
        f"({outcome.edges_run} build steps)",
        markup=False,
        highlight=False,
        soft_wrap=True,
    )
    if kw["as_json"]:
        click.echo(json.dumps(sizes_to_dict(outcome.sizes), indent=1))
    else:
        click.echo(build_text(outcome.sizes))
