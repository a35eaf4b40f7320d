"""``build`` (CMake + Ninja, then what the build produced, measured), ``presets`` (several
builds side by side, ``builder.cmake_build.driver``) and ``embed`` (run-time preambles,
``builder.jit.generate.write_embed``).

Progress goes to stderr (a bar on a terminal, plain ``[n/N]`` lines otherwise); then stdout gets
what ``report BUILD_DIR`` prints for the build. Writing subsets of a built library is another
job, ``variants --from``: a preset is a build, a variant a subset.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import asdict
from pathlib import Path
from typing import TYPE_CHECKING, TypeVar

import click

from builder.cli.publishing import format_option, say, terminal
from builder.cli.tree_options import option, tree_options
from builder.errors import UsageError

if TYPE_CHECKING:
    from builder.cli.tree_options import TreeOptions

__all__ = [
    "build_command",
    "build_only_options",
    "embed_command",
    "no_wait_option",
    "presets_command",
]


F = TypeVar("F", bound=Callable[..., object])


def _build_only() -> list[Callable[[F], F]]:
    """The options of every build setting the kernel-tree options and ``--jit``/``--aot`` do
    not add, in declaration order: a build setting added to the request is on ``build`` and
    ``presets`` with nothing more said here (``-j`` and ``--source-dir`` come with the
    kernel-tree options, ``builder.cli.tree_options``)."""
    from dataclasses import fields

    from builder.cmake_build.plan_model import Tree, request_settings

    placed = {f.name for f in fields(Tree)} | {"jit", "aot", "build_dir"}
    names = [name for name in request_settings() if name not in placed]
    return [option("build_dir", default=Path("build")), *map(option, names), option("verbose")]


_BUILD_ONLY = _build_only()
no_wait_option = option("no_wait")
"""Shared by ``build``, ``presets`` and ``variants`` (each locks the folder it writes)."""


def build_only_options(func: F) -> F:
    """Add the options only a build takes; each click parameter is named like its field of the
    ``BuildRequest`` (``BuildRequest.from_options``)."""
    for add in reversed(_BUILD_ONLY):
        func = add(func)
    return func


_tree_options = tree_options(default="the bundled metal_src/ (a catalog tree)")


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
    ("table", "json", "markdown", "csv"),
    "table for people; json (schema 2) for scripts; markdown, csv: what report BUILD_DIR "
    "--format FMT prints.",
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
    from builder.cmake_build.plan_model import BuildRequest

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


@click.command(
    "embed",
    epilog="""\b
Examples:
  metallib-builder embed metal_src/unary/unary.h -I metal_src -o unary_jit.cpp
  metallib-builder embed --preamble common=utils.h --preamble common=binary_ops.h -I . -o c.cpp
  metallib-builder embed mlx/backend/metal/kernels/unary.h mlx/backend/metal/kernels/binary.h \\
      -I . --preamble-define MLX_METAL_JIT=1 -o mlx_preambles.cpp \\
      --jit-namespace mlx::core::metal \\
      --jit-api cstring --no-jit-lookup --depfile mlx_preambles.d
""",
)
@click.argument("headers", nargs=-1, type=click.Path(dir_okay=False, path_type=Path))
@click.option(
    "--preamble",
    "preambles",
    multiple=True,
    metavar="NAME=HEADER",
    help="A preamble under the function name NAME (repeatable; NAME again adds HEADER to the "
    "same preamble, inlined in the order given), after the HEADERs, as a tree's "
    "[build.preambles] names them. variants --from prints embed commands with it.",
)
@option(
    "include_dirs",
    note="Searched after the including file's own folder; #line markers name files relative "
    "to the first -I that holds them.",
)
@option("preamble_defines")
@click.option("-D", "--define", "old_defines", multiple=True, hidden=True)  # deprecated: scripts
@click.option(
    "-o",
    "--output",
    "output",
    required=True,
    type=click.Path(dir_okay=False, path_type=Path),
    help="The C++ source to write (atomically; left untouched when unchanged).",
)
@option("jit_namespace")
@option("jit_api")
@option("jit_lookup")
@click.option(
    "--depfile",
    type=click.Path(dir_okay=False, path_type=Path),
    default=None,
    metavar="FILE",
    help="Also write a Make-syntax depfile: OUT depends on every file inlined (for Ninja, Make, "
    "CMake's DEPFILE); written atomically, left untouched when unchanged.",
)
@click.option(
    "--strip-comments",
    is_flag=True,
    help="Leave comments out of the embedded text (line numbers are kept, so #line markers "
    "stay exact). Smaller; run-time diagnostics show code without its comments.",
)
@click.option(
    "--allow-outside-includes",
    is_flag=True,
    help="Inline quoted includes that resolve outside the -I folders and the HEADERs' folders "
    "(refused by default: a tree from someone else must not embed files of this machine).",
)
def embed_command(
    headers: tuple[Path, ...],
    preambles: tuple[str, ...],
    include_dirs: tuple[Path, ...],
    preamble_defines: tuple[str, ...],
    old_defines: tuple[str, ...],
    output: Path,
    jit_namespace: str | None,
    jit_api: str | None,
    jit_lookup: bool | None,
    depfile: Path | None,
    strip_comments: bool,
    allow_outside_includes: bool,
) -> None:
    """Write a C++ source holding one run-time preamble per HEADER (and per --preamble NAME).

    Each preamble is the header with its quoted includes inlined in inclusion order (each file
    once, with #line markers), angle includes kept for the run-time compiler; nothing else of
    the text is edited. No Metal compiler is needed. Exit 2 with one line naming the file: a
    quoted include that cannot be found, or that resolves outside the -I folders and the
    HEADERs' folders (see --allow-outside-includes); an OUT or FILE that is one of the files read;
    an OUT that cannot be written (nothing partial is left).
    """
    from builder.jit.generate import named_preambles, write_embed
    from builder.settings.declared import APIS, DEFAULT_NAMESPACE

    for folder in include_dirs:  # a folder that is not there would quietly resolve nothing
        if not folder.is_dir():
            raise UsageError(f"-I {folder}: not a folder")
    named = named_preambles(preambles)
    changed, written = write_embed(
        headers,
        include_dirs,
        output,
        (*preamble_defines, *old_defines),
        jit_namespace or DEFAULT_NAMESPACE,
        strip=strip_comments,
        api=jit_api or APIS[0],
        lookup=jit_lookup is not False,
        depfile=depfile,
        allow_outside_includes=allow_outside_includes,
        named=named,
    )
    files = len({f for p in written for f in p.files})
    say(
        f"embed: {len(written)} preamble(s) from {files} file(s), "
        f"{sum(len(p.text.encode()) for p in written):,} bytes -> {output}"
        f"{'' if changed else ' (unchanged)'}"
    )
