"""A report's provenance record (``builder.size.provenance``) as one line for people.

The line keeps apart who measured the figures (this tool), what the library says of itself (its
format, versions and compiler, whoever built it) and, for a build directory, that this project
built it and with which options: a library Apple's tools built is never said to be produced by
metallib-builder.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from builder.size.provenance import TOOL_NAME

__all__ = ["provenance_line"]


def provenance_line(provenance: Mapping[str, Any]) -> str:
    """One line for people: measuring tool; the library's format, AIR/MSL versions and compiler;
    for a build, its generator and options."""
    if not provenance:
        return "provenance: not recorded"
    parts = []
    tool = provenance.get("tool") or {}
    if tool:
        parts.append(f"measured by {tool.get('name', TOOL_NAME)} {tool.get('version', '?')}")
    lib = provenance.get("library") or {}
    if lib:
        parts.append(f"metallib format {lib.get('format_version', '?')}")
        if lib.get("deployment_target"):
            # a library for another OS says which (older reports have no platform: macOS)
            platform = lib.get("platform") or "macOS"
            shown = f"{platform} " if platform != "macOS" else ""
            parts.append(f"deployment target {shown}{lib['deployment_target']}")
        parts.append("AIR " + (", ".join(lib.get("air_versions") or []) or "?"))
        parts.append("Metal " + (", ".join(lib.get("metal_language_versions") or []) or "?"))
        compilers = lib.get("compilers") or []
        parts.append("compiler " + ("; ".join(compilers) if compilers else "not found"))
    build = provenance.get("build") or {}
    if build:
        built = f"built by {_flat(build.get('generator') or TOOL_NAME)}"
        options = build.get("options")
        if isinstance(options, Mapping) and options:
            text = " ".join(f"{k}={_flat(v)}" for k, v in sorted(options.items()))
            parts.append(f"{built} with build options {text}")
        elif options:
            parts.append(f"{built} with build options {_flat(options)}")
        else:
            parts.append(f"{built}; no build options in the manifest")
    return "; ".join(parts)


def _flat(value: object) -> str:
    if isinstance(value, bool):
        return "ON" if value else "OFF"
    if isinstance(value, (list, tuple)):
        return ",".join(map(_flat, value))
    if isinstance(value, Mapping):
        return "{" + ",".join(f"{k}={_flat(v)}" for k, v in sorted(value.items())) + "}"
    return str(value)
