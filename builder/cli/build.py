"""``build`` (CMake + Ninja, then what the build produced, measured) and ``presets`` (several
builds side by side, ``builder.cmake_build.driver``).

Progress goes to stderr (a bar on a terminal, plain ``[n/N]`` lines otherwise); then stdout gets
what ``report BUILD_DIR`` prints for the build. Writing subsets of a built library is another
job, ``variants --from``: a preset is a build, a variant a subset.
"""

from __future__ import annotations

from dataclasses import asdict, fields
from pathlib import Path
from typing import TYPE_CHECKING

import click

from builder.cli.publishing import format_option, terminal
from builder.cli.tree_options import option, options, tree_options
from builder.errors import UsageError

if TYPE_CHECKING:
    from builder.cli.tree_options import TreeOptions

__all__ = ["build_command", "build_only_options", "presets_command"]


def _build_only() -> list[str]:
    """Every build setting the kernel-tree options and ``--jit``/``--aot`` do not add, in
    declaration order: a build setting (``builder.settings.declared.REQUEST``) is on ``build``
    and ``presets`` with nothing more said here (``-j`` and ``--source-dir`` come with the
    kernel-tree options, ``builder.cli.tree_options``). Each click parameter is named like its
    setting (``BuildRequest.from_options``)."""
    from builder.settings.declared import REQUEST, Tree

    placed = {f.name for f in fields(Tree)} | {"jit", "aot", "build_dir"}
    return [s.name for s in REQUEST if s.name not in placed]


build_only_options = options(
    "no_wait", option("build_dir", default=Path("build")), *_build_only(), "verbose"
)
"""``--no-wait`` and the options only a build takes."""


@click.command(
    "build",
    epilog="""\b
Examples:
  metallib-builder build --jit                       # every unit JIT: no Metal compiler needed
  metallib-builder build --kernels unary,binary --dtypes float32,float16  # every unit AOT
  metallib-builder build --jit binary,copy           # mixed: those JIT, the rest AOT
  metallib-builder build --source-dir mlx/backend/metal/kernels -I . \\
      --exclude fence.metal --exclude '*_nax.metal' --deployment-target 14.0
  metallib-builder build --source-dir kernels --jit 'x*.metal'  # those JIT, the rest AOT
  metallib-builder build --source-dir kernels --aot gemv.metal  # [build] aot-only stay AOT too
  METAL_COMPILER=/path/to/metal metallib-builder build --metal-flags '-Wall -O3'
""",
)
@options("jit", "no_jit", "aot")
@tree_options("the bundled metal_src/ (a catalog tree)")
@build_only_options
@format_option(
    ("table", "json", "markdown", "csv"),
    "table for people; json (schema 2) for scripts; markdown, csv: what report BUILD_DIR "
    "--format FMT prints.",
)
def build_command(
    tree: TreeOptions, verbose: bool, no_wait: bool, no_jit: bool, fmt: str, **options: object
) -> None:
    """Build a kernel tree: AOT into one metallib, JIT into the host library, or mixed.

    The tree is the bundled catalog tree, or any folder of .metal entry files (--source-dir,
    with -I/-D/--exclude/--config as for `kernels`): each entry file is compiled once into
    .air and all are linked into <library>.metallib ([build] library of metallib.toml, else
    the folder's name). --jit alone builds every unit JIT, no --jit (or --no-jit) every unit
    AOT, --jit GLOBS or --aot GLOBS a split. -j N is Ninja's parallel jobs (ninja -j N). One run
    at a time builds in a build folder: another one waits for it (--no-wait: exit 2 instead).
    """
    from builder.cli.console import stderr_console
    from builder.cmake_build.driver import run_build
    from builder.cmake_build.plan_model import BuildRequest

    if no_jit and (options.get("jit") or options.get("aot")):
        asked = "--jit" if options.get("jit") else "--aot"
        raise UsageError(f"--no-jit builds every unit AOT and {asked} asks for JIT ones: give one")
    outcome = run_build(
        BuildRequest.from_options({**options, **asdict(tree)}),
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
    # what `report BUILD_DIR --format FMT` prints: one measurement and one view of a build
    from builder.publish.outputs import report_output

    click.echo(report_output(outcome.reports, fmt, None, *terminal(True)), nl=False)


@click.command(
    "presets",
    epilog="""\b
Examples:
  metallib-builder presets --build-dir build -j 2
  metallib-builder presets --kernels unary,binary --build-dir build --format json
""",
)
@option("source_dir", note="presets: a catalog tree only. Default: the bundled metal_src/.")
@option("jobs")
@format_option(
    ("table", "json", "markdown", "csv"),
    "Output on stdout: table, json (schema 1), markdown, or csv (a preset's mode and bytes apart).",
)
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
    from builder.cmake_build.plan_model import BuildRequest
    from builder.errors import CheckFailed
    from builder.publish.outputs import presets_output

    if source_dir is not None and not source_dir.is_dir():
        raise UsageError(f"--source-dir {source_dir}: not a folder")
    request = BuildRequest.from_options({**options, "source_dir": source_dir})
    results = build_presets(
        request,
        request.build_dir,
        jobs=jobs,
        console=stderr_console(),
        verbose=verbose,
        wait=not no_wait,
    )
    click.echo(presets_output(results, fmt), nl=False)
    failed = [r.name for r in results if r.reason and r.reason.startswith("build failed")]
    if failed:
        raise CheckFailed(f"preset(s) {', '.join(failed)} failed to build")
