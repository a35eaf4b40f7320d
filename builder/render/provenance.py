"""A report's provenance record (``builder.size.provenance``) as one line for people."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from builder.size.provenance import TOOL_NAME

__all__ = ["provenance_line"]


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
