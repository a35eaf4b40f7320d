"""Several outputs from one run: ``-o size.md -o size.html -o size.json``; and which view draws
each result in each format, the one dispatch every command's output goes through (``*_output``):
a result is made into tables once (``builder.render.table``) and written by the generic writers,
JSON by ``builder.render.json_docs``, HTML by ``builder.render.html``, the PR comment is the
markdown of ``compare`` and ``budget`` (``builder.render.pr_comment``). Heavy views (rich, the
HTML page) are imported only for the format asked for, so ``report --format json`` pays for
none of them.

Each ``-o`` file's format comes from its extension, so one measurement feeds the PR comment, the
HTML artifact and the JSON kept for the next run. The plan is made before anything is measured,
so a typo in an extension costs nothing; every format is rendered once, and every file is written
atomically (``builder.files.atomic``).

A run's markdown goes where CI readers see it: the GitHub Actions step summary and the sticky
comment. Actions gives every step its own summary file (``GITHUB_STEP_SUMMARY``) and shows what
was appended to it on the run's page; ``compare`` and ``budget`` call ``publish_markdown`` once
per run, after every gate is decided, so however many outputs a command writes, the summary is
appended once and it and the comment always carry the verdict. The pull request is looked up
before any measuring (``pull_request_from_env``), so a job missing its token fails in a second,
not after a download.
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

if TYPE_CHECKING:
    from builder.cmake_build.driver import PresetResult
    from builder.render.library import Found
    from builder.render.table import Table, Words
    from builder.size.attribution import BinaryAccount
    from builder.size.duplicates import Duplicates
    from builder.size.history import LibraryHistory
    from builder.size.report import Report
    from builder.size.verdicts import Evaluated, Verdict
    from builder.subsets.variants import VariantsRun

__all__ = [
    "EXTENSIONS",
    "STEP_SUMMARY",
    "Destination",
    "append_step_summary",
    "budget_output",
    "comparison_output",
    "history_output",
    "plan_outputs",
    "presets_output",
    "publish_markdown",
    "report_output",
    "shown_top",
    "sources_output",
    "variants_output",
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


def _written(
    tables: Sequence[Table],
    kind: str,
    *,
    color: bool = False,
    width: int | None = None,
    preface: Sequence[Words] = (),
) -> str:
    """``tables`` in the format ``kind`` names: ``csv``, ``markdown``, else the terminal's."""
    # imported here: every command with -o imports this module, and the writers bring the
    # size readers with them (embed's start-up, issue 34 item 12)
    from builder.render.table import markdown_tables, text_tables
    from builder.render.table_csv import csv_records

    if kind == "csv":
        return csv_records(tables)
    if kind == "markdown":
        return markdown_tables(tables)
    return text_tables(tables, color=color, width=width, preface=preface)


def shown_top(top: int | None, kind: str) -> int | None:
    """``--top`` for ``kind``: by default 20 rows for people, all for machines; 0 is all."""
    if top is None:
        return None if kind in ("csv", "json") else 20
    return None if top <= 0 else top


def report_output(
    reports: Sequence[Report],
    kind: str,
    top: int | None,
    color: bool,
    width: int | None,
    binaries: Sequence[BinaryAccount] = (),
    duplicates: Duplicates | None = None,
) -> str:
    """``report --format kind``; ``binaries``: the account of each binary the libraries sit in
    (tables after the libraries', ``binaries`` in JSON; not in HTML); ``duplicates``: the
    functions in more than one library (None: fewer than two libraries; a table last,
    ``duplicates`` in JSON; not in HTML)."""
    if kind == "html":
        from builder.render.html import report_html

        return report_html(reports)
    if kind == "json":
        from builder.render.json_docs import report_json

        return report_json(reports, binaries, None if duplicates is None else duplicates.pairs)
    from builder.render.report_tables import report_tables

    tables = report_tables(reports, shown_top(top, kind), binaries)
    if duplicates is not None:
        from builder.render.duplicates import duplicates_table

        tables.append(duplicates_table(duplicates.pairs, len(duplicates.libraries)))
    return _written(tables, kind, color=color, width=width)


def comparison_output(
    evaluated: Evaluated, kind: str, top: int | None, color: bool, width: int | None
) -> str:
    """``compare --format kind``: every library pair with its gate verdicts."""
    if kind == "json":
        from builder.render.json_docs import compare_json

        # JSON lists every group; --top says how many rows rows_shown, renames and the
        # largest changed functions describe (20 unless given; 0: all)
        return compare_json(evaluated, 20 if top is None else top or None)
    if kind == "markdown":
        from builder.render.pr_comment import comment_markdown

        return comment_markdown(evaluated, shown_top(top, kind))
    if kind == "html":
        from builder.render.html import compare_html

        return compare_html(evaluated)
    from builder.render.compare_tables import compare_tables, pairs_summary

    if kind == "csv":
        several = len(evaluated) != 1 or evaluated[0][0].change != "paired"
        return _written(compare_tables(evaluated, None, context=several), kind)
    tables = compare_tables(evaluated, shown_top(top, kind))
    # which libraries are on one side only, when the targets' libraries did not all pair
    summary = pairs_summary([comparison for comparison, _ in evaluated])
    preface = [] if summary is None else [(summary,)]
    return _written(tables, kind, color=color, width=width, preface=preface)


def budget_output(
    verdicts: Sequence[Verdict],
    source: str,
    kind: str,
    color: bool,
    width: int | None,
    *,
    warnings: Sequence[str] = (),
) -> str:
    """``budget --format kind``; ``warnings``: what stderr said of the libraries measured
    (``BUDGET: LIBRARY: sentence``), carried by every format."""
    if kind == "json":
        from builder.render.json_docs import budget_json

        return budget_json(verdicts, source, warnings)
    if kind == "markdown":
        from builder.render.budget_tables import budget_markdown

        return budget_markdown(verdicts, source, warnings=warnings)
    from dataclasses import replace

    from builder.render.budget_tables import budget_table
    from builder.render.table import Said

    table = budget_table(verdicts, source)
    notes = tuple(("warning: ", Said(w)) for w in warnings)
    return _written([replace(table, notes=notes)], kind, color=color, width=width)


def history_output(
    histories: Sequence[LibraryHistory], by: str, kind: str, color: bool, width: int | None
) -> str:
    """``history --format kind``: each library's history (one, unless a target holds
    several), with the groups it shows (``LibraryHistory.top``)."""
    if kind == "json":
        from builder.render.json_docs import history_json

        return history_json(histories, by)
    if kind == "html":
        from builder.render.html import history_html

        return history_html(histories, by)
    from builder.render.history_tables import history_tables, moves_table

    fit = width if kind == "table" else None  # as many group columns as a terminal shows
    tables = []
    for history, table in zip(histories, history_tables(histories, by, fit), strict=True):
        moves = None if kind == "csv" else moves_table(history, by)  # CSV: the points only
        tables += [table] if moves is None else [table, moves]
    return _written(tables, kind, color=color, width=width)


def sources_output(
    path: str,
    found: Found,
    namespace: str | None,
    kind: str,
    color: bool,
    width: int | None,
) -> str:
    """``sources --format kind``: a host library's run-time sources, as a table or JSON."""
    if kind == "json":
        from builder.render.json_docs import sources_json

        return sources_json(path, found, namespace)
    from builder.render.library import sources_tables

    return _written(sources_tables(path, found, namespace), kind, color=color, width=width)


def variants_output(run: VariantsRun, kind: str) -> str:
    """``variants --from --format kind``: the variants and their plans (CSV: the variants)."""
    if kind == "json":
        from builder.render.variants import variants_json

        return variants_json(run)
    from builder.render.variants import variants_html, variants_tables

    if kind == "html":
        return variants_html(run)
    tables = variants_tables(run)
    return _written(tables[:1] if kind == "csv" else tables, kind)


def presets_output(results: Sequence[PresetResult], kind: str) -> str:
    """``presets --format kind``: the presets side by side."""
    from builder.render.build import presets_json, presets_table

    if kind == "json":
        return presets_json(results) + "\n"
    return _written([presets_table(results)], kind)
