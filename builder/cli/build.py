"""``build``: drive CMake + Ninja, then print what the build produced, measured.

Progress goes to stderr (a bar on a terminal, plain ``[n/N]`` lines otherwise); then stdout gets
what ``report BUILD_DIR`` prints for the build (``--format json``: its JSON report). Exit 2 before
configuring when AOT is asked for without a Metal compiler or the selection is bad; exit 1 when
the build itself fails. The build options and
settings are shared with ``presets`` (``builder.cli.build``), which builds several.

``presets``: build every preset of CMakePresets.json this machine can build, side by side,
and compare their sizes.

The bundled (catalog) tree is built with CMake + Ninja once per preset, each in a subfolder of
``--build-dir`` (``builder.cmake_build.driver``). Writing subsets of a built library is another
job, ``variants --from`` (``builder.cli.variants``): a preset is a build, a variant a subset.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from dataclasses import asdict
from pathlib import Path
from typing import TYPE_CHECKING, TypeVar

import click

from builder.cli.publishing import format_option
from builder.cli.tree_options import option, tree_options
from builder.errors import UsageError

if TYPE_CHECKING:
    from builder.cli.tree_options import TreeOptions
    from builder.cmake_build.request import BuildRequest
    from builder.size.report import Report

__all__ = [
    "build_command",
    "build_only_options",
    "build_report_text",
    "build_request",
    "no_wait_option",
    "presets_command",
]


F = TypeVar("F", bound=Callable[..., object])


def _build_only() -> list[Callable[[F], F]]:
    """The options of every build setting the kernel-tree options and ``--jit``/``--aot`` do
    not add, in declaration order: a build setting added to the request is on ``build`` and
    ``presets`` with nothing more said here."""
    from dataclasses import fields

    from builder.cmake_build.request import Tree, request_settings

    placed = {f.name for f in fields(Tree)} | {"jit", "aot", "build_dir"}
    names = [name for name in request_settings() if name not in placed]
    return [option("build_dir", default=Path("build")), *map(option, names), option("verbose")]


_BUILD_ONLY = _build_only()
no_wait_option = option("no_wait")
"""Shared by ``build``, ``presets`` and ``variants`` (each locks the folder it writes)."""


def build_only_options(func: F) -> F:
    """Add the options only a build takes (``-j`` and ``--source-dir`` come with the kernel-tree
    options, ``builder.cli.tree_options``)."""
    for add in reversed(_BUILD_ONLY):
        func = add(func)
    return func


def build_request(values: Mapping[str, object]) -> BuildRequest:
    """The ``BuildRequest`` of the build options' values (and the kernel-tree options'): each
    click parameter is named like its request field (``builder.cmake_build.request``)."""
    from builder.cmake_build.request import BuildRequest

    return BuildRequest.from_options(values)


_tree_options = tree_options(default="the bundled metal_src/ (a catalog tree)", jobs="build_jobs")


@click.command(
    "build",
    epilog="""\b
Examples:
  metallib-builder build --jit '*'                   # bundled tree; no Metal compiler needed
  metallib-builder build --kernels unary,binary --dtypes float32,float16
  metallib-builder build --jit binary,copy           # mixed: those JIT, the rest AOT
  metallib-builder build --source-dir mlx/backend/metal/kernels -I . \\
      --exclude fence.metal --exclude '*_nax.metal' --deployment-target 14.0
  metallib-builder build --source-dir kernels --jit 'x*.metal'  # those JIT, the rest AOT
  metallib-builder build --source-dir kernels --aot gemv.metal  # [build] aot-only stay AOT too
  METAL_COMPILER=/path/to/metal metallib-builder build --metal-flags '-Wall -O3'
""",
)
@option("jit")
@option("aot")
@_tree_options
@no_wait_option
@build_only_options
@format_option(
    ("table", "json"),
    "table for people; json (schema 2) for scripts: what report BUILD_DIR --format json prints.",
)
def build_command(
    tree: TreeOptions, verbose: bool, no_wait: bool, fmt: str, **options: object
) -> None:
    """Build a kernel tree: AOT into one metallib, JIT into the host library, or mixed.

    The tree is the bundled catalog tree, or any folder of .metal entry files (--source-dir,
    with -I/-D/--exclude/--config as for `kernels`): each entry file is compiled once into
    .air and all are linked into <library>.metallib ([build] library of metallib.toml, else
    the folder's name). -j N is Ninja's parallel jobs (ninja -j N). One run at a time builds in a
    build folder: another one waits for it (--no-wait: exit 2 instead).
    """
    from builder.cli.console import stderr_console
    from builder.cmake_build.driver import run_build

    outcome = run_build(
        build_request({**options, **asdict(tree)}),
        jobs=tree.jobs,
        console=stderr_console(),
        verbose=verbose,
        wait=not no_wait,
    )
    stderr_console().print(
        f"Built {outcome.request.build_dir} in {outcome.seconds:.1f} s "
        f"({outcome.edges_run} build steps)",
        markup=False,
        highlight=False,
        soft_wrap=True,
    )
    click.echo(build_report_text(outcome.reports, as_json=fmt == "json"), nl=False)


def build_report_text(reports: list[Report], *, as_json: bool) -> str:
    """What ``report BUILD_DIR`` prints for the build (its table, or with ``as_json`` its JSON):
    one measurement and one rendering of a build, whichever command shows it."""
    if as_json:
        from builder.render.json_docs import report_json

        return report_json(reports)
    from builder.cli.console import stdout_color, stdout_table_width
    from builder.render.formats import report_output

    return report_output(reports, "table", 20, stdout_color(), stdout_table_width())


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
    from builder.cmake_build.driver import build_presets
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
