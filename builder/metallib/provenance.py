"""What produced a library: format version, AIR and Metal language versions, compiler identity.

The container's header gives the format version and deployment target; each function's ``VERS``
tag gives the AIR and Metal Shading Language versions. The compiler identity is not in the
container: it is the ``llvm.ident`` string inside each module ("Apple metal version 32023.883
(metalfe-32023.883)"), which LLVM stores as plain characters in the module's metadata string
table, so it can be found without decoding the bitstream. Only a few modules are read.
"""

from __future__ import annotations

import re
from dataclasses import dataclass

from builder.files.dataclass_json import dump
from builder.metallib.reader import Metallib

__all__ = ["Provenance", "library_provenance"]

_IDENT = re.compile(rb"Apple metal version [0-9][0-9.]* \([A-Za-z0-9_.-]+\)")


@dataclass(frozen=True)
class Provenance:
    """Facts read from the library; each list holds the distinct values found, in order. Its
    JSON (:meth:`as_dict`, the one codec) is the ``library`` record of a saved report."""

    format_version: str
    deployment_target: str
    platform: str
    """The OS of the deployment target (``Header.platform``): macOS, iOS, ..."""
    air_versions: tuple[str, ...]
    metal_language_versions: tuple[str, ...]
    compilers: tuple[str, ...]
    compiler_source: str
    """Where ``compilers`` were read: ``llvm.ident of N sampled modules``."""

    def as_dict(self) -> dict[str, object]:
        return dict(dump(self))


def library_provenance(lib: Metallib, sample: int = 8) -> Provenance:
    """Read provenance from the header, every VERS tag, and ``sample`` modules spread over the
    file."""
    columns = lib.columns()
    versions = dict.fromkeys(v for v in columns.versions if v is not None)
    air = dict.fromkeys(f"{v[0]}.{v[1]}" for v in versions)
    msl = dict.fromkeys(f"{v[2]}.{v[3]}" for v in versions)
    count = len(columns.names)
    step = max(1, count // max(sample, 1))
    chosen = range(0, count, step)[:sample]
    compilers: dict[str, None] = {}
    data = lib.data
    for index in chosen:
        at = columns.module_offsets[index]
        match = _IDENT.search(data[at : at + columns.module_bytes[index]])
        if match:
            compilers.setdefault(match.group().decode("ascii"))
    major, minor = lib.header.deployment_target
    return Provenance(
        format_version=lib.header.format_version_text,
        deployment_target=f"{major}.{minor}",
        platform=lib.header.platform,
        air_versions=tuple(air),
        metal_language_versions=tuple(msl),
        compilers=tuple(compilers),
        compiler_source=f"llvm.ident of {len(chosen)} sampled modules",
    )
