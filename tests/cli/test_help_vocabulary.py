"""Every command's --help teaches with examples and the CLI spells one thing one way: the output
format is ``--format``, ``-o`` is ``--output`` and names a file, except the one command that writes
a folder of many files (``variants --from -o OUTDIR``)."""

from __future__ import annotations

import click
import pytest
from clirun import run_cli as run

from builder.cli import COMMANDS, cli

FOLDER_OUTPUTS = {"variants"}
"""Commands whose -o names a folder: they write many files."""


def command(name: str) -> click.Command:
    found = cli.get_command(click.Context(cli), name)
    assert found is not None, name
    return found


@pytest.mark.parametrize("name", sorted(COMMANDS))
def test_help_has_examples(name: str, capsys: pytest.CaptureFixture[str]) -> None:
    code, out, _ = run([name, "--help"], capsys)
    assert code == 0
    examples = out.split("Examples:\n", 1)
    assert len(examples) == 2, f"{name} --help has no examples"
    assert f"  metallib-builder {name} " in examples[1]


@pytest.mark.parametrize("name", sorted(COMMANDS))
def test_one_spelling_per_option(name: str) -> None:
    options = [p for p in command(name).params if isinstance(p, click.Option)]
    spelled = {opt for p in options for opt in p.opts}
    assert "--json" not in spelled and "--out" not in spelled and "--outdir" not in spelled
    for p in options:
        if p.name == "fmt":
            assert p.opts == ["--format"], (name, p.opts)
        if "-o" in p.opts:
            assert p.opts == ["-o", "--output"], (name, p.opts)
            assert isinstance(p.type, click.Path)
            as_folder = name in FOLDER_OUTPUTS
            assert p.type.file_okay is not as_folder and p.type.dir_okay is as_folder, name
        if "-I" in p.opts:
            assert p.opts == ["-I", "--include-dir"], (name, p.opts)
        if "-D" in p.opts:
            assert p.opts == ["-D", "--define"], (name, p.opts)


def test_j_says_what_runs_in_parallel(capsys: pytest.CaptureFixture[str]) -> None:
    """``build -j`` is Ninja's jobs; ``kernels -j`` is the preprocessing."""
    for name, meaning in (("build", "Ninja's parallel jobs"), ("kernels", "preprocessed at once")):
        jobs = next(p for p in command(name).params if "-j" in getattr(p, "opts", ()))
        assert isinstance(jobs, click.Option) and meaning in (jobs.help or ""), name
