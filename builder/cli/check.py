"""``check``: every catalog instantiation (and each JIT unit's run-time source) compiled as C++
against the Metal shim, with problems reported at the kernel source line.

A thin command over ``builder.kernels.check``: progress on stderr (a bar on a terminal, one line
per chunk otherwise), results on stdout.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import click

from builder.cli.kernels import emit_json
from builder.errors import CheckFailed
from builder.kernels.catalog import split_names

__all__ = ["check_command"]

_DIR = click.Path(file_okay=False, path_type=Path)

_SELECTION_OPTIONS = [
    click.option(
        "--source-dir",
        type=_DIR,
        default=None,
        help="Kernel tree to use (a directory with catalog.json). Default: the bundled metal_src.",
    ),
    click.option(
        "--kernels",
        "kernels",
        metavar="F,...",
        default=None,
        help="Only these units (catalog families), comma-separated (e.g. unary,binary). "
        "Default: all.",
    ),
    click.option(
        "--dtypes",
        metavar="D,...",
        default=None,
        help="Only instantiations whose value dtypes are all listed (index dtypes are kept), "
        "e.g. float16,float32. Default: all.",
    ),
]


def _selection(func: Any) -> Any:
    for option in reversed(_SELECTION_OPTIONS):
        func = option(func)
    return func


def _jit_chunks(
    source_dir: Path | None, families: list[str] | None, dtypes: list[str] | None
) -> list[Any]:
    """The JIT build's sources as check chunks: one per unit (a catalog family), its inlined
    preamble with every instantiation line appended."""
    from builder.jit.checking import jit_check_chunks
    from builder.jit.preamble import inline_preamble
    from builder.kernels import load_catalog

    catalog = load_catalog(source_dir)
    selected = dict.fromkeys(inst.family for inst in catalog.expand(families, dtypes))
    root = catalog.source_dir
    preambles = {
        f: inline_preamble([root / catalog.families[f].header], [root]).text for f in selected
    }
    chunks: list[Any] = jit_check_chunks(catalog, preambles, families, dtypes)
    return chunks


@click.command(
    "check",
    epilog="""\b
Examples:
  metallib-builder check
  metallib-builder check --kernels reduce --dtypes bfloat16
  metallib-builder check --source-dir /tmp/my_metal_src --format json
Exit status: 0 all instantiations compile, 1 errors found, 2 bad usage or no C++ compiler.
""",
)
@_selection
@click.option(
    "--jobs",
    "-j",
    type=click.IntRange(min=1),
    default=None,
    help="Parallel compiler processes. Default: the number of CPUs.",
)
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
@click.option(
    "--jit/--no-jit",
    "jit",
    default=True,
    help="Also compile each unit's JIT source (its inlined preamble with the "
    "instantiation lines appended). Default: --jit.",
)
@click.option(
    "--format",
    "fmt",
    type=click.Choice(["text", "json"]),
    default="text",
    show_default=True,
    help="text: one line per problem (path:line:col) and a summary; json (schema 2) for scripts.",
)
def check_command(
    source_dir: Path | None,
    kernels: str | None,
    dtypes: str | None,
    jobs: int | None,
    compiler: str | None,
    syntax_only: bool,
    jit: bool,
    fmt: str,
) -> None:
    """Compile every catalog instantiation as C++ against the Metal shim.

    No Metal compiler runs on Linux; this catches syntax errors and template errors in any dtype
    path with the host compiler. Problems are reported at the kernel source line (not the shim's
    or the generated file's), with the instantiations that hit them.
    """
    from rich.console import Console
    from rich.progress import BarColumn, MofNCompleteColumn, Progress, TextColumn, TimeElapsedColumn

    from builder.kernels.check import CheckChunk, ChunkResult, check_library

    err = Console(stderr=True)
    # A live bar on a terminal; one line per finished chunk in logs (CI), where a bar is noise.
    progress = Progress(
        TextColumn("check"),
        BarColumn(),
        MofNCompleteColumn(),
        TextColumn("instantiations"),
        TimeElapsedColumn(),
        console=err,
        transient=True,
        disable=not err.is_terminal,
    )
    task = progress.add_task("check", total=None)

    def planned(chunks: list[CheckChunk]) -> None:
        progress.update(task, total=sum(len(c.host_lines) for c in chunks))
        progress.start()

    def done(chunk: ChunkResult) -> None:
        progress.advance(task, chunk.instantiations)
        if not err.is_terminal:
            state = "ok" if chunk.ok else "FAILED"
            click.echo(
                f"check: {chunk.chunk}: {chunk.instantiations} instantiations "
                f"{state} ({chunk.seconds:.1f}s)",
                err=True,
            )

    extra = _jit_chunks(source_dir, split_names(kernels), split_names(dtypes)) if jit else []
    try:
        result = check_library(
            source_dir,
            families=split_names(kernels),
            dtypes=split_names(dtypes),
            compiler=compiler,
            jobs=jobs,
            syntax_only=syntax_only,
            extra=extra,
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
        jit_names = {c.name for c in extra}
        n_jit = sum(c.instantiations for c in result.chunks if c.chunk in jit_names)
        scope = f"{result.instantiations - n_jit} instantiations"
        scope += f" (+{n_jit} in JIT sources)" if jit_names else ""
        click.echo(
            f"check {verdict}: {scope} in {len(result.chunks)} chunks, "
            f"{result.errors} errors, {result.warnings} warnings, {result.seconds:.1f}s "
            f"({result.mode}, {result.compiler.version})"
        )
    if not result.ok:
        raise CheckFailed(f"kernel check failed: {result.errors} error(s); see the lines above")
