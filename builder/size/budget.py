"""Check the size budgets of the project (``builder.size.budget_file`` reads them): measure each
budget's targets, check every limit.

A glob's libraries are summed. Checking returns numbers only (``builder.size.verdicts.Verdict``,
the model ``compare``'s gates share); presentation words them (``render.text.gate_message``).
"""

from __future__ import annotations

import glob
import zlib
from collections.abc import Callable, Mapping, Sequence
from functools import partial
from typing import TYPE_CHECKING

from builder.errors import BuilderError, CheckFailed, MetallibError, UsageError
from builder.files.reading import open_regular
from builder.size.verdicts import Verdict, shipped_size, tree_verdicts

if TYPE_CHECKING:
    from builder.inputs.targets import Progress
    from builder.size.budget_file import Budget
    from builder.size.load import TreeSources
    from builder.size.report import Report

__all__ = ["TreeLoader", "Warned", "check_budgets", "download_bytes", "tree_sources"]


def download_bytes(report: Report) -> int:
    """Bytes a user downloads for ``report``'s library, as ``report --download`` models them
    (``builder.size.download``: zlib level 6 raw deflate, as a wheel's ZIP stores the file).

    The one place ``budget`` (``max-download-size``) and ``history --download`` get download sizes
    from. A saved report gives the total it recorded with ``--download`` (UsageError without
    one: its file was measured elsewhere); a build whose units are all JIT has no metallib,
    so its host library is compressed whole with the same codec and level."""
    if report.download is not None:
        return report.download.total
    if report.source.kind == "report":
        raise UsageError(
            f"{report.source.label}: a saved report without download figures "
            "(save it with report --download --format json)"
        )
    if report.source.path is not None:
        from builder.metallib import open_metallib
        from builder.size.attribution import attribute
        from builder.size.download import download_total

        with open_metallib(report.source.path, report.source.window) as lib:
            return download_total(lib, attribute(lib))
    if report.host_library is None:
        raise UsageError(
            f"{report.source.label}: no library file to measure the download size "
            "of (a build without metallib or host library)"
        )
    return _deflated_size(report.host_library.path)


def _deflated_size(path: str) -> int:
    from builder.size.download import LEVEL

    compressor = zlib.compressobj(LEVEL, zlib.DEFLATED, -15)
    total = 0
    try:
        with open_regular(path, "the host library") as handle:  # /dev/zero would never end
            while chunk := handle.read(1 << 20):
                total += len(compressor.compress(chunk))
    except OSError as exc:
        raise UsageError(f"{path}: cannot read: {exc.strerror or exc}") from None
    return total + len(compressor.flush())


TreeLoader = Callable[["Budget"], "TreeSources"]
"""What turns a budget's kernel tree (its ``source_dir``, ``include_dirs``, ``defines``,
``exclude`` and ``config``) into the entry file of every kernel, for each library's platform.
The CLI passes the one its ``--source-dir`` options use (``builder.cli.tree_options.tree_of``)."""


Warned = Callable[["Budget", "Report"], object]
"""Told of every library a budget measured, for its ``Report.warnings`` (a kernel tree that
does not match it): the CLI says them on stderr and in every output."""


def check_budgets(
    budgets: Sequence[Budget],
    *,
    progress: Progress | None = None,
    trees: TreeLoader | None = None,
    warned: Warned = lambda budget, report: None,
) -> list[Verdict]:
    """Measure every budget's target (``builder.size.load``) and check each of its limits.

    A budget that cannot be measured (a missing target, an unreadable library or tree) is a
    UsageError whose line names the budget file and the budget (``Budget.where``), whatever
    raised it."""
    verdicts: list[Verdict] = []
    for budget in budgets:
        try:
            verdicts += _measure(budget, progress, trees or tree_sources, warned)
        except CheckFailed:
            raise
        except (BuilderError, MetallibError) as exc:
            text = str(exc)
            if text.startswith(budget.where):
                raise
            raise UsageError(f"{budget.where}: {text}") from None
    return verdicts


def _measure(
    budget: Budget, progress: Progress | None, trees: TreeLoader, warned: Warned
) -> list[Verdict]:
    from builder.size.load import load_reports

    sources = None
    if budget.source_dir is not None:
        _check_tree(budget)
        sources = trees(budget)

    def load(text: str, member: str | None = None) -> list[Report]:
        # the base is grouped as the target is (its tree too), as compare groups both sides
        return load_reports(
            text,
            by=budget.by,
            platform=budget.platform,
            sources=sources,
            progress=progress,
            member=member,
        )

    targets = _targets(budget, budget.target)
    reports = [r for text in targets for r in load(text, budget.member)]
    for report in reports:
        warned(budget, report)
    base = None
    if budget.base is not None:
        base = [r for text in _targets(budget, budget.base) for r in load(text)]
        if budget.member is not None:  # the same library in the base, not all of the base's
            base = _partners(base, reports)
    return _verdicts(budget, reports, base)


def _partners(base: list[Report], reports: list[Report]) -> list[Report]:
    """The libraries of ``base`` that are ``reports``' (``pair_reports``: by name, then by
    identity); none for a library the base lacks, whose bytes are then all growth."""
    from builder.size.compare import pair_reports

    return [b for b, h in pair_reports(base, reports) if b is not None and h is not None]


def _check_tree(budget: Budget) -> None:
    if budget.source_dir is not None and not budget.source_dir.is_dir():
        raise UsageError(f"{budget.where}: 'source-dir' {budget.source_dir} is not a folder")
    if budget.config is not None and not budget.config.is_file():
        raise UsageError(f"{budget.where}: 'config' {budget.config}: no such file")


def tree_sources(budget: Budget) -> TreeSources:
    """The entry file of every kernel of the budget's tree for each library's platform, loaded
    without progress: the loader when ``check_budgets`` is given none."""
    from builder.kernels.discovery import load_tree
    from builder.size.load import TreeSources

    return TreeSources(
        lambda platform: load_tree(
            budget.source_dir,
            include_dirs=budget.include_dirs,
            defines=budget.defines,
            exclude=budget.exclude,
            config_file=budget.config,
            platform=platform,
        )
    )


def _targets(budget: Budget, text: str) -> list[str]:
    """``text`` as targets: a glob's matches (sorted), a path from the budget's folder, or a
    ``PACKAGE==VERSION`` spec as written."""
    from builder.inputs.wheels import parse_spec

    if any(c in text for c in "*?["):
        found = sorted(glob.glob(str(budget.path(text)), recursive=True))
        if not found:
            raise UsageError(f"{budget.where}: target {text!r} matches no file")
        return found
    if parse_spec(text) is not None and not (budget.root / text).exists():
        return [text]
    return [str(budget.path(text))]


def _where(report: Report) -> str:
    """Where a budget's value was measured, as the user named it (a spec and its member, a file,
    a build folder), not the cache path a wheel was unpacked to."""
    src = report.source
    if src.kind == "report":
        return f"saved report {src.target}"
    return src.label


def _verdicts(budget: Budget, reports: list[Report], base: list[Report] | None) -> list[Verdict]:
    where = tuple(_where(r) for r in reports)
    hosts = tuple(r.host_library.path for r in reports if r.host_library is not None)
    verdict = partial(Verdict, subject=budget.name, measured_in=where)  # a limit of this budget
    out = []
    if budget.max_size is not None:
        size = sum(r.file_size if r.source.path is not None else shipped_size(r) for r in reports)
        out.append(verdict("max-size", limit=budget.max_size, value=size))
    if budget.max_total_size is not None:
        total = sum(map(shipped_size, reports))
        limit = budget.max_total_size
        out.append(verdict("max-total-size", limit=limit, value=total, measured_in=where + hosts))
    if budget.max_download_size is not None:
        size = sum(map(download_bytes, reports))
        out.append(verdict("max-download-size", limit=budget.max_download_size, value=size))
    if budget.max_functions is not None:
        count = sum(r.function_count for r in reports)
        out.append(verdict("max-functions", limit=budget.max_functions, value=count))
    if budget.groups:
        measured = _group_bytes(reports, budget.by)
        for group, limit in budget.groups.items():
            if group not in measured:
                raise _no_group(budget, group, measured)
            out.append(verdict("groups", limit=limit, value=measured[group], group=group))
    if budget.max_growth is not None and base is not None:
        base_total = sum(map(shipped_size, base))
        out.append(
            verdict(
                "max-growth",
                limit=int(budget.max_growth.allowed(base_total)),
                value=sum(map(shipped_size, reports)) - base_total,
                measured_in=tuple(_where(r) for r in base) + where + hosts,
                growth=budget.max_growth,
                base_value=base_total,
            )
        )
    out += _content(budget, reports, base, where)
    limits = (budget.fail_on_missing, budget.max_unattributed)
    return out + tree_verdicts(reports, *limits, budget.name, where)


def _content(
    budget: Budget, reports: list[Report], base: list[Report] | None, where: tuple[str, ...]
) -> list[Verdict]:
    """The limits on what the target holds, checked as ``compare``'s gates of the same names
    (``builder.size.content_gates``); a glob's libraries hold their functions together."""
    from builder.size import content_gates as content
    from builder.size.compare import pair_reports

    name, out = budget.name, []
    names = [f.name for r in reports for f in r.functions]
    base_names = None if base is None else [f.name for r in base for f in r.functions]
    for text in budget.require:
        out.append(content.required(text, name, names, base_names, measured_in=where))
    if budget.fail_on_removed is not None and base is not None:
        kept = set(names)
        gone = [f for r in base for f in r.functions if f.name not in kept]
        gone.sort(key=lambda f: (-f.bytes, f.name))
        out.append(content.removed_functions(budget.fail_on_removed, name, gone, where))
    if budget.min_functions is not None:
        count = sum(r.function_count for r in reports)
        out.append(content.min_functions(budget.min_functions, name, count, where))

    def subject(report: Report) -> str:  # a glob's libraries are named each
        return name if len(reports) == 1 else f"{name} ({report.source.label})"

    for report in reports:
        out += content.floor_verdicts(
            report, subject(report), budget.max_deployment_target, budget.max_metal_version, where
        )
    if budget.fail_on_platform_change and base is not None:
        for b, h in pair_reports(base, reports):
            if b is not None and h is not None:
                out.append(content.platform_change(b, h, subject(h), where))
    for report in reports:
        out += content.empty_libraries([report], subject(report))
    return out


def _group_bytes(reports: Sequence[Report], by: str) -> dict[str, int]:
    """Bytes per group over all libraries; grouped by kernel, a JIT unit's bytes in the host
    library count for its group too (everything shipped)."""
    from builder.size.compare import jit_breakdown

    totals: dict[str, int] = {}
    for report in reports:
        for group in report.groups:
            totals[group.name] = totals.get(group.name, 0) + group.bytes
        jit = jit_breakdown(report) if by == "kernel" else None
        for row in jit.units if jit is not None else ():
            totals[row.name] = totals.get(row.name, 0) + row.bytes
    return totals


def _no_group(budget: Budget, group: str, measured: Mapping[str, int]) -> UsageError:
    import difflib

    close = difflib.get_close_matches(group, list(measured), n=3)
    hint = f"; closest: {', '.join(close)}" if close else ""
    return UsageError(
        f"{budget.where}: groups: no group {group!r} in {budget.target} by {budget.by}{hint}"
    )
