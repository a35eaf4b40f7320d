"""What produced a report: the tool, the library's own version facts, and the build options.

A size figure is only comparable with another when both were produced the same way, so every
report carries this record (JSON ``provenance``, one line in tables and markdown, a panel in the
HTML view). It is plain data: a dict of JSON types, built once where the metallib is open
(``builder.targets``) and rendered here as one line. Nothing in it is guessed: a field that could
not be read is absent or an empty list.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from builder.metallib.provenance import Provenance

__all__ = ["MANIFEST_OPTION_KEYS", "build_provenance", "manifest_build_facts", "provenance_line"]

TOOL_NAME = "metallib-builder"
MANIFEST_OPTION_KEYS = ("cmake_options", "options", "cmake")
"""Manifest keys that may hold the build's options, first present wins (the manifest is being
written by the build; whatever options object it has is recorded as is)."""


def manifest_build_facts(data: Mapping[str, Any], path: str) -> dict[str, Any]:
    """The build part of a provenance from a raw manifest: options, toolchain, generator."""
    facts: dict[str, Any] = {"manifest": path}
    for key in MANIFEST_OPTION_KEYS:
        if key in data and data[key] is not None:
            facts["options"] = data[key]
            facts["options_key"] = key
            break
    for key in ("toolchain", "generator", "host_library"):
        if data.get(key) is not None:
            facts[key] = data[key]
    return facts


def build_provenance(
    library: Provenance | None, build: Mapping[str, Any] | None = None
) -> dict[str, Any]:
    """The provenance record of a freshly measured report (see docs/report-schema.md)."""
    from builder import __version__

    record: dict[str, Any] = {"tool": {"name": TOOL_NAME, "version": __version__}}
    if library is not None:
        record["library"] = library.as_dict()
    if build is not None:
        record["build"] = dict(build)
    return record


def provenance_line(provenance: Mapping[str, Any]) -> str:
    """One line for people: tool, format, AIR/MSL versions, compiler, build options."""
    if not provenance:
        return "produced by: not recorded"
    parts = []
    tool = provenance.get("tool") or {}
    if tool:
        parts.append(f"{tool.get('name', TOOL_NAME)} {tool.get('version', '?')}")
    lib = provenance.get("library") or {}
    if lib:
        parts.append(f"metallib format {lib.get('format_version', '?')}")
        if lib.get("deployment_target"):
            parts.append(f"deployment target {lib['deployment_target']}")
        parts.append("AIR " + (", ".join(lib.get("air_versions") or []) or "?"))
        parts.append("Metal " + (", ".join(lib.get("metal_language_versions") or []) or "?"))
        compilers = lib.get("compilers") or []
        parts.append("compiler " + ("; ".join(compilers) if compilers else "not found"))
    build = provenance.get("build") or {}
    if build:
        options = build.get("options")
        if isinstance(options, Mapping) and options:
            text = " ".join(f"{k}={_flat(v)}" for k, v in sorted(options.items()))
            parts.append(f"build options {text}")
        elif options:
            parts.append(f"build options {_flat(options)}")
        else:
            parts.append("no build options in the manifest")
    return "produced by: " + "; ".join(parts)


def _flat(value: Any) -> str:
    if isinstance(value, bool):
        return "ON" if value else "OFF"
    if isinstance(value, (list, tuple)):
        return ",".join(map(_flat, value))
    if isinstance(value, Mapping):
        return "{" + ",".join(f"{k}={_flat(v)}" for k, v in sorted(value.items())) + "}"
    return str(value)
