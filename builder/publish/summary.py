"""The GitHub Actions step summary: the run's markdown, with its verdict, appended once per run.

Actions gives every step its own file (``GITHUB_STEP_SUMMARY``) and shows what was appended to it
on the run's page. A command that writes several outputs still appends one summary: the caller
passes the markdown once, after every gate has been decided.
"""

from __future__ import annotations

import os
from collections.abc import Mapping

from builder.errors import OutputError

__all__ = ["STEP_SUMMARY", "append_step_summary"]

STEP_SUMMARY = "GITHUB_STEP_SUMMARY"


def append_step_summary(markdown: str, environ: Mapping[str, str] = os.environ) -> str | None:
    """Append ``markdown`` to the step summary file; its path, or None outside Actions.

    A summary that cannot be written is an ``OutputError`` (exit 2) naming the path: a CI step
    that asked for a summary should not pass without one."""
    path = environ.get(STEP_SUMMARY)
    if not path:
        return None
    text = markdown if markdown.endswith("\n") else markdown + "\n"
    try:
        with open(path, "a", encoding="utf-8") as handle:
            handle.write(text)
    except OSError as exc:
        raise OutputError(
            f"cannot append to {STEP_SUMMARY} {path}: {exc.strerror or exc}"
        ) from None
    return path
