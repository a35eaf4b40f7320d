"""The one verdict model: a limit against the value measured for it, whether ``compare`` was
asked for it (``--max-growth``, a gate) or a budget file was (``max-growth``,
``builder.size.budget``). ``Verdict`` is ``builder.size.verdict_model``'s, re-exported; the
gates on what a library holds are ``builder.size.content_gates``, which ``evaluate_gates`` and
``budget`` both call.

A limit has one name everywhere: the budget key is the name, the compare option is ``--`` and the
name. Checking is pure data in, pure data out; ``builder.render.text`` words the results.

Size limits as users write them for CI gates: ``10KB``, ``2.5MiB``, ``5%``, and what a
whole-target limit is checked against (``shipped_size``: the metallib plus the host library).

Gates are given on the command line in whatever unit is convenient: sizes are read by
``builder.files.bounds.parse_size`` (decimal and binary suffixes, a bare number is bytes).
Showing a limit is presentation's job (``builder.render.text.limit_text``).
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING

from builder.errors import UsageError
from builder.settings.declared import Limits
from builder.settings.validators import Limit
from builder.size.verdict_model import Verdict, version_key

__all__ = [
    "GROWTH",
    "Evaluated",
    "Gates",
    "Verdict",
    "check_pairs",
    "download_totals",
    "evaluate_gates",
    "shipped_size",
    "shipped_sizes",
    "tree_verdicts",
    "version_key",
]


if TYPE_CHECKING:
    from builder.size.compare import Comparison
    from builder.size.report import Report

GROWTH = ("max-growth", "max-download-growth")
"""The limits on growth since a base: ``limit`` and ``value`` are bytes grown."""


Evaluated = Sequence[tuple["Comparison", Sequence["Verdict"]]]
"""The library pairs of a ``compare`` run, each with its gate verdicts."""


@dataclass(frozen=True, kw_only=True)
class Gates(Limits):
    """The limits ``compare`` was asked to check (``Limits``, which budgets share, and two of
    its own); all optional."""

    fail_on_new_group: bool = False
    max_download_growth: Limit | None = None
    """On the modelled download (``download_totals``)."""

    @property
    def download(self) -> bool:
        """A download limit was asked for: both sides need download figures."""
        return self.max_download_growth is not None or self.max_download_size is not None


def shipped_sizes(comparison: Comparison) -> tuple[int, int, str]:
    """Base and head bytes of everything each side ships, and what that is: growth gates count the
    host library of a build with JIT units, not only its metallib.

    The host libraries' file sizes when every side with JIT units has one on disk; otherwise
    the JIT side as ``compare_jit`` measured it on both sides (embedded source bytes), like with
    like."""
    base, head, jit = comparison.base, comparison.head, comparison.jit
    if jit is None:
        return base.file_size, head.file_size, "metallib"
    metallib = "" if comparison.jit_only else "metallib + "
    if all(r.host_library is not None for r in (base, head) if r.jit_units):
        return shipped_size(base), shipped_size(head), f"{metallib}JIT host library"
    return (
        base.file_size + jit.base_total,
        head.file_size + jit.head_total,
        f"{metallib}embedded JIT source",
    )


def download_totals(base: Report, head: Report) -> tuple[int, int]:
    """The modelled download of both sides, for the download gates. A gate on download needs
    figures on both sides: a side without them (a report saved without ``--download``, a build
    with no metallib) is an error (exit 2), never a gate passed on a number not measured."""
    from builder.errors import UsageError

    for side, report in (("base", base), ("head", head)):
        if report.download is None:
            raise UsageError(
                f"{report.source.label}: no download figures for the {side} side "
                "(no metallib, or a report saved without --download)"
            )
    assert base.download is not None and head.download is not None
    return base.download.total, head.download.total


def _growth(name: str, subject: str, limit: Limit, base: int, head: int) -> Verdict:
    return Verdict(name, subject, int(limit.allowed(base)), head - base, limit, base)


def evaluate_gates(comparison: Comparison, gates: Gates) -> list[Verdict]:
    """Check each gate that was asked for, keeping the measured sizes it was checked against.

    A library head adds (``Comparison.change``) is checked as growth from nothing: all its bytes
    are growth, so a percentage allows none of them. One head removes is checked by the growth
    gates only (it shrank by all its bytes); head holds nothing of it for the others."""
    from builder.size.compare import jit_what

    results = []
    label = comparison.library.source.label
    if comparison.change != "paired":
        label = f"{label} ({comparison.change} library)"
    head_label = label
    head_size, new = comparison.head.file_size, comparison.new_groups
    jit = comparison.jit
    if comparison.jit_only and jit is not None:  # no metallib on either side: gate the JIT side
        head_label = f"the {jit_what(jit.host_measured)} of {label}"
        head_size, new = jit.head_total, jit.new_units
    if gates.max_growth is not None:
        base_all, head_all, what = shipped_sizes(comparison)
        subject = (
            label
            if jit is None
            else f"the {what} of {label}"
            if comparison.jit_only
            else f"{label} ({what})"
        )
        results.append(_growth("max-growth", subject, gates.max_growth, base_all, head_all))
    in_head = comparison.change != "removed"
    if gates.max_size is not None and in_head:
        results.append(Verdict("max-size", head_label, gates.max_size, head_size))
    if gates.max_total_size is not None and in_head:
        subject = f"{label} (metallib + JIT host library)" if jit is not None else label
        total = shipped_size(comparison.head)
        results.append(Verdict("max-total-size", subject, gates.max_total_size, total))
    if gates.fail_on_new_group and in_head:
        results.append(Verdict("fail-on-new-group", head_label, 0, len(new), new_groups=tuple(new)))
    if gates.download:
        base_dl, head_dl = download_totals(comparison.base, comparison.head)
        subject = f"the download of {head_label}"
        if gates.max_download_growth is not None:
            limit = gates.max_download_growth
            results.append(_growth("max-download-growth", subject, limit, base_dl, head_dl))
        if gates.max_download_size is not None and in_head:
            size = gates.max_download_size
            results.append(Verdict("max-download-size", subject, size, head_dl))
    results += _content(comparison, gates, label)
    if in_head:
        limits = (gates.fail_on_missing, gates.max_unattributed)
        results += tree_verdicts([comparison.head], *limits, head_label)
    return results


def _content(comparison: Comparison, gates: Gates, label: str) -> list[Verdict]:
    """The gates on what head's metallib holds (``builder.size.content_gates``); a library
    head removed holds nothing: only ``fail-on-removed`` sees it (all its functions gone)."""
    from builder.size import content_gates as content

    base, head = comparison.base, comparison.head
    out = []
    in_head = comparison.change != "removed"
    names, base_names = ([f.name for f in r.functions] for r in (head, base))
    if in_head:
        out += [content.required(text, label, names, base_names) for text in gates.require]
    if gates.fail_on_removed is not None:
        out.append(content.removed_functions(gates.fail_on_removed, label, comparison.removed))
    if not in_head:
        return out
    if gates.min_functions is not None:
        out.append(content.min_functions(gates.min_functions, label, head.function_count))
    out += content.floor_verdicts(head, label, gates.max_deployment_target, gates.max_metal_version)
    if gates.fail_on_platform_change and comparison.change == "paired":
        out.append(content.platform_change(base, head, label))
    out += content.empty_libraries([head], label)
    return out


def tree_verdicts(
    reports: Sequence[Report],
    fail_on_missing: bool,
    max_unattributed: int | None,
    subject: str,
    measured_in: tuple[str, ...] = (),
) -> list[Verdict]:
    """``fail-on-missing`` and ``max-unattributed`` on ``reports`` (a comparison's head, a
    budget's libraries, summed): what they hold of their kernel tree
    (``builder.size.tree_match``). A gate that cannot be measured (no tree, not grouped by
    source) is a UsageError (exit 2), never a pass."""
    from builder.size.tree_match import unattributed

    out = []
    if fail_on_missing:
        missing: list[str] = []
        for report in reports:
            if report.tree_kernels_missing is None:
                raise UsageError(
                    f"{report.source.label}: fail-on-missing needs the kernel tree the library "
                    "was built from (--source-dir; a budget's source-dir)"
                )
            missing += report.tree_kernels_missing
        names = tuple(sorted(missing))
        out.append(
            Verdict("fail-on-missing", subject, 0, len(names), measured_in=measured_in, names=names)
        )
    if max_unattributed is not None:
        size = 0
        for report in reports:
            row = unattributed(report)
            if row is None:
                raise UsageError(
                    f"{report.source.label}: max-unattributed limits the bytes no entry file "
                    f"produces, which only grouping by source shows (grouped by {report.by})"
                )
            size += row.bytes
        limit = max_unattributed
        out.append(Verdict("max-unattributed", subject, limit, size, measured_in=measured_in))
    return out


def check_pairs(
    base: list[Report],
    head: list[Report],
    gates: Gates,
    compared: Callable[[Comparison], object] = lambda _: None,
) -> list[tuple[Comparison, list[Verdict]]]:
    """Pair the libraries of two targets (``pair_reports``), compare each pair (then tell
    ``compared``, before its gates are checked) and check its gates: what ``compare`` renders."""
    from builder.size.compare import compare_pair, pair_reports

    out = []
    for b, h in pair_reports(base, head):
        comparison = compare_pair(b, h)
        compared(comparison)
        out.append((comparison, evaluate_gates(comparison, gates)))
    return out


def shipped_size(report: Report) -> int:
    """Bytes of everything ``report``'s library ships: the metallib file plus, for a build with JIT
    units, its host library file (``--max-total-size``, budgets' ``max-total-size``).

    A build whose manifest names JIT units but whose host library was not found cannot be
    measured: UsageError (exit 2), so a gate never passes on the metallib alone."""
    if not report.jit_units:
        return report.file_size
    if report.host_library is None:
        raise UsageError(
            f"{report.source.label}: has JIT units but its host library was not "
            "found; cannot measure everything it ships"
        )
    return report.file_size + report.host_library.file_size
