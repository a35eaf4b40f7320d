"""The command registry ``--help`` lists (``builder.cli.COMMANDS``) against the commands
themselves: every click command in ``builder/cli`` is registered under its own name, with its own
one-line help at every width click may shorten it to, and ``--help`` lists them all without
importing any command's module (issue 34 item 13: start-up)."""

from __future__ import annotations

import importlib
import json
import pkgutil
import subprocess
import sys

import click
import pytest
from clirun import run_cli

import builder
import builder.cli
from builder.cli import COMMANDS, print_help, top_help
from builder.cli.group import LazyGroup, cli, main


def real_commands() -> dict[str, tuple[set[str], click.Command]]:
    """name -> (every "module:attribute" that holds it, command) of each click command in
    builder/cli's modules (found by importing each one, not from the registry)."""
    found: dict[str, tuple[set[str], click.Command]] = {}
    for info in pkgutil.iter_modules(builder.cli.__path__):
        module = importlib.import_module(f"builder.cli.{info.name}")
        for attr, value in vars(module).items():
            if isinstance(value, click.Command) and value is not cli:  # the group itself
                assert value.name is not None
                places, command = found.setdefault(value.name, (set(), value))
                assert command is value, f"two commands named {value.name}"
                places.add(f"{info.name}:{attr}")
    return found


def test_registry_names_every_command_where_it_is() -> None:
    real = real_commands()
    assert set(COMMANDS) == set(real)
    for name, (places, _) in real.items():
        assert COMMANDS[name].target in places, name


@pytest.mark.parametrize("limit", [20, 30, 45, 55, 70, 94, 200])
def test_registry_help_is_the_commands_own(limit: int) -> None:
    for name, (_, command) in real_commands().items():
        stand_in = click.Command(name, help=COMMANDS[name].help)
        assert stand_in.get_short_help_str(limit) == command.get_short_help_str(limit), name


@pytest.mark.parametrize("width", [60, 80, 100])
def test_help_lists_what_an_eager_group_lists(width: int) -> None:
    """The lazy listing is click's listing of the real commands, at every terminal width."""
    eager = click.Group(
        "metallib-builder", commands={n: c for n, (_, c) in real_commands().items()}
    )

    def listing(group: click.Group) -> str:
        ctx = click.Context(group, terminal_width=width, max_content_width=width)
        formatter = ctx.make_formatter()
        group.format_commands(ctx, formatter)
        return formatter.getvalue()

    assert isinstance(cli, LazyGroup)
    lazy = listing(cli)
    assert lazy == listing(eager)
    assert all(f"  {name} " in lazy for name in COMMANDS)


def test_help_imports_no_command() -> None:
    script = (
        "import sys, json\n"
        "sys.argv = ['metallib-builder', '--help']\n"
        "from builder.__main__ import main\n"
        "assert main() == 0\n"
        "ours = [m for m in sys.modules if m.split('.')[0] in ('builder', 'click')]\n"
        "print(json.dumps(sorted(ours)))\n"
    )
    done = subprocess.run(
        [sys.executable, "-c", script], capture_output=True, text=True, check=True
    )
    loaded = set(json.loads(done.stdout.splitlines()[-1]))
    commands = {f"builder.cli.{entry.target.split(':')[0]}" for entry in COMMANDS.values()}
    assert "Commands:" in done.stdout
    assert not loaded & commands, sorted(loaded & commands)
    assert "builder.metallib.reader" not in loaded
    assert "builder.cli.group" not in loaded  # nor click: the group's module imports it
    assert "click" not in loaded


def test_help_without_click_is_clicks_help(
    capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    """The top-level ``--help`` written without click is byte for byte what the click group
    writes, at every terminal width (click clamps it to 50..98) and without COLUMNS (not a
    terminal: 80), for ``-h`` as well."""
    for columns in [*range(30, 125), None, "not a number"]:
        if columns is None:
            monkeypatch.delenv("COLUMNS", raising=False)
        else:
            monkeypatch.setenv("COLUMNS", str(columns))
        for flag in ("--help", "-h"):
            assert main([flag]) == 0  # click's
            by_click = capsys.readouterr()
            assert print_help() == 0
            assert capsys.readouterr() == by_click, (columns, flag)
            assert by_click.out.startswith("Usage: metallib-builder [OPTIONS] COMMAND")
    assert top_help(98).count("\n") < top_help(50).count("\n")  # the width was used


def test_version_is_answered_before_click(capsys: pytest.CaptureFixture[str]) -> None:
    """``--version`` alone prints what the click option prints, without importing click or the
    command line."""
    script = (
        "import sys\n"
        "sys.argv = ['metallib-builder', '--version']\n"
        "from builder.__main__ import main\n"
        "main()\n"
        "print(sorted(m for m in ('click', 'builder.cli', 'builder.metallib.reader')"
        " if m in sys.modules))\n"
    )
    done = subprocess.run(
        [sys.executable, "-c", script], capture_output=True, text=True, check=True
    )
    *printed, loaded = done.stdout.splitlines()
    assert loaded == "[]"
    code, out, _ = run_cli(["--debug", "--version"], capsys)
    assert code == 0
    assert printed == out.splitlines()
    assert printed[0] == f"metallib-builder, version {builder.__version__}"
