"""Several outputs from one run: ``-o size.md -o size.html -o size.json``.

Each ``-o`` file's format comes from its extension, so one measurement feeds the PR comment, the
HTML artifact and the JSON kept for the next run. The plan is made before anything is measured,
so a typo in an extension costs nothing; every format is rendered once, and every file is written
atomically (``builder.files.atomic``).

The GitHub Actions step summary: the run's markdown, with its verdict, appended once per run.

Actions gives every step its own file (``GITHUB_STEP_SUMMARY``) and shows what was appended to it
on the run's page. A command that writes several outputs still appends one summary: the caller
passes the markdown once, after every gate has been decided.

A run's markdown to where CI readers see it: the step summary (once) and the sticky comment.

``compare`` and ``budget`` call ``publish_markdown`` once per run, after every gate is decided, so
the summary and the comment always carry the verdict. The pull request is looked up before any
measuring (``pull_request_from_env``), so a job missing its token fails in a second, not after a
download.
"""

from __future__ import annotations

import os
import sys
from collections.abc import Callable, Mapping, Sequence
from pathlib import PurePath
from typing import TYPE_CHECKING, NamedTuple

from builder.errors import OutputError, UsageError

if TYPE_CHECKING:  # the GitHub client (http.client, ssl) is imported only to post
    from builder.publish.github import PullRequest

__all__ = [
    "EXTENSIONS",
    "STEP_SUMMARY",
    "Destination",
    "append_step_summary",
    "plan_outputs",
    "publish_markdown",
    "write_outputs",
]


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


def publish_markdown(
    markdown: str,
    *,
    marker: str,
    pull_request: PullRequest | None,
    environ: Mapping[str, str] = os.environ,
) -> list[str]:
    """Append ``markdown`` to the step summary (when Actions set one) and, given a pull request,
    create or edit its comment that starts with ``marker``. Returns what was done, one line each,
    for stderr."""
    done = []
    summary = append_step_summary(markdown, environ)
    if summary is not None:
        done.append(f"appended the markdown to the step summary {summary}")
    if pull_request is not None:
        from builder.publish.github import post_sticky_comment

        posted = post_sticky_comment(pull_request, markdown, marker)
        where = posted.url or f"comment {posted.comment_id}"
        done.append(
            f"{posted.action} the size comment on pull request #{pull_request.number}: {where}"
        )
    return done
