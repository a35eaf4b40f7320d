"""``embed``: kernel headers inlined into a C++ source of run-time preambles (any kernel tree).

Thin command over ``builder.jit.generate.write_embed``; the generated text is documented in
docs/jit.md.
"""

from __future__ import annotations

import sys
from pathlib import Path

import click

from builder.cli.tree_options import option
from builder.settings.declared import APIS, DEFAULT_NAMESPACE

__all__ = ["embed_command"]


@click.command(
    "embed",
    epilog="""\b
Examples:
  metallib-builder embed metal_src/unary/unary.h -I metal_src -o unary_jit.cpp
  metallib-builder embed --preamble common=utils.h --preamble common=binary_ops.h -I . -o c.cpp
  metallib-builder embed mlx/backend/metal/kernels/unary.h mlx/backend/metal/kernels/binary.h \\
      -I . -D MLX_METAL_JIT=1 -o mlx_preambles.cpp --jit-namespace mlx::core::metal \\
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
@click.option(
    "-I",
    "--include-dir",
    "include_dirs",
    multiple=True,
    metavar="DIR",
    type=click.Path(file_okay=False, exists=True, path_type=Path),
    help="Directory to resolve quoted includes in (after the including file's own directory), "
    "in order; repeatable. #line markers name files relative to the first -I that holds them.",
)
@click.option(
    "-D",
    "--define",
    "defines",
    multiple=True,
    metavar="NAME[=VALUE]",
    help="Emit '#define NAME VALUE' (VALUE defaults to 1) at the top of every preamble; "
    "repeatable.",
)
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
    defines: tuple[str, ...],
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

    named = named_preambles(preambles)
    changed, written = write_embed(
        headers,
        include_dirs,
        output,
        defines,
        jit_namespace or DEFAULT_NAMESPACE,
        strip=strip_comments,
        api=jit_api or APIS[0],
        lookup=jit_lookup is not False,
        depfile=depfile,
        allow_outside_includes=allow_outside_includes,
        named=named,
    )
    files = len({f for p in written for f in p.files})
    click.echo(
        f"embed: {len(written)} preamble(s) from {files} file(s), "
        f"{sum(len(p.text.encode()) for p in written):,} bytes -> {output}"
        f"{'' if changed else ' (unchanged)'}",
        file=sys.stderr,
    )
