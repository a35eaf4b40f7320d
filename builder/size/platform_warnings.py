"""What is wrong with the platform a library states: the sentences of ``Report.warnings`` (and
``verify``'s) about its versions, and its wheel's platform tag.

Three facts, each read from the library alone or from it and its wheel's file name:

- its functions state different AIR or Metal Shading Language versions (their ``VERS`` tags,
  ``builder.metallib.versions``): the functions apart from the most common version are named;
- a Metal Shading Language version its functions state needs a newer OS than the deployment
  target its header states (``builder.kernels.platforms.LOWEST_OS``): those functions are named;
- its deployment target is newer than its wheel's platform tag (mlx-metal 0.32.1's
  ``macosx_26_0`` wheel holds a library for macOS 26.2): pip installs the wheel on an OS the
  library is not built for. A binary may hold libraries for several OS releases by design
  (torch 2.14.1's ``libtorch_cpu.dylib``: ``metal_basic`` for macOS 14.0 and ``metal_40`` for
  26.2, loaded only there), so a library above the tag in a binary holding one that meets it
  is a note, not a fault (:class:`TagCheck`); a ``.metallib`` file above the tag, or a binary
  none of whose libraries meets it, is. ``verify`` fails on the fault (docs/verify.md).

A sentence never names the library: the CLI prefixes its label (``builder.cli.loading``).
"""

from __future__ import annotations

import re
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, replace
from pathlib import Path
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from builder.inputs.targets import Library
    from builder.metallib.reader import Provenance
    from builder.size.report import Report

__all__ = [
    "TagCheck",
    "check_wheel_tag",
    "library_warnings",
    "version_warnings",
    "wheel_tag",
    "with_platform_warnings",
]

SHOWN = 5
"""Function names a sentence shows before "and N more" (JSON ``provenance`` holds them all)."""

_TAG = re.compile(r"(macosx|ios)_(\d+)_(\d+)_\w+")
_OS = {"macosx": "macOS", "ios": "iOS"}


def _key(version: str) -> tuple[int, ...]:
    """``26.2`` as (26, 2, 0), for comparing versions as numbers."""
    parts = [int(p) for p in re.findall(r"\d+", version)[:3]]
    return tuple(parts + [0] * (3 - len(parts)))


def _names(names: Sequence[str], total: int | None = None) -> str:
    """The first ``SHOWN`` names, then how many more."""
    more = (total if total is not None else len(names)) - min(len(names), SHOWN)
    shown = ", ".join(names[:SHOWN])
    return f"{shown} and {more:,} more" if more > 0 else shown


def version_warnings(library: Mapping[str, Any]) -> list[str]:
    """The sentences about the versions the provenance record ``library`` states
    (``Provenance.as_dict``): functions of several versions, and Metal versions newer than the
    deployment target allows, each naming the functions."""
    from builder.kernels.platforms import lowest_os

    groups = [g for g in library.get("version_groups") or () if isinstance(g, Mapping)]
    found = []
    if len(groups) > 1:
        total = sum(int(g["function_count"]) for g in groups)
        common, others = groups[0], groups[1:]
        parts = [
            f"{int(g['function_count']):,} state {_versions(g)}: {_names(g['functions'])}"
            for g in others
        ]
        found.append(
            f"its functions state {len(groups)} versions: {int(common['function_count']):,} of "
            f"{total:,} state {_versions(common)}; " + "; ".join(parts)
        )
    target, platform = library.get("deployment_target"), library.get("platform") or "macOS"
    if not isinstance(target, str):
        return found
    for msl in library.get("metal_language_versions") or ():
        lowest = lowest_os(msl, platform)
        if lowest is None or _key(lowest) <= _key(target):
            continue
        needs = f"MSL {msl}, which needs {platform} {lowest} or later"
        mine = [g for g in groups if g.get("metal_language_version") == msl]
        if len(library.get("metal_language_versions") or ()) == 1:
            found.append(
                f"every function states {needs}, above the header's deployment target {target}"
            )
            continue
        count = sum(int(g["function_count"]) for g in mine)
        listed = [n for g in mine for n in g.get("functions") or ()]
        if mine and mine[0] is groups[0]:  # the most common version: its names are not listed
            rest = [v for v in library["metal_language_versions"] if v != msl]
            named = f"every function but those of MSL {', '.join(rest)}"
        else:
            named = _names(listed)
        functions = "1 function states" if count == 1 else f"{count:,} functions state"
        found.append(f"{functions} {needs}, above the header's deployment target {target}: {named}")
    return found


def _versions(group: Mapping[str, Any]) -> str:
    return f"AIR {group['air_version']}, MSL {group['metal_language_version']}"


def wheel_tag(wheel: str | None, platform: str) -> tuple[str, str] | None:
    """The platform tag of the wheel file ``wheel`` (its name: ``*-macosx_26_0_arm64.whl``)
    that admits the oldest ``platform`` release, and that release (``"26.0"``); None when the
    wheel states no tag for that OS (or there is no wheel)."""
    if not wheel:
        return None
    stem = Path(wheel).name.removesuffix(".whl")
    tags = stem.rsplit("-", 1)[-1].split(".")  # a compressed tag set: several, dot-separated
    found = []
    for tag in tags:
        match = _TAG.fullmatch(tag)
        if match and _OS[match[1]] == platform:
            found.append((int(match[2]), int(match[3]), tag))
    if not found:
        return None
    major, minor, tag = min(found)
    return tag, f"{major}.{minor}"


@dataclass(frozen=True)
class TagCheck:
    """A library whose deployment target is newer than its wheel's platform tag."""

    deployment_target: str
    platform: str
    tag: str
    """The wheel's platform tag (``macosx_26_0_arm64``)."""
    tag_version: str
    """The release the tag admits (``26.0``)."""
    meeting: tuple[str, ...] = ()
    """Libraries of the same binary that meet the tag, as ``identity (target)``: none for a
    ``.metallib`` file, or a binary whose every library is above it."""
    others: int = 0
    """How many other libraries the binary holds."""

    @property
    def failed(self) -> bool:
        """Whether the file holding it fails: nothing in it loads where pip installs it."""
        return not self.meeting

    def sentence(self) -> str:
        """One sentence, without the library's label."""
        said = (
            f"deployment target {self.platform} {self.deployment_target} is above the wheel's "
            f"platform tag {self.tag}"
        )
        if not self.failed:
            also = ", ".join(self.meeting)
            return (
                f"{said}: this library loads only on {self.platform} "
                f"{self.deployment_target} and later; its binary also holds {also}, which meets "
                "the tag"
            )
        none = f"; no other library of its binary ({self.others}) meets it" if self.others else ""
        return (
            f"{said}: pip installs the wheel on {self.platform} {self.tag_version} and later, "
            f"the library is built for {self.deployment_target} and later{none}"
        )


def check_wheel_tag(lib: Library, deployment_target: str, platform: str) -> TagCheck | None:
    """The :class:`TagCheck` of ``lib`` (whose header states ``deployment_target`` on
    ``platform``), or None when it meets its wheel's tag or comes from no wheel. Inside a
    binary, the binary's other libraries (``Library.siblings``, found with it) are read (their
    headers only) to say whether one meets the tag: which ones were asked for (``--member``)
    does not change the verdict."""
    tag = wheel_tag(lib.wheel, platform)
    if tag is None or _key(deployment_target) <= _key(tag[1]):
        return None
    meeting: list[str] = []
    others = 0
    if lib.path is not None:
        from builder.metallib import open_metallib

        for identity, span in lib.siblings:
            others += 1
            with open_metallib(lib.path, span) as sibling:
                major, minor = sibling.header.deployment_target
                same_os = sibling.header.platform == platform
            if same_os and _key(f"{major}.{minor}") <= _key(tag[1]):
                meeting.append(f"{identity} ({platform} {major}.{minor})")
    return TagCheck(deployment_target, platform, tag[0], tag[1], tuple(meeting), others)


def library_warnings(lib: Library, stated: Provenance) -> list[str]:
    """Every sentence about the platform of ``lib`` (read as ``stated``) for
    ``Report.warnings``: its versions, and its wheel's tag when the file holding it fails
    (a library above the tag beside one that meets it is by design: no warning)."""
    found = version_warnings(stated.as_dict())
    check = check_wheel_tag(lib, stated.deployment_target, stated.platform)
    if check is not None and check.failed:
        found.append(check.sentence())
    return found


def with_platform_warnings(report: Report, lib: Library, stated: Provenance) -> Report:
    """``report`` with :func:`library_warnings` added to its warnings."""
    found = library_warnings(lib, stated)
    return replace(report, warnings=[*report.warnings, *found]) if found else report
