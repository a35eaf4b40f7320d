"""``compare``'s options of the gates on what a library holds (``builder.size.content_gates``),
each made from its setting (``builder.settings.file_keys.GATES``) as every option is; the one
that ``option`` cannot make, ``--fail-on-removed [GLOB]`` (a value that may be left out), is
made here from its setting's flag, help and check."""

from __future__ import annotations

from collections.abc import Callable
from typing import TypeVar

import click

from builder.cli.tree_options import options

__all__ = ["content_gates", "fail_on_removed"]

R = TypeVar("R")


def fail_on_removed(func: Callable[..., R]) -> Callable[..., R]:
    """``--fail-on-removed [GLOB]``: without GLOB, ``*`` (every function of base)."""
    from builder.settings.declared import setting

    s = setting("fail_on_removed")
    assert s.option is not None

    def checked(_ctx: click.Context, _param: click.Parameter, value: str | None) -> str | None:
        return s.from_cli(value)  # type: ignore[no-any-return]

    return click.option(
        s.option,
        s.name,
        help=s.help,
        metavar=s.metavar,
        is_flag=False,
        flag_value="*",
        default=None,
        callback=checked,
    )(func)


content_gates = options(
    "require",
    fail_on_removed,
    "min_functions",
    "max_deployment_target",
    "max_metal_version",
    "fail_on_platform_change",
)
"""The content gates' options, in ``--help`` in this order."""
