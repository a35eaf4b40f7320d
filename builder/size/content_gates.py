"""Gates on what a library holds, not on how big it is (issue 35): the functions it must hold
(``require``), the ones it must not lose (``fail-on-removed``), how many it holds at least
(``min-functions``, and ``empty-library``, always checked), the platform it needs
(``max-deployment-target``, ``max-metal-version``) and whether that changed
(``fail-on-platform-change``).

Every maximum-size gate passes a library that lost its kernels: it got smaller. These gates
fail it. Each returns a ``builder.size.verdicts.Verdict``; ``compare`` (``evaluate_gates``) and
``budget`` (``_verdicts``) call the same functions, so a gate and a budget key of one name are
checked alike. Names are matched as ``slim --keep`` matches them (fnmatch, case-sensitive).
"""

from __future__ import annotations

import fnmatch
import re
from collections.abc import Iterable, Sequence
from typing import TYPE_CHECKING, NamedTuple

from builder.errors import UsageError
from builder.files.bounds import brief
from builder.settings.validators import parse_requirement
from builder.size.verdict_model import Verdict, version_key

if TYPE_CHECKING:
    from builder.size.report import Report
    from builder.size.rollup import FunctionRow

__all__ = [
    "Floor",
    "empty_libraries",
    "floor_verdicts",
    "library_floor",
    "min_functions",
    "platform_change",
    "removed_functions",
    "required",
]


def _matcher(pattern: str) -> re.Pattern[str]:
    return re.compile(fnmatch.translate(pattern))  # what fnmatchcase does, compiled once


def _count(names: Iterable[str], pattern: str) -> int:
    match = _matcher(pattern).match
    return sum(1 for name in names if match(name))


def required(
    text: str,
    subject: str,
    head: Sequence[str],
    base: Sequence[str] | None,
    measured_in: tuple[str, ...] = (),
) -> Verdict:
    """``require``: ``head`` (function names) holds at least N names matching the glob. The
    verdict keeps how many ``base`` holds (``base_value``; None without a base): a reviewer
    reads "head holds 0 (base: 1,569)" as the kernels left out."""
    rule = parse_requirement(text)
    in_base = None if base is None else _count(base, rule.pattern)
    return Verdict(
        "require",
        subject,
        rule.at_least,
        _count(head, rule.pattern),
        base_value=in_base,
        at_least=True,
        pattern=rule.pattern,
        measured_in=measured_in,
    )


def removed_functions(
    pattern: str,
    subject: str,
    removed: Sequence[FunctionRow],
    measured_in: tuple[str, ...] = (),
) -> Verdict:
    """``fail-on-removed``: the functions of the base that head lacks (``removed``, largest
    first) matching ``pattern``; ``value`` is how many, ``base_value`` their bytes in the base,
    ``names`` all of them, largest first."""
    match = _matcher(pattern).match
    gone = [row for row in removed if match(row.name)]
    return Verdict(
        "fail-on-removed",
        subject,
        0,
        len(gone),
        base_value=sum(row.bytes for row in gone),
        pattern=pattern,
        names=tuple(row.name for row in gone),
        measured_in=measured_in,
    )


def min_functions(
    limit: int, subject: str, count: int, measured_in: tuple[str, ...] = ()
) -> Verdict:
    """``min-functions``: the library holds at least ``limit`` functions."""
    return Verdict("min-functions", subject, limit, count, at_least=True, measured_in=measured_in)


def empty_libraries(reports: Iterable[Report], subject: str | None = None) -> list[Verdict]:
    """``empty-library``, checked always: a failed verdict for each metallib holding no function
    (it builds, and fails at load time: "Error while loading function"). A library that holds
    functions gives none, so a run without gates lists no verdict it was not asked for; a build
    whose units are all JIT has no metallib and is not one."""
    return [
        Verdict(
            "empty-library",
            subject or r.source.label,
            1,
            0,
            at_least=True,
            base_value=r.file_size,
            measured_in=(r.source.path,) if r.source.path else (),
        )
        for r in reports
        if r.function_count == 0 and r.source.path is not None
    ]


class Floor(NamedTuple):
    """What a library needs of the OS, as its container states it (``report.provenance``)."""

    platform: str
    deployment_target: str
    """The header's deployment target (``26.2``)."""
    metal_version: str | None
    """The highest Metal language version its functions state; None when none states one."""
    air_versions: tuple[str, ...]
    metal_versions: tuple[str, ...]


def library_floor(report: Report) -> Floor:
    """``report``'s floor from its provenance record (``library``, docs/report-schema.md); a
    report without one (a build without metallib, a report saved by an older tool) is a
    UsageError: a platform gate never passes on a version not read."""
    lib = report.provenance.get("library") or {}
    target = lib.get("deployment_target")
    if not target:
        raise UsageError(
            f"{report.source.label}: no deployment target recorded (no metallib, or a "
            "report saved without its library record): cannot check its platform"
        )
    metal = tuple(str(v) for v in lib.get("metal_language_versions") or ())
    air = tuple(str(v) for v in lib.get("air_versions") or ())
    for version in (str(target), *metal, *air):  # a saved report's text is untrusted
        if _version(version) == (-1,):
            raise UsageError(f"{report.source.label}: {brief(version)} is not a version")
    highest = max(metal, key=_version, default=None)
    return Floor(str(lib.get("platform") or "macOS"), str(target), highest, air, metal)


def _version(text: str) -> tuple[int, ...]:
    """``text`` as a version, ``(-1,)`` when it is none (``library_floor`` refuses those)."""
    if len(text) > 40 or not text.strip():
        return (-1,)
    try:
        return version_key(text)
    except ValueError:
        return (-1,)


def floor_verdicts(
    report: Report,
    subject: str,
    max_deployment_target: str | None,
    max_metal_version: str | None,
    measured_in: tuple[str, ...] = (),
) -> list[Verdict]:
    """``max-deployment-target`` and ``max-metal-version``: the library's floor is not above
    them (versions compared as versions: 26.2 > 14.0, 3.10 > 3.9)."""
    if max_deployment_target is None and max_metal_version is None:
        return []
    floor = library_floor(report)
    out = []
    if max_deployment_target is not None:
        out.append(_version_verdict("max-deployment-target", subject, floor.deployment_target,
                                    max_deployment_target, measured_in))  # fmt: skip
    if max_metal_version is not None:
        if floor.metal_version is None:
            raise UsageError(
                f"{report.source.label}: no function states a Metal language version: "
                "cannot check --max-metal-version"
            )
        out.append(_version_verdict("max-metal-version", subject, floor.metal_version,
                                    max_metal_version, measured_in))  # fmt: skip
    return out


def _version_verdict(
    name: str, subject: str, value: str, limit: str, measured_in: tuple[str, ...]
) -> Verdict:
    return Verdict(name, subject, 0, 0, value_text=value, limit_text=limit, measured_in=measured_in)


def platform_change(
    base: Report, head: Report, subject: str, measured_in: tuple[str, ...] = ()
) -> Verdict:
    """``fail-on-platform-change``: head's deployment target, Metal language versions or AIR
    versions differ from base's. ``names`` are the facts that changed, each ``what base →
    head`` (``deployment target macOS 26.2 → 14.0``); ``value`` how many."""
    b, h = library_floor(base), library_floor(head)
    changes = []
    if (b.platform, _version(b.deployment_target)) != (h.platform, _version(h.deployment_target)):
        shown = (
            h.deployment_target
            if h.platform == b.platform
            else f"{h.platform} {h.deployment_target}"
        )
        changes.append(f"deployment target {b.platform} {b.deployment_target} → {shown}")
    for what, old, new in (
        ("Metal", b.metal_versions, h.metal_versions),
        ("AIR", b.air_versions, h.air_versions),
    ):
        if sorted(old, key=_version) != sorted(new, key=_version):
            changes.append(f"{what} {', '.join(old) or 'none'} → {', '.join(new) or 'none'}")
    return Verdict(
        "fail-on-platform-change",
        subject,
        0,
        len(changes),
        names=tuple(changes),
        measured_in=measured_in,
    )
