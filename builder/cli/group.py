"""The click group every command hangs from: its options, its commands imported on first use,
and how an error becomes one line on stderr and an exit code (0 ok, 1 a check failed, 2 unusable
input); ``--debug`` shows the traceback instead. Exit 1 is a failed gate or check and nothing
else: a reader that closes the pipe leaves the exit code the run would have had
(``console.guard_closed_pipes``), and a bug (an exception the tool did not expect) is exit 3
with its traceback. The top-level ``--help`` is answered before this module is imported
(``builder/__main__.py``: :func:`builder.cli.print_help`)."""

from __future__ import annotations

import importlib
import sys
from typing import Any

import click

from builder import __version__
from builder.cli import (
    COMMANDS,
    DESCRIPTION,
    EPILOG,
    INTERNAL_ERROR,
    OPTION_HELP,
    PACKAGE_CONFIG,
    cmake_package_dir,
)

__all__ = ["LazyGroup", "cli", "main"]


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


def _eager(shown: str) -> dict[str, Any]:
    """What a flag that answers and exits before any command runs is (its help, as the
    top-level ``--help`` shows it under ``shown``)."""
    return {"is_flag": True, "expose_value": False, "is_eager": True, "help": OPTION_HELP[shown]}


@click.group(
    cls=LazyGroup,
    help=DESCRIPTION,
    context_settings={"help_option_names": ["-h", "--help"], "max_content_width": 100},
    epilog=EPILOG,
)
@click.option("-V", "--version", callback=_print_version, **_eager("-V, --version"))
@click.option("--cmake-dir", callback=_print_cmake_dir, **_eager("--cmake-dir"))
@click.option("--debug", is_flag=True, help=OPTION_HELP["--debug"])
@click.pass_context
def cli(ctx: click.Context, debug: bool) -> None:
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
    """Run the command line and map library errors to exit codes (the return value: click's, an exit
    code or None, as the console script hands it to sys.exit)."""
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
