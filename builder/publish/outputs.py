"""Several outputs from one run: ``-o size.md -o size.html -o size.json``.

Each ``-o`` file's format comes from its extension, so one measurement feeds the PR comment, the
HTML artifact and the JSON kept for the next run. The plan is made before anything is measured,
so a typo in an extension costs nothing; every format is rendered once, and every file is written
atomically (``builder.files.atomic``).
"""

from __future__ import annotations

import sys
from collections.abc import Callable, Sequence
from pathlib import PurePath
from typing import NamedTuple

from builder.errors import UsageError

__all__ = ["EXTENSIONS", "Destination", "plan_outputs", "write_outputs"]

EXTENSIONS: dict[str, str] = {
    ".md": "markdown",
    ".markdown": "markdown",
    ".html": "html",
    ".htm": "html",
    ".json": "json",
    ".csv": "csv",
    ".txt": "table",
}
"""File extension -> output format (``--format`` names)."""


class Destination(NamedTuple):
    """Where one rendering goes: ``path`` None is stdout."""

    path: str | None
    fmt: str


def plan_outputs(
    paths: Sequence[str], fmt: str, *, explicit: bool, formats: Sequence[str]
) -> list[Destination]:
    """Decide the format of every output before anything is measured.

    No ``-o``: stdout in ``fmt``. One ``-o`` with ``--format`` given: that format (a file name
    says nothing about it, e.g. a FIFO). Otherwise each file's extension decides; an extension
    that names no format, or a format the command cannot write (``formats``), is a UsageError
    naming the file. ``--format`` together with several ``-o`` is ambiguous: a UsageError.
    """
    if not paths:
        return [Destination(None, fmt)]
    if len(set(paths)) != len(paths):
        twice = next(p for p in paths if paths.count(p) > 1)
        raise UsageError(f"-o {twice} is given twice")
    if explicit:
        if len(paths) > 1:
            raise UsageError(
                "--format applies to stdout or to one -o file; with several -o, "
                "each file's extension gives its format"
            )
        _check_writable(paths[0])
        return [Destination(paths[0], fmt)]
    plan = []
    known = ", ".join(e for e, f in EXTENSIONS.items() if f in formats)
    for path in paths:
        found = EXTENSIONS.get(PurePath(path).suffix.lower())
        if found is None or found not in formats:
            raise UsageError(
                f"-o {path}: cannot tell the output format from its extension "
                f"(use {known}, or give --format with a single -o)"
            )
        plan.append(Destination(path, found))
    for output in plan:
        _check_writable(output.path)
    return plan


def _check_writable(path: str | None) -> None:
    """Every ``-o`` folder is checked before measuring (``builder.files.atomic.check_can_write``),
    so
    several files are written all or none when one of them cannot be (a disk that fills half
    way can still stop the set part way)."""
    if path is not None:
        from builder.files.atomic import check_can_write

        check_can_write(path)


def write_outputs(
    plan: Sequence[Destination],
    render: Callable[[str, bool], str],
    inputs: Sequence[str | None] = (),
) -> None:
    """Render each format of ``plan`` once (``render(fmt, to_terminal)``) and deliver it: stdout,
    or the file, written atomically, with one ``wrote FILE (N bytes)`` line on stderr. No file is
    written when any ``-o`` names one of ``inputs`` (exit 2,
    ``builder.files.atomic.check_not_an_input``)."""
    from builder.files.atomic import check_not_an_input, write_atomic

    for path, _fmt in plan:
        if path is not None:
            check_not_an_input(path, inputs)

    texts: dict[tuple[str, bool], str] = {}
    for path, fmt in plan:
        key = (fmt, path is None)
        if key not in texts:
            texts[key] = render(fmt, path is None)
        if path is None:
            sys.stdout.write(texts[key])
            continue
        data = texts[key].encode("utf-8")
        write_atomic(path, data)
        sys.stderr.write(f"wrote {path} ({len(data):,} bytes)\n")
