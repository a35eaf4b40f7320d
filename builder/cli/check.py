"""``check``: every catalog instantiation (and each JIT unit's run-time source) compiled as C++
against the Metal shim, with problems reported at the kernel source line.

A thin command over ``builder.jit.check``: progress on stderr (a bar on a terminal, one line
per chunk otherwise), results on stdout.
"""

from __future__ import annotations

from pathlib import Path
from typing import TYPE_CHECKING

import click

from builder.cli.publishing import emit_json, format_option, say
from builder.cli.tree_options import option, options, tree_options
from builder.errors import CheckFailed
from builder.kernels.catalog import split_names

if TYPE_CHECKING:
    from builder.cli.tree_options import TreeOptions
    from builder.jit.check import CheckChunk

__all__ = ["check_command"]


@click.command(
    "check",
    epilog="""\b
Examples:
  metallib-builder check
  metallib-builder check --kernels reduce --dtypes bfloat16
  metallib-builder check --source-dir /tmp/my_metal_src --format json
  metallib-builder check --source-dir ggml/src/ggml-metal -I ggml/src
  metallib-builder check --source-dir mlx/backend/metal/kernels -I . --exclude '*_nax.metal'
Exit status: 0 clean, 1 a finding (a file that fails a check), 2 bad usage or no C++ compiler.
""",
)
@tree_options("the bundled metal_src")
@options("kernels", "dtypes")
@click.option(
    "--compiler",
    metavar="CXX",
    default=None,
    help="C++ compiler to use (default: $CXX, else g++, clang++, c++).",
)
@click.option(
    "--syntax-only",
    is_flag=True,
    help="Stop after semantic analysis (-fsyntax-only): faster, still instantiates every template.",
)
@option("jit_sources")
@click.option("--jit/--no-jit", "old_jit", default=None, hidden=True)  # deprecated: scripts
@format_option(
    ("text", "json"),
    "text: one line per problem (path:line:col) and a summary; json (schema 2) for scripts.",
)
def check_command(
    tree: TreeOptions,
    kernels: str | None,
    dtypes: str | None,
    compiler: str | None,
    syntax_only: bool,
    jit_sources: bool | None,
    old_jit: bool | None,
    fmt: str,
) -> None:
    """Check a kernel tree with the host C++ compiler: what can be proven without Apple's.

    A catalog tree (catalog.json, like the bundled metal_src): every instantiation is compiled
    as C++ against the Metal shim, which catches syntax and template errors in any dtype path;
    problems are reported at the kernel source line, with the instantiations that hit them.

    Any other folder of .metal files (as `kernels` discovers it), file by file: each entry file
    preprocesses with the tree's -I and -D; each instantiation names a kernel template that a
    file it reads defines; each run-time source a JIT build would embed compiles as C++ in its
    string form. Its Metal code itself is not compiled: types, address spaces, attributes and
    kernel bodies are for Apple's compiler (xcrun metal) alone.
    """
    jit = (jit_sources if old_jit is None else old_jit) is not False
    catalog_only = {"--kernels": kernels, "--dtypes": dtypes, "--syntax-only": syntax_only}
    folder = tree.discovered(catalog_only, catalog_jobs=True)
    if folder is not None:
        _check_discovered(folder, tree, compiler, fmt)
        return
    source_dir = tree.source_dir
    from rich.progress import BarColumn, MofNCompleteColumn, TimeElapsedColumn

    from builder.cli.console import stderr_bar
    from builder.jit.check import ChunkResult, check_library

    # A live bar on a terminal; one line per finished chunk in logs (CI).
    progress = stderr_bar(
        "check", BarColumn(), MofNCompleteColumn(), "instantiations", TimeElapsedColumn()
    )
    task = progress.add_task("check", total=None)

    def planned(chunks: list[CheckChunk]) -> None:
        progress.update(task, total=sum(len(c.host_lines) for c in chunks))
        progress.start()

    def done(chunk: ChunkResult) -> None:
        progress.advance(task, chunk.instantiations)
        if progress.disable:
            state = "ok" if chunk.ok else "FAILED"
            say(
                f"check: {chunk.chunk}: {chunk.instantiations} instantiations "
                f"{state} ({chunk.seconds:.1f}s)"
            )

    try:
        result = check_library(
            source_dir,
            families=split_names(kernels),
            dtypes=split_names(dtypes),
            compiler=compiler,
            jobs=tree.jobs,
            syntax_only=syntax_only,
            jit=jit,
            on_plan=planned,
            on_done=done,
        )
    finally:
        progress.stop()
    diagnostics = result.diagnostics
    if fmt == "json":
        emit_json(result.to_json())
    else:
        for diag in diagnostics:
            click.echo(diag.format())
        verdict = "ok" if result.ok else "FAILED"
        n_jit = sum(c.instantiations for c in result.chunks if c.chunk.startswith("jit."))
        scope = f"{result.instantiations - n_jit} instantiations"
        scope += f" (+{n_jit} in JIT sources)" if jit else ""
        click.echo(
            f"check {verdict}: {scope} in {len(result.chunks)} chunks, "
            f"{result.errors} errors, {result.warnings} warnings, {result.seconds:.1f}s "
            f"({result.mode}, {result.compiler.version})"
        )
    if not result.ok:
        raise CheckFailed(f"kernel check failed: {result.errors} error(s); see the lines above")


def _check_discovered(source_dir: Path, tree: TreeOptions, compiler: str | None, fmt: str) -> None:
    """``check`` on a discovered tree: one line per file, findings under it, a summary."""
    from builder.jit.tree_check import check_tree
    from builder.kernels.platforms import for_platform
    from builder.render.text import visible

    config = for_platform(tree.settings(source_dir), given=tree.defines)
    result = check_tree(source_dir, config, compiler=compiler)
    failed = sum(1 for f in result.files if not f.ok)
    if fmt == "json":
        emit_json(result.to_json())
    else:
        for file in result.files:
            state = "ok" if file.ok else "FAILED"
            what = f", {file.kernels} kernels" if file.kind == "entry file" else ""
            click.echo(f"{visible(file.path)}: {file.kind}{what}: {state}")
            for finding in file.findings:
                click.echo(f"  {visible(finding)}")
        entries = sum(1 for f in result.files if f.kind == "entry file")
        click.echo(
            f"check {'ok' if result.ok else 'FAILED'}: {entries} entry files and "
            f"{len(result.files) - entries} run-time sources of {visible(str(source_dir))}, "
            f"{failed} with findings ({result.compiler})"
        )
    if not result.ok:
        raise CheckFailed(f"kernel check failed: {failed} file(s)")
