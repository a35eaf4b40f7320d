"""The versions a library's functions state: each function's ``VERS`` tag holds the AIR and Metal
Shading Language versions its module was compiled for. A library linked from ``.air`` files
compiled for different platforms states several (its floor is set by the newest, whatever the
header says); ``builder.metallib.reader.Provenance.version_groups`` records them, naming the
functions apart from the most common version, so a report can say which ones.
"""

from __future__ import annotations

from collections import Counter
from dataclasses import dataclass

from builder.files.dataclass_json import count, field

__all__ = ["VersionGroup", "version_groups"]


@dataclass(frozen=True)
class VersionGroup:
    """The functions whose ``VERS`` tags state one AIR and Metal Shading Language version."""

    air_version: str
    metal_language_version: str
    function_count: int = count()
    functions: tuple[str, ...] = field(omit="empty", default=())
    """Their names in file order; empty for the most common version (every function the other
    groups do not list), so that a library of 17,000 functions does not record them twice."""

    @property
    def versions(self) -> str:
        """``AIR 2.8, MSL 4.0``."""
        return f"AIR {self.air_version}, MSL {self.metal_language_version}"


def version_groups(
    names: list[str], versions: list[tuple[int, int, int, int] | None]
) -> tuple[VersionGroup, ...]:
    """The functions grouped by the version their ``VERS`` tag states (see
    ``Provenance.version_groups``); empty when they state one version or none. Ties between
    equally common versions go to the one met first in file order."""
    counted = Counter(v for v in versions if v is not None)
    if len(counted) < 2:
        return ()
    ranked = sorted(counted, key=lambda v: -counted[v])  # stable: file order breaks ties
    members: dict[tuple[int, int, int, int], list[str]] = {v: [] for v in ranked[1:]}
    for name, version in zip(names, versions):
        if version is not None and version in members:
            members[version].append(name)
    return tuple(
        VersionGroup(f"{v[0]}.{v[1]}", f"{v[2]}.{v[3]}", counted[v], tuple(members.get(v, ())))
        for v in ranked
    )
