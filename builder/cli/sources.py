"""``sources``: the run-time sources a Mach-O host library returns from ``const char* name()``
functions (MLX's preambles), each with the bytes its string holds in the binary; of a binary,
or of each binary member of a wheel (``builder.cli.sources``).

The binaries behind a ``sources`` target: a binary given itself, or each binary member of a
wheel (a ``.whl`` or ``PACKAGE==VERSION``), to be read for the run-time sources it embeds.

A wheel's members come from the same cache as ``report``'s (``builder.inputs.wheel_extract``):
it extracts every ``.dylib``, ``.so`` and ``.bundle`` member, with its names checked and its bytes
bounded, so a host library such as mlx-metal's ``libmlx.dylib`` is already on disk beside the
metallib, and nothing is extracted twice. ``.metallib`` members are left out: they hold no host
code.

``embed``: kernel headers inlined into a C++ source of run-time preambles (any kernel tree).

Thin command over ``builder.jit.generate.write_embed``; the generated text is documented in
docs/jit.md.
"""

from __future__ import annotations

import sys
from dataclasses import dataclass
from pathlib import Path

import click

from builder.cli.publishing import output_options
from builder.cli.tree_options import option
from builder.errors import UsageError
from builder.files.reading import check_regular
from builder.inputs.targets import Progress, common_root, fetch_spec
from builder.settings.declared import APIS, DEFAULT_NAMESPACE

__all__ = ["Binary", "embed_command", "resolve_binaries", "sources_command"]


_FORMATS = ("table", "json")


@click.command("sources")
@click.argument("target")
@option("jit_namespace")
@option("platform")
@output_options(_FORMATS, "Output format.")
def sources_command(
    target: str,
    jit_namespace: str | None,
    platform: str | None,
    fmt: str,
    outputs: tuple[str, ...],
) -> None:
    """List the run-time sources a host library embeds as string-returning functions.

    A function counts when its whole body returns a string literal of __TEXT,__cstring
    (arm64 'adrp x0; add x0; ret', x86-64 'lea rax, [rip+d]; ret'); each row gives its C++
    name, where its string sits in the file and its bytes, NUL included. A stripped binary
    names no local function: its functions come from LC_FUNCTION_STARTS, shown unnamed, and
    --jit-namespace finds none of them. With --jit-namespace, only the functions in that C++
    namespace (and those nested in it); without it, every function whose string holds a line
    break.

    TARGET is a Mach-O file (thin or fat), a .whl or PACKAGE==VERSION (the macOS wheel,
    downloaded once and cached as for 'report'): a wheel lists each Mach-O member that
    returns any source, one table each, and JSON names the member of every row. ELF host
    libraries are measured by symbol in 'report BUILD_DIR' (docs/jit.md).

    \b
    Examples:
      metallib-builder sources mlx-metal==0.32.1 --jit-namespace mlx::core::metal
      metallib-builder sources mlx/lib/libmlx.dylib --jit-namespace mlx::core::metal
      metallib-builder sources executorch==1.5.1 --format json -o sources.json
    """
    from builder.cli.publishing import output_plan, terminal
    from builder.cli.sources import resolve_binaries
    from builder.errors import UsageError
    from builder.publish.outputs import sources_output, write_outputs
    from builder.size.host_strings import HostString, host_strings

    plan = output_plan(outputs, fmt, _FORMATS)
    namespace = jit_namespace
    binaries = resolve_binaries(
        target, platform=platform, progress=lambda m: click.echo(m, err=True)
    )
    found: list[tuple[str | None, list[HostString]]] = []
    if len(binaries) == 1 and binaries[0].member is None:
        one = host_strings(binaries[0].path, namespace)
        if one is None:
            raise _not_macho(target)
        found.append((None, one))
    else:
        for binary in binaries:
            sources = host_strings(binary.path, namespace)
            if sources:
                found.append((binary.member, sources))
        if not found:
            where = f" in {namespace}" if namespace else ""
            searched = ", ".join(b.member or "" for b in binaries) or "none"
            raise UsageError(
                f"{target}: no binary of the wheel returns a run-time source{where} "
                f"(binaries searched: {searched})"
            )

    def render(kind: str, to_stdout: bool) -> str:
        return sources_output(target, found, namespace, kind, *terminal(to_stdout))

    write_outputs(plan, render)


def _not_macho(binary: str) -> Exception:
    """The error for a binary whose Mach-O load commands cannot be read, or no Mach-O."""
    from builder.errors import UsageError
    from builder.files.reading import open_regular
    from builder.metallib.binary_sections import file_kind
    from builder.metallib.structs import MAGIC

    with open_regular(binary, "the binary") as handle:
        head = handle.read(8)
    kind = "a metallib: 'report' measures it" if head.startswith(MAGIC) else file_kind(head)
    what = (
        f"{kind} whose load commands cannot be read"
        if kind and "Mach-O" in kind
        else f"not a Mach-O binary ({kind or 'no file kind the tool knows'})"
    )
    return UsageError(
        f"{binary}: {what}; 'sources' reads Mach-O host libraries, "
        "'report BUILD_DIR' measures an ELF one by symbol"
    )


@dataclass(frozen=True)
class Binary:
    """One binary to read: its path on disk and, for a wheel's member, the member's path in the
    wheel (``mlx/lib/libmlx.dylib``; None for a binary given itself)."""

    path: Path
    member: str | None = None


def resolve_binaries(
    text: str, *, platform: str | None = None, progress: Progress | None = None
) -> list[Binary]:
    """The binaries ``text`` names: the file itself, or each binary member of the wheel it is
    or names (downloaded for ``platform`` and cached, as ``report`` does), in wheel order."""
    path = Path(text)
    if path.is_dir():
        raise UsageError(
            f"{text}: a directory; 'sources' reads a Mach-O binary, a .whl or PACKAGE==VERSION "
            "('report BUILD_DIR' measures a build's host library)"
        )
    if path.exists():
        check_regular(path, "the target")
        if path.suffix != ".whl":
            return [Binary(path)]
        from builder.inputs.wheel_extract import extract_metallibs

        paths = extract_metallibs(path)
    else:
        fetched = fetch_spec(text, platform=platform, progress=progress)
        if fetched is None:
            raise UsageError(
                f"{text}: no such file, and not a PACKAGE==VERSION spec "
                "(targets: a Mach-O binary, .whl, PACKAGE==VERSION)"
            )
        paths = fetched[1]
    if not paths:
        return []
    root = common_root(paths)
    return [Binary(p, p.relative_to(root).as_posix()) for p in paths if p.suffix != ".metallib"]


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
