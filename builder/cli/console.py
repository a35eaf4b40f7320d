"""The one rich console for progress and logs: stderr, colour only on a terminal (NO_COLOR wins).

Data output (tables, JSON) goes to stdout through click; everything for a watching person goes
here, so piping stdout stays clean.
"""

from __future__ import annotations

import os
from functools import lru_cache
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from rich.console import Console

__all__ = ["stderr_console", "stdout_color", "stdout_table_width", "table_width"]


@lru_cache(maxsize=1)
def stderr_console() -> Console:
    """The shared stderr console (rich is imported only when this is first called)."""
    from rich.console import Console

    return Console(stderr=True, no_color=bool(os.environ.get("NO_COLOR")), highlight=False)


def stdout_color() -> bool:
    """Colour in what goes to stdout: only on a terminal, never with NO_COLOR set."""
    import sys

    return sys.stdout.isatty() and "NO_COLOR" not in os.environ


def stdout_table_width() -> int | None:
    """Width of a report table on stdout: :func:`table_width` on a terminal; None for a pipe or a
    file (as wide as the cells need, so no function name is cut)."""
    import sys

    return table_width() if sys.stdout.isatty() else None


def table_width() -> int:
    """Width of a table on stdout: the terminal's, kept within 80 to 160 columns (100 when
    stdout is not a terminal)."""
    import shutil

    return max(80, min(shutil.get_terminal_size((100, 24)).columns, 160))
