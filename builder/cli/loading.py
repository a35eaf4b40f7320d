"""Loading the targets ``report`` and ``compare`` read: each as reports, with what the user
should know on stderr (the rules not used; each report's warnings, such as the bytes no entry
file of ``--source-dir`` makes, which every other view carries too),
and the check that no ``-o`` names one of the files read.

``sources``: the run-time sources a Mach-O or ELF host library returns from
``const char* name()`` functions, read as a host library's report reads them
(``builder.size.host_strings``), and ``embed``, which writes run-time sources
(``builder.jit.generate.write_embed``). ``embed`` lives here, not with ``build``: importing the
build commands plans their options from the build request, which ``embed`` has no use for (it
made ``embed`` 1.5 times slower).
"""

from __future__ import annotations

import gc
from collections.abc import Iterable, Iterator, Sequence
from contextlib import contextmanager
from functools import partial
from pathlib import Path
from typing import TYPE_CHECKING

import click

from builder.cli.publishing import output_options, say
from builder.cli.tree_options import option
from builder.errors import UsageError

if TYPE_CHECKING:
    from builder.cli.tree_options import TreeOptions
    from builder.size.grouping import Sources
    from builder.size.load import TreeSources
    from builder.size.report import Report

__all__ = [
    "check_output",
    "embed_command",
    "load",
    "measured_files",
    "sources_command",
    "warn",
]


def check_output(
    outputs: Sequence[str], targets: Sequence[str], rules: str | None, tree: TreeOptions
) -> None:
    """Exit 2 before any work when an ``-o`` names a file the command reads: a target given as
    a path, the rule file, the kernel tree's settings file
    (``builder.files.atomic.check_not_an_input``)."""
    from builder.files.atomic import check_not_an_input

    source_dir = tree.source_dir
    settings = [tree.config, source_dir / "metallib.toml" if source_dir else None]
    for output in outputs:
        check_not_an_input(output, [*targets, rules, *settings])


def measured_files(reports: Sequence[Report]) -> list[str | None]:
    """The files behind loaded reports (a build folder's metallib, manifest and host library, a
    wheel): what a target named by a folder or a wheel turned out to be."""
    files: list[str | None] = []
    for report in reports:
        source = report.source
        files += [source.path, source.manifest, source.wheel]
        if source.kind != "report" and report.host_library is not None:
            files.append(report.host_library.path)
    return files


def load(
    target: str,
    by: str,
    rules_path: str | None,
    platform: str | None,
    sources: Sources | TreeSources | None = None,
    download: bool = False,
    member: str | None = None,
    absent_ok: bool = False,
) -> list[Report]:
    from builder.size.load import load_reports

    rules = None
    if rules_path is not None:
        from builder.size.grouping import load_rules

        rules = load_rules(rules_path)
    with _gc_paused():
        reports = load_reports(
            target,
            by=by,
            rules=rules,
            platform=platform,
            progress=say,
            sources=sources,
            download=download,
            member=member,
            absent_ok=absent_ok,
        )
    if rules is not None and any(r.grouping == "manifest" for r in reports):
        say(
            f"note: {target}: kernel groups come from its build manifest; --rules "
            "is not used for it"
        )
    _warn(reports)  # a tree that does not match the library, among others (size.tree_match)
    return reports


def _warn(reports: Sequence[Report]) -> None:
    """Say on stderr what each report warns about (``Report.warnings``), as the other views
    carry it."""
    for report in reports:
        warn(report.source.label, report.warnings)


def warn(label: str, warnings: Iterable[str]) -> None:
    """``warning: LABEL: sentence`` on stderr for each of a library's warnings (``report``,
    ``compare``, ``budget``, ``history`` alike), untrusted text escaped."""
    from builder.render.text import visible

    for warning in warnings:
        say(f"warning: {visible(label)}: {visible(warning)}")


@contextmanager
def _gc_paused() -> Iterator[None]:
    """Measuring a library allocates ~100k small objects and no reference cycles; pausing the
    cyclic collector meanwhile saves its repeated scans (about 5 % of a report's run time)."""
    enabled = gc.isenabled()
    gc.disable()
    try:
        yield
    finally:
        if enabled:
            gc.enable()


@click.command("sources")
@click.argument("target")
@option("jit_namespace")
@option("platform")
@output_options(("table", "json"), "Output format.")
def sources_command(
    target: str,
    jit_namespace: str | None,
    platform: str | None,
    fmt: str,
    outputs: tuple[str, ...],
) -> None:
    """List the Metal sources a host library embeds: returned by functions, or found as text.

    A function counts when its whole body returns a string literal of __TEXT,__cstring or ELF's
    .rodata (arm64 'adrp x0; add x0; ret', x86-64 'lea rax, [rip+d]; ret'); each row gives its C++
    name, where its string sits in the file and its bytes, NUL included. A stripped binary
    names no local function: its functions come from LC_FUNCTION_STARTS, shown unnamed, and
    --jit-namespace finds none of them. With --jit-namespace, only the functions in that C++
    namespace (and those nested in it); without it, every function whose string is Metal source
    (not prose, not C++ for the CPU), and every Metal translation unit the binary holds as text
    no function returns (#include <metal_stdlib> and a kernel: ggml's section between
    _ggml_metallib_start and _ggml_metallib_end, candle's string constants). Each row counts the
    kernels written in it.

    TARGET is a Mach-O file (thin or fat), an ELF file, or a wheel or build folder as 'report'
    takes them (a build: its host library). A wheel lists each binary member that returns any
    source, one table each, and JSON names the member of every row (docs/jit.md).

    \b
    Examples:
      metallib-builder sources mlx-metal==0.32.1 --jit-namespace mlx::core::metal
      metallib-builder sources mlx/lib/libmlx.dylib --jit-namespace mlx::core::metal
      metallib-builder sources executorch==1.5.1 --format json -o sources.json
    """
    from builder.cli.publishing import deliver, output_plan
    from builder.errors import UsageError
    from builder.publish.outputs import sources_output
    from builder.size.host_strings import HostString, run_time_sources

    plan = output_plan(outputs, fmt)
    namespace = jit_namespace
    binaries = _host_binaries(target, platform)
    found: list[tuple[str | None, list[HostString]]] = []
    if len(binaries) == 1 and binaries[0][1] is None:
        one = run_time_sources(binaries[0][0], namespace)
        if one is None:
            raise _not_macho(str(binaries[0][0]))
        found.append((None, one))
    else:
        for path, member in binaries:
            sources = run_time_sources(path, namespace)
            if sources:
                found.append((member, sources))
        if not found:
            where = f" in {namespace}" if namespace else ""
            searched = ", ".join(member or "" for _, member in binaries) or "none"
            raise UsageError(
                f"{target}: no binary of the wheel returns a run-time source{where} "
                f"(binaries searched: {searched})"
            )
    deliver(plan, partial(sources_output, target, found, namespace))


def _not_macho(binary: str) -> Exception:
    """The error for a binary whose Mach-O load commands cannot be read, or no Mach-O or ELF."""
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
        else f"not a Mach-O or ELF binary ({kind or 'no file kind the tool knows'})"
    )
    return UsageError(f"{binary}: {what}; 'sources' reads Mach-O and ELF host libraries")


def _host_binaries(target: str, platform: str | None) -> list[tuple[Path, str | None]]:
    """The binaries ``sources`` reads, each with its member path in the wheel (None: the binary
    given itself, or a build's host library): a file is read as the binary it is (the error
    for one that is not says what it is); anything else goes through the one resolver."""
    from builder.errors import UsageError
    from builder.files.reading import check_regular
    from builder.inputs.targets import resolve_target

    path = Path(target)
    if path.exists() and not path.is_dir() and path.suffix != ".whl":
        check_regular(path, "the target")
        return [(path, None)]
    found = resolve_target(target, platform=platform, progress=say, host_libraries="every")
    binaries: dict[Path, str | None] = {}
    for lib in found:
        if lib.manifest is not None:
            if lib.manifest.host_library is None:
                raise UsageError(f"{target}: the build has no host library (no unit is JIT)")
            binaries[lib.manifest.folder / lib.manifest.host_library] = None
        elif lib.host is not None:
            binaries[lib.host] = lib.member  # (a wheel's .metallib member: no host code)
    return list(binaries.items())


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
    from builder.jit.generate import embed_headers, named_preambles, write_embed
    from builder.settings.text_rules import APIS, DEFAULT_NAMESPACE

    for folder in include_dirs:  # a folder that is not there would quietly resolve nothing
        if not folder.is_dir():
            raise UsageError(f"-I {folder}: not a folder")
    embedded = embed_headers(
        headers,
        include_dirs,
        (*preamble_defines, *old_defines),
        jit_namespace or DEFAULT_NAMESPACE,
        named=named_preambles(preambles),
        strip=strip_comments,
        api=jit_api or APIS[0],
        lookup=jit_lookup is not False,
        allow_outside_includes=allow_outside_includes,
    )
    changed, written = write_embed(output, embedded, depfile)
    files = len({f for p in written for f in p.files})
    say(
        f"embed: {len(written)} preamble(s) from {files} file(s), "
        f"{sum(len(p.text.encode()) for p in written):,} bytes -> {output}"
        f"{'' if changed else ' (unchanged)'}"
    )
