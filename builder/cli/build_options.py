"""The click options of the build options, generated from their one declaration: the
``BuildRequest`` fields' metadata (``builder.cmake_build.request``). A click parameter is named
like its field, so ``BuildRequest.from_options`` reads the values back."""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path
from typing import Any, TypeVar

import click

__all__ = ["request_option"]

F = TypeVar("F", bound=Callable[..., Any])


def _default_note(f: Any) -> str:
    """The default a help text states, from the field (only where the help does not say it)."""
    if f.metadata["option"].kind == "int":
        return f" Default: {f.default}."
    return ""


def request_option(name: str, **overrides: Any) -> Callable[[F], F]:
    """The click option of the request field ``name`` (``overrides``: click settings that are
    the CLI's own, e.g. a default build folder)."""
    from builder.cmake_build.request import option_fields

    (f, option) = next((f, o) for f, o in option_fields() if f.name == name)
    if option.flag is None:
        raise ValueError(f"build option {name} has no command-line flag")
    settings: dict[str, Any] = {"help": option.help + _default_note(f), "default": None}
    if option.metavar:
        settings["metavar"] = option.metavar
    kind = option.kind
    if kind in ("flags", "paths", "texts", "globs"):
        settings["multiple"] = True
    if kind == "paths":
        settings["type"] = click.Path(path_type=Path)
    elif kind == "path":
        settings["type"] = click.Path(dir_okay=False, path_type=Path)
    elif kind == "real_path":
        settings["type"] = click.Path(file_okay=False, path_type=Path)
    elif kind == "int":
        settings["type"] = click.IntRange(min=1)
    elif kind == "bool":
        settings.update(is_flag=True, default=False)
    elif option.choices:
        settings.update(type=click.Choice(option.choices), default=f.default, show_default=True)
    settings.update(overrides)
    return click.option(*option.flag.split("/"), name, **settings)
