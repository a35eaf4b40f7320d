"""``sources``: the run-time sources a Mach-O host library returns from ``const char* name()``
functions (MLX's preambles), each with the bytes its string holds in the binary."""

from __future__ import annotations

import click

from builder.cli.publishing import output_options

__all__ = ["sources_command"]

_FORMATS = ("table", "json")


@click.command("sources")
@click.argument("binary", type=click.Path(dir_okay=False))
@click.option(
    "--namespace",
    default=None,
    metavar="NS",
    help="Only functions in this C++ namespace (and those nested in it), e.g. "
    "mlx::core::metal. Without it: every function whose string holds a line break.",
)
@output_options(_FORMATS, "Output format.")
def sources_command(binary: str, namespace: str | None, fmt: str, outputs: tuple[str, ...]) -> None:
    """List the run-time sources a host library embeds as string-returning functions.

    A function counts when its whole body returns a string literal of __TEXT,__cstring
    (arm64 'adrp x0; add x0; ret', x86-64 'lea rax, [rip+d]; ret'); each row gives its C++
    name, where its string sits in the file and its bytes, NUL included. A stripped binary
    names no local function: its functions come from LC_FUNCTION_STARTS, shown unnamed, and
    --namespace finds none of them. BINARY is a Mach-O file, thin or fat; take a .dylib out
    of a wheel with unzip first. ELF host libraries are measured by symbol in 'report
    BUILD_DIR' (docs/jit.md).

    \b
    Examples:
      metallib-builder sources mlx/lib/libmlx.dylib --namespace mlx::core::metal
      metallib-builder sources executorch/lib/libexecutorch_backend_mlx.dylib --format json
      metallib-builder sources libmlx.dylib --namespace mlx::core::metal -o sources.json
    """
    from builder.cli.publishing import output_plan, terminal
    from builder.errors import UsageError
    from builder.files.reading import open_regular
    from builder.metallib.binary_sections import file_kind
    from builder.publish.outputs import write_outputs
    from builder.render.formats import sources_output
    from builder.size.host_strings import host_strings

    plan = output_plan(outputs, fmt, _FORMATS)
    if namespace is not None and not all(p.isidentifier() for p in namespace.split("::")):
        raise UsageError(f"--namespace {namespace!r} is not a C++ namespace like mlx::core::metal")
    found = host_strings(binary, namespace)
    if found is None:
        with open_regular(binary, "the binary") as handle:
            kind = file_kind(handle.read(8))
        what = (
            f"{kind} whose load commands cannot be read"
            if kind and "Mach-O" in kind
            else f"not a Mach-O binary ({kind or 'no file kind the tool knows'})"
        )
        raise UsageError(
            f"{binary}: {what}; 'sources' reads Mach-O host libraries, "
            "'report BUILD_DIR' measures an ELF one by symbol"
        )

    def render(kind: str, to_stdout: bool) -> str:
        return sources_output(binary, found, namespace, kind, *terminal(to_stdout))

    write_outputs(plan, render)
