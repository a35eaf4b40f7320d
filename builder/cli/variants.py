"""``variants --from TARGET``: every AOT/JIT split of a kernel tree written as a real subset of
a built library (``builder.subsets.variants``), measured; nothing is compiled. Figures go to
stdout; progress goes to stderr, and only on a terminal.
"""

from __future__ import annotations

import sys
from pathlib import Path
from typing import TYPE_CHECKING

import click

from builder.cli.publishing import format_option, given, say
from builder.cli.tree_options import option, options, tree_options
from builder.errors import UsageError

if TYPE_CHECKING:
    from builder.cli.tree_options import TreeOptions
    from builder.kernels.kernel_tree import KernelTree

__all__ = ["variants_command"]

_FORMATS = ("table", "json", "markdown", "csv", "html")
RUN_FILE = "variants.json"
_EPILOG = """\b
Examples:
  metallib-builder variants --from mlx-metal==0.32.1 \\
      --source-dir mlx/mlx/backend/metal/kernels -I mlx \\
      --exclude fence.metal --exclude '*_nax.metal' -o variants/
  metallib-builder variants --from mlx.metallib --source-dir kernels -I . \\
      --jit 'steel/**/*.metal' --aot 'gemv.metal,conv.metal' -o variants/ --format json
  metallib-builder variants --from build/ --source-dir kernels --ceiling 60MB -o variants/
  metallib-builder variants --from mlx-metal==0.32.1 --source-dir kernels -I . \\
      --ceiling 10MB --ceiling-of download -o variants/
  metallib-builder variants --from metal-flash-sdpa==0.1.2 --platform macosx_11_0_arm64 \\
      --source-dir sdpa-metal -o variants/
"""


@click.command("variants", epilog=_EPILOG)
@click.option(
    "--from",
    "from_target",
    metavar="TARGET",
    required=True,
    help="Write the variants as subsets of this library (.metallib, a binary or .whl "
    "holding one, PACKAGE==VERSION, build folder); needs --source-dir and -o.",
)
@option("member")
@tree_options()
@options("variant_aot", "variant_jit", "keep_aot")
@click.option(
    "--ceiling",
    metavar="SIZE",
    default=None,
    help="Add the variant 'planned' whose metallib is at most SIZE (bytes, "
    "or KB/MB/KiB/MiB) with the least compiled at run time, by a measured proxy: the "
    "first-use source bytes (preambles and instantiation lines each JIT entry file's first "
    "use compiles); exit 1 when no split reaches it.",
)
@click.option(
    "--ceiling-of",
    type=click.Choice(("metallib", "download")),
    default="metallib",
    show_default=True,
    help="With --ceiling: what must fit. metallib: the file's bytes (exact); download: "
    "the metallib as a wheel stores it (zlib 6, modelled) plus the embedded source "
    "compressed, planned on estimates and measured on the planned split.",
)
# deprecated spellings, for scripts: a budget is the `budget` command's limit (glossary)
@click.option("--budget", "old_ceiling", metavar="SIZE", default=None, hidden=True)
@click.option(
    "--budget-of", "old_ceiling_of", type=click.Choice(("metallib", "download")), hidden=True
)
@options("jit_namespace", "jit_api", "jit_lookup")
@option(
    "download",
    note="Each variant's metallib's and its total download (one compression pass per "
    "variant); --ceiling-of download implies it.",
)
@click.option(
    "-o",
    "--output",
    "outdir",
    type=click.Path(file_okay=False, path_type=Path),
    default=None,
    help="Folder for OUTDIR/<variant>/<library>.metallib and "
    "jit_sources.cpp, replaced as a whole when the run succeeds: a "
    "new or empty folder, or an earlier run's.",
)
@format_option(
    _FORMATS,
    "Output on stdout: table, json (schema 2), markdown, csv (a row per variant) or html (one "
    "self-contained page).",
)
@options("platform", "no_wait")
def variants_command(
    from_target: str,
    member: str | None,
    tree: TreeOptions,
    aot: tuple[str, ...],
    jit: tuple[str, ...],
    keep_aot: tuple[str, ...],
    ceiling: str | None,
    ceiling_of: str,
    old_ceiling: str | None,
    old_ceiling_of: str | None,
    jit_namespace: str | None,
    jit_api: str | None,
    jit_lookup: bool | None,
    download: bool,
    outdir: Path | None,
    fmt: str,
    platform: str | None,
    no_wait: bool,
) -> None:
    """Write a library's AOT/JIT variants as real subsets and compare their sizes.

    \b
    With --from TARGET --source-dir DIR -o OUTDIR, write each split of the tree as a real
    subset of TARGET, on any OS, without compiling (to build the presets of
    CMakePresets.json instead, see 'presets'): OUTDIR/<variant>/<library>.metallib holds
    the functions of its AOT entry files (byte-identical; functions no entry file produces stay
    too) and OUTDIR/<variant>/jit_sources.cpp its JIT entry files' headers as 'embed' writes
    them; OUTDIR/variants.json describes the run (the JSON output). A failed or interrupted
    run leaves the previous OUTDIR as it was (-o, --no-wait).
    Variants:
      all-aot   the input as it is
      jit-mode  metallib.toml's aot-only entry files AOT, every other JIT (when it names some)
      aot-N     per --aot: those entry files AOT, every other JIT
      jit-N     per --jit: those entry files JIT, the rest AOT
      planned   with --ceiling: the least compiled at run time within the ceiling, by
                the first-use source bytes (a proxy of run-time compile cost), then
                the fewest kernels; --keep-aot and [build] keep-aot pin entry files AOT
    Printed per variant: metallib bytes, embedded source bytes (raw and zlib level 9), what
    ships in total, kernels compiled at run time, JIT entry files; with --download also the
    metallib's download (as a wheel stores it, modelled) and the total download. Exit 1 when
    --ceiling cannot be met (the message says the least reachable size).
    """
    from builder.cli.tree_options import library_platform, tree_summary
    from builder.files.atomic import check_not_an_input, write_atomic
    from builder.files.bounds import parse_size
    from builder.files.output_folder import replaced_folder
    from builder.render.variants import variants_json
    from builder.subsets.variants import make_variants

    source_dir = tree.source_dir
    if source_dir is None:
        raise UsageError(
            "variants --from needs --source-dir: the kernel tree the library was built from"
        )
    if outdir is None:
        raise UsageError("variants --from needs -o OUTDIR: where to write the variants")
    ceiling = ceiling if old_ceiling is None else old_ceiling
    ceiling_of = ceiling_of if old_ceiling_of is None else old_ceiling_of
    size = parse_size(ceiling) if ceiling is not None else None
    if size is not None and size <= 0:
        raise UsageError(f"--ceiling {ceiling}: must be more than 0 bytes")
    if size is None and (given("ceiling_of") or old_ceiling_of is not None):
        raise UsageError("--ceiling-of says what --ceiling limits; give --ceiling SIZE too")
    if size is None and keep_aot:
        raise UsageError("--keep-aot pins entry files in the --ceiling plan; give --ceiling SIZE")
    check_not_an_input(
        outdir,
        [from_target, source_dir, *tree.include_dirs, tree.config],
        replaces_folder=True,
    )
    tree.check()  # before the target is resolved (a download)
    found = tree.load(library_platform(from_target, platform, "variants --from", member))
    found = _interface(found, jit_namespace, jit_api, jit_lookup)
    terminal = sys.stderr.isatty()
    if terminal:  # progress, as the rest: scripts read warnings only
        say(f"kernel tree {found.root}: {tree_summary(found)}")
    progress = say if terminal else None
    # OUTDIR is replaced as a whole once this run's files are complete, variants.json last: a
    # failed or killed run leaves the previous one (builder.files.output_folder).
    with replaced_folder(
        outdir,
        marker=RUN_FILE,
        wait=not no_wait,
        on_wait=say,
    ) as staged:
        run = make_variants(
            from_target,
            found,
            outdir,
            staged=staged,
            aot=aot,
            jit=jit,
            ceiling=size,
            platform=platform,
            progress=progress,
            ceiling_of=ceiling_of,
            download=download,
            member=member,
            keep_aot=keep_aot,
        )
        document = variants_json(run)
        write_atomic(staged / RUN_FILE, document)  # OUTDIR says what this run wrote
    _warn_mismatch(run.input.not_in_tree, run.input.missing, from_target, found.root)
    from builder.publish.outputs import variants_output

    sys.stdout.write(document if fmt == "json" else variants_output(run, fmt))


def _warn_mismatch(not_in_tree: int, missing: int, target: str, root: Path) -> None:
    """Say on stderr when the tree and the library do not match: whatever format stdout
    has, a wrong release or platform must not pass silently (the run itself succeeded)."""
    from builder.render.text import visible

    if not_in_tree:
        say(
            f"warning: {visible(target)}: {not_in_tree:,} function(s) of the library are "
            f"produced by no entry file of {visible(str(root))} and stay AOT in every variant: "
            "does the tree match the library (release, -D, --exclude, [kernels.requires])?"
        )
    if missing:
        say(
            f"warning: {visible(target)}: {missing:,} kernel(s) of {visible(str(root))} are "
            "not in the library: another release, or entry files its platform's build leaves "
            "out ([kernels.requires] in metallib.toml)?"
        )


def _interface(
    tree: KernelTree, namespace: str | None, api: str | None, lookup: bool | None
) -> KernelTree:
    """``tree`` with the command line's run-time source interface over its metallib.toml's
    (``builder.kernels.runtime_sources.over_file``, as ``build`` does)."""
    from dataclasses import replace

    from builder.kernels.runtime_sources import over_file

    catalog = tree.kind == "catalog"
    runtime = over_file(tree.config.runtime, namespace, api, lookup, catalog=catalog)
    if runtime is tree.config.runtime:
        return tree
    return replace(tree, config=replace(tree.config, runtime=runtime))
