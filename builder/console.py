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

__all__ = ["stderr_console"]


@lru_cache(maxsize=1)
def stderr_console() -> Console:
    """The shared stderr console (rich is imported only when this is first called)."""
    from rich.console import Console

    return Console(stderr=True, no_color=bool(os.environ.get("NO_COLOR")), highlight=False)
