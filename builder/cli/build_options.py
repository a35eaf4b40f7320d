"""The click options of the build options, generated from their one declaration: the
``BuildRequest`` fields' metadata (``builder.cmake_build.request``). A click parameter is named
like its field, so ``BuildRequest.from_options`` reads the values back."""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import Field
from pathlib import Path
from typing import TypeVar

import click

__all__ = ["request_option"]

F = TypeVar("F", bound=Callable[..., object])


def _default_note(f: Field[object]) -> str:
    """The default a help text states, from the field (only where the help does not say it)."""
    from builder.cmake_build.option_values import option_of

    if option_of(f).kind == "int":
        return f" Default: {f.default}."
    return ""


def request_option(name: str, *, default: Path | None = None) -> Callable[[F], F]:
    """The click option of the request field ``name`` (``default``: the CLI's own, where it is
    not the field's: the build folder)."""
    from builder.cmake_build.request import option_fields

    (f, option) = next((f, o) for f, o in option_fields() if f.name == name)
    if option.flag is None:
        raise ValueError(f"build option {name} has no command-line flag")
    kind = option.kind
    types = {
        "paths": click.Path(path_type=Path),
        "path": click.Path(dir_okay=False, path_type=Path),
        "real_path": click.Path(file_okay=False, path_type=Path),
        "int": click.IntRange(min=1),
    }
    shown: object = default
    kind_type = types.get(kind)
    if option.choices:
        kind_type, shown = click.Choice(option.choices), f.default
    if kind == "switch":  # --x/--no-x, None when neither is given
        return click.option(option.flag, name, help=option.help, default=None)
    return click.option(
        *option.flag.split("/"),
        name,
        help=option.help + _default_note(f),
        metavar=option.metavar,
        type=kind_type,
        multiple=kind in ("flags", "paths", "texts", "globs"),
        is_flag=True if kind == "bool" else None,
        default=False if kind == "bool" else shown,
        show_default=shown is not None,
    )
