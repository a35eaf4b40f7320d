"""The fields of a saved report, checked: a report JSON may come from anyone (docs/security.md).

``builder.size.report.report_from_dict`` reads a saved report through these, so that every field
it keeps has the type the renderers rely on, and a wrong one is a TypeError or ValueError whose
message names the field (``'source.target' is 5, not a string``).
"""

from __future__ import annotations

from typing import Any

from builder.files.bounds import brief, byte_count

__all__ = [
    "as_object",
    "brief",
    "embedded",
    "object_list",
    "optional_text",
    "provenance",
    "text",
]


def as_object(value: Any, field: str) -> dict[str, Any]:
    """A JSON object (``{}`` for an absent one)."""
    if value is None:
        return {}
    if not isinstance(value, dict):
        raise TypeError(f"{field!r} is {brief(value)}, not an object")
    return value


def object_list(value: Any, field: str) -> list[Any]:
    """A JSON array of objects."""
    if not isinstance(value, list) or not all(isinstance(item, dict) for item in value):
        raise TypeError(f"{field!r} is not a list of objects")
    return value


def optional_text(value: Any, field: str) -> str | None:
    """A string or null."""
    if value is not None and not isinstance(value, str):
        raise TypeError(f"{field!r} is {brief(value)}, not a string")
    return value


def text(value: Any, field: str) -> str:
    """A string."""
    if not isinstance(value, str):
        raise TypeError(f"{field!r} is {brief(value)}, not a string")
    return value


# The provenance record's shape (builder.size.provenance): what each renderer may rely on.
_PROVENANCE_TEXT = {
    "tool": ("name", "version"),
    "library": ("format_version", "deployment_target", "platform", "compiler_source"),
}
_PROVENANCE_LISTS = {"library": ("air_versions", "metal_language_versions", "compilers")}
_PROVENANCE_DEPTH = 8


def provenance(value: Any) -> dict[str, Any]:
    """A saved report keeps the provenance of the run that measured it (absent in old reports),
    checked against the shape renderers rely on: ``tool`` and ``library`` hold strings and
    lists of strings, ``build`` any JSON at most eight levels deep."""
    record = as_object(value, "provenance")
    for part in ("tool", "library", "build"):
        inner = as_object(record.get(part), f"provenance.{part}")
        for key in _PROVENANCE_TEXT.get(part, ()):
            optional_text(inner.get(key), f"provenance.{part}.{key}")
        for key in _PROVENANCE_LISTS.get(part, ()):
            items = inner.get(key)
            if items is not None and (
                not isinstance(items, list) or not all(isinstance(i, str) for i in items)
            ):
                raise TypeError(f"'provenance.{part}.{key}' is not a list of strings")
    if _depth(record.get("build")) > _PROVENANCE_DEPTH:
        raise ValueError(f"'provenance.build' is nested deeper than {_PROVENANCE_DEPTH} levels")
    host = as_object(record.get("build"), "provenance.build").get("host_library")
    if host is not None and not isinstance(host, str):
        raise TypeError(f"'provenance.build.host_library' is {brief(host)}, not a path")
    return record


def _depth(value: Any) -> int:
    """How deeply ``value`` nests lists and objects (0 for a scalar), counted without recursion
    and only up to one level past the limit."""
    deepest, stack = 0, [(value, 1)]
    while stack and deepest <= _PROVENANCE_DEPTH:
        item, depth = stack.pop()
        children = (
            item.values() if isinstance(item, dict) else item if isinstance(item, list) else None
        )
        if children is not None:
            deepest = max(deepest, depth)
            stack.extend((child, depth + 1) for child in children)
    return deepest


def embedded(value: Any, field: str) -> dict[str, Any] | None:
    """A saved report's ``source.embedded`` (a metallib's place in a binary), checked: byte
    counts and short texts only, ``offset`` and ``size`` required."""
    if value is None:
        return None
    doc = as_object(value, field)
    out: dict[str, Any] = {}
    for key in ("offset", "size", "section_offset"):
        if doc.get(key) is not None:
            out[key] = byte_count(doc[key], f"{field}.{key}")
    for key in ("format", "arch", "segment", "section", "symbol"):
        text = optional_text(doc.get(key), f"{field}.{key}")
        if text is not None:
            out[key] = text
    if "offset" not in out or "size" not in out:
        raise ValueError(f"{field!r} needs 'offset' and 'size'")
    return out
