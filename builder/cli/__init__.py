"""The ``metallib-builder`` command line: a thin shell over the library.

Subcommands live in sibling modules and are imported only when used, so ``--help`` and quick
commands stay fast. Errors from the library become one line on stderr and an exit code
(0 ok, 1 a check failed, 2 unusable input); ``--debug`` shows the traceback instead. Exit 1 is
a failed gate or check and nothing else: a reader that closes the pipe leaves the exit code the
run would have had (``console.guard_closed_pipes``), and a bug (an exception the tool did not
expect) is exit 3 with its traceback.
"""

from __future__ import annotations

import importlib
import sys
from typing import TYPE_CHECKING, NamedTuple

import click

from builder import __version__

if TYPE_CHECKING:
    from pathlib import Path  # imported where used: --help need not pay for pathlib

__all__ = ["COMMANDS", "INTERNAL_ERROR", "Entry", "LazyGroup", "cli", "cmake_package_dir", "main"]

INTERNAL_ERROR = 3
"""The exit code of a bug (an exception the tool did not expect): never 1, a failed gate."""


class Entry(NamedTuple):
    """A command as ``--help`` lists it, without importing its module."""

    target: str
    """``module:attribute`` of the click command, relative to builder.cli."""
    help: str
    """Its one-line help: the first sentence of its docstring, which click shortens to fit."""


COMMANDS: dict[str, Entry] = {
    "list": Entry(
        "container:list_command", "List the functions in a metallib with their type and sizes."
    ),
    "verify": Entry(
        "container:verify_command", "Check a metallib's structure and every function's SHA-256."
    ),
    "slim": Entry(
        "container:slim_command", "Write a metallib holding a subset of TARGET's functions."
    ),
    "report": Entry("size:report_command", "Show which kernels make a metallib big."),
    "compare": Entry(
        "size:compare_command",
        "Compare two libraries per group and gate on the growth (exit 1 when a gate fails).",
    ),
    "budget": Entry(
        "size:budget_command",
        "Check every size budget of the project: one row per limit, exit 1 if any is exceeded.",
    ),
    "base-artifact": Entry(
        "publishing:base_artifact_command",
        "Find the newest artifact NAME that a push to BRANCH of this repository uploaded.",
    ),
    "history": Entry(
        "history:history_command",
        "Show how a library's size changed over releases or builds, in the order given.",
    ),
    "kernels": Entry(
        "kernels:kernels_command",
        "List the kernels of a tree: the bundled catalog, or any folder of .metal files.",
    ),
    "check": Entry(
        "check:check_command",
        "Check a kernel tree with the host C++ compiler: what can be proven without Apple's.",
    ),
    "build": Entry(
        "build:build_command",
        "Build a kernel tree: AOT into one metallib, JIT into the host library, or mixed.",
    ),
    "presets": Entry(
        "build:presets_command",
        "Build the presets of CMakePresets.json side by side and compare their sizes.",
    ),
    "variants": Entry(
        "variants:variants_command",
        "Write a library's AOT/JIT variants as real subsets and compare their sizes.",
    ),
    "embed": Entry(
        "build:embed_command",
        "Write a C++ source holding one run-time preamble per HEADER (and per --preamble NAME).",
    ),
    "sources": Entry(
        "loading:sources_command",
        "List the run-time sources a host library embeds as string-returning functions.",
    ),
}
"""Every command, by name. ``tests/cli/test_command_registry.py`` holds each entry equal to the
command it names (name, one-line help)."""


class LazyGroup(click.Group):
    """A group whose subcommands are imported on first use (click's lazy-loading pattern), and
    whose ``--help`` lists them from :data:`COMMANDS` without importing any: importing every
    command's module made ``--help`` 8.4x a bare interpreter's start-up."""

    def list_commands(self, ctx: click.Context) -> list[str]:
        return sorted(COMMANDS)

    def get_command(self, ctx: click.Context, cmd_name: str) -> click.Command | None:
        if cmd_name not in COMMANDS:
            return None
        module_name, attr = COMMANDS[cmd_name].target.split(":")
        module = importlib.import_module(f"builder.cli.{module_name}")
        command: click.Command = getattr(module, attr)
        return command

    def format_commands(self, ctx: click.Context, formatter: click.HelpFormatter) -> None:
        """Click's own listing, of stand-ins that carry each command's one-line help."""
        stand_ins = {name: click.Command(name, help=COMMANDS[name].help) for name in COMMANDS}
        click.Group(commands=stand_ins).format_commands(ctx, formatter)


def _print_version(ctx: click.Context, _param: click.Parameter, value: bool) -> None:
    if not value or ctx.resilient_parsing:
        return
    from builder.metallib.native import version_text

    click.echo(version_text())
    ctx.exit()


PACKAGE_CONFIG = "MetallibBuilderConfig.cmake"


def cmake_package_dir() -> Path | None:
    """The installed CMake package folder (``builder/_data/cmake`` holding ``PACKAGE_CONFIG``), or
    None when this code runs without an install that made one (e.g. a bare source checkout).

    A plain install has it beside this package. An editable install imports the package from the
    checkout while its installed files (this folder among them) sit in site-packages, so the
    distribution's file list is asked next: both are facts of the install, not path guesses.
    """
    from pathlib import Path

    import builder

    beside = Path(builder.__file__).resolve().parent / "_data" / "cmake"
    if (beside / PACKAGE_CONFIG).is_file():
        return beside
    from importlib import metadata

    try:
        files = metadata.distribution("metallib-builder").files or []
    except metadata.PackageNotFoundError:
        return None
    for file in files:
        if file.parts[-4:] == ("builder", "_data", "cmake", PACKAGE_CONFIG):
            found = Path(str(file.locate())).resolve().parent
            return found if (found / PACKAGE_CONFIG).is_file() else None
    return None


def _print_cmake_dir(ctx: click.Context, _param: click.Parameter, value: bool) -> None:
    if not value or ctx.resilient_parsing:
        return
    found = cmake_package_dir()
    if found is None:
        from pathlib import Path

        import builder

        click.echo(
            f"error: no installed CMake package ({PACKAGE_CONFIG}) for the metallib-builder "
            f"running from {Path(builder.__file__).resolve().parent}: install it "
            "(pip install . or pip install -e . in the checkout, or bash scripts/setup.sh)",
            err=True,
        )
        ctx.exit(2)
    click.echo(str(found))
    ctx.exit()


@click.group(
    cls=LazyGroup,
    context_settings={"help_option_names": ["-h", "--help"], "max_content_width": 100},
    epilog="Run 'metallib-builder COMMAND --help' for a command's options and examples.",
)
@click.option(
    "-V",
    "--version",
    is_flag=True,
    expose_value=False,
    is_eager=True,
    callback=_print_version,
    help="Show the version and whether the native container reader is in use, then exit.",
)
@click.option(
    "--cmake-dir",
    is_flag=True,
    expose_value=False,
    is_eager=True,
    callback=_print_cmake_dir,
    help="Print the folder of the installed CMake package (MetallibBuilderConfig.cmake) for "
    "-DMetallibBuilder_DIR=..., then exit.",
)
@click.option("--debug", is_flag=True, help="Show full tracebacks instead of one-line errors.")
@click.pass_context
def cli(ctx: click.Context, debug: bool) -> None:
    """Build size-minimized Metal kernel libraries and measure what is in them.

    \b
    Inspect a metallib:   list, verify, report
    Compare two / gate:   compare, budget
    Over releases:        history
    Kernel sources:       kernels, check
    Build:                build, presets, embed
    Subsets of a library: slim, variants
    """
    from builder.files.temporaries import install_signal_cleanup

    install_signal_cleanup()  # SIGTERM, SIGHUP: no temporary file or folder left behind
    ctx.obj = {"debug": debug}


def _show_click_error(exc: click.ClickException) -> None:
    """A usage error as the one line every other error is (Click's own form is four: usage,
    hint, blank, error), naming the command's --help; run without a command, the tool still
    shows its help."""
    from builder.render.text import visible

    if isinstance(exc, click.exceptions.NoArgsIsHelpError):
        exc.show()
        return
    message = " ".join(exc.format_message().split("\n"))
    ctx = getattr(exc, "ctx", None)
    command = ctx.command_path if ctx is not None else "metallib-builder"
    hint = f" (see '{command} --help')" if isinstance(exc, click.UsageError) else ""
    click.echo(f"error: {visible(message)}{hint}", err=True)


def main(argv: list[str] | None = None) -> int | None:
    """Console-script entry point: run the CLI and map library errors to exit codes (the
    return value: click's, an exit code or None, as the console script hands it to sys.exit)."""
    from builder.cli.console import guard_closed_pipes
    from builder.errors import BuilderError, MetallibError

    guard_closed_pipes()  # `| head`: the rest of the output is dropped, the verdict stands
    debug = "--debug" in (argv if argv is not None else sys.argv[1:])
    try:
        code: int | None = cli.main(args=argv, prog_name="metallib-builder", standalone_mode=False)
        return code
    except click.exceptions.Exit as exc:
        sys.exit(exc.exit_code)
    except click.Abort:
        click.echo("Aborted.", err=True)
        sys.exit(130)
    except click.ClickException as exc:
        _show_click_error(exc)
        sys.exit(exc.exit_code)
    except (BuilderError, MetallibError) as exc:
        if debug:
            raise
        from builder.render.text import visible  # messages may quote names from untrusted files

        message, detail = (exc.message, exc.detail) if isinstance(exc, BuilderError) else (exc, "")
        click.echo(f"error: {visible(str(message))}", err=True)
        for line in detail.split("\n") if detail else ():  # a tool's output: its own lines
            click.echo(visible(line.expandtabs()), err=True)
        sys.exit(getattr(exc, "exit_code", 2))
    except Exception:  # a bug: never exit 1, which reads as "gate failed"
        if debug:
            raise
        import traceback

        traceback.print_exc()
        click.echo(
            f"error: internal error in metallib-builder {__version__} (a bug; the traceback "
            "above says where): exit 3",
            err=True,
        )
        sys.exit(INTERNAL_ERROR)
