"""A saved report: the JSON document of a ``Report`` (schema 3, docs/report-schema.md), written by
``builder.render.json_docs`` and read back here, so that a saved report is a target like any other.

The document is the model: ``dump(report)`` writes it, the figures a report derives (counts,
sums, the download shares of its rows) as fields ``Report`` computes, and ``load(Report, ...)``
reads and checks every field (``builder.files.dataclass_json``); what is left here is making
the model's own fields from the derived ones read back, and re-checking them. A report JSON may
come from anyone (docs/security.md): every field is checked against its type (``load`` names the
dotted field of a wrong one: ``'source.target' is 5, not a string``), every count is bounded
(``builder.files.bounds.byte_count``), the provenance must have the shape ``builder.size.load``
writes, and the totals are re-checked, so a hand-edited or truncated report cannot pass a gate.
Keys added by later versions are ignored; keys older reports lack take their defaults
(``kernel_count`` 0, ``embedding`` ``preamble``, ``provenance`` ``{}``); schema 2 is schema 3 with
``download_model``'s shards called parts.
"""

from __future__ import annotations

from dataclasses import dataclass, replace
from typing import Any, cast

from builder.errors import UsageError
from builder.files.bounds import brief, byte_count
from builder.files.dataclass_json import count, dump, field, load
from builder.metallib.versions import VersionGroup
from builder.size.grouping import parse_by
from builder.size.jit_sizes import HostLibrary, JitUnit, unattributed_bytes, unmeasured_reason
from builder.size.report import SCHEMA, Download, OverheadShare, Report, WheelFile, WheelFiles
from builder.size.rollup import overhead_row, read_functions, roll_up

__all__ = ["Embedded", "read_report"]

_SCHEMA_2_MODEL = {"part_bytes": "shard_bytes", "parts": "shards"}
"""Schema 2's keys of ``download_model`` -> schema 3's (a part is a row of a binary's account)."""


@dataclass(frozen=True)
class Embedded:
    """Where a metallib sits in the binary holding it: its bytes and ordinal there, and where
    the binary has sections, which one (``Source.embedded``, docs/report-schema.md)."""

    offset: int = count()
    size: int = count()
    ordinal: int | None = count(omit="none", default=None)
    format: str | None = field(omit="none", default=None)
    arch: str | None = field(omit="none", default=None)
    segment: str | None = field(omit="none", default=None)
    section: str | None = field(omit="none", default=None)
    section_offset: int | None = count(omit="none", default=None)
    symbol: str | None = field(omit="none", default=None)


# The provenance record's shape (``builder.size.load.build_provenance``): what each view may
# rely on.
_PROVENANCE_TEXT = {
    "tool": ("name", "version"),
    "library": ("format_version", "deployment_target", "platform", "compiler_source"),
}
_PROVENANCE_LISTS = {"library": ("air_versions", "metal_language_versions", "compilers")}
_PROVENANCE_DEPTH = 8


def _object(value: object, where: str) -> dict[str, object]:
    if value is None:
        return {}
    if not isinstance(value, dict):
        raise TypeError(f"{where!r} is {brief(value)}, not an object")
    return value


def _provenance(record: dict[str, object], where: str) -> dict[str, object]:
    """A saved provenance record: ``tool`` and ``library`` hold strings and lists of strings
    (and ``library.version_groups`` objects of ``VersionGroup``'s shape), ``build`` any JSON at
    most eight levels deep."""
    for part in ("tool", "library", "build"):
        inner = _object(record.get(part), f"{where}.{part}")
        for key in _PROVENANCE_TEXT.get(part, ()):
            value = inner.get(key)
            if value is not None and not isinstance(value, str):
                raise TypeError(f"'{where}.{part}.{key}' is {brief(value)}, not a string")
        for key in _PROVENANCE_LISTS.get(part, ()):
            items = inner.get(key)
            if items is not None and (
                not isinstance(items, list) or not all(isinstance(i, str) for i in items)
            ):
                raise TypeError(f"'{where}.{part}.{key}' is not a list of strings")
    groups = _object(record.get("library"), f"{where}.library").get("version_groups")
    if groups is not None:  # recorded since issue 35: absent in older reports
        load(list[VersionGroup], groups, f"{where}.library.version_groups")
    if _depth(record.get("build")) > _PROVENANCE_DEPTH:
        raise ValueError(f"'{where}.build' is nested deeper than {_PROVENANCE_DEPTH} levels")
    host = _object(record.get("build"), f"{where}.build").get("host_library")
    if host is not None and not isinstance(host, str):
        raise TypeError(f"'{where}.build.host_library' is {brief(host)}, not a path")
    return record


def _depth(value: object) -> int:
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


def read_report(data: object, where: str) -> Report:
    """A saved report read back (a saved report is a target like any other). It may come from
    anyone (docs/security.md): every field is checked against its type, every count bounded,
    and the sums re-checked, so that a hand-edited or truncated report cannot pass a gate; a
    bad one is a UsageError (exit 2) naming the field."""

    def bad(why: str) -> UsageError:
        return UsageError(f"{where}: not a usable size report: {why}")

    if not isinstance(data, dict):
        raise bad("the top level is not an object")
    if data.get("schema") not in (2, SCHEMA):
        raise bad(f"schema is {brief(data.get('schema'))}, this tool reads schema 2 and {SCHEMA}")
    if "functions" not in data:
        raise bad("missing or malformed field: 'functions' is missing")
    source = data.get("source", {})
    if isinstance(source, dict):  # a report's target is the file it was read from
        source = {"path": None, "kind": "report", **source}
        data = {**data, "source": {**source, "target": source.get("target") or where}}
    model = data.get("download_model")
    if data["schema"] == 2 and isinstance(model, dict):  # schema 2's names of the model's shards
        data = {**data, "download_model": {_SCHEMA_2_MODEL.get(k, k): v for k, v in model.items()}}
    if data.get("function_count", 0) is None:  # older reports wrote null
        data = {key: value for key, value in data.items() if key != "function_count"}
    try:
        if "overhead_bytes" not in data:
            raise ValueError("'overhead_bytes' is missing")
        report = _report(load(Report, data), data)
    except UsageError as exc:
        raise bad(str(exc)) from None
    except (TypeError, ValueError) as exc:
        why = str(exc)
        raise bad(f"missing or malformed field: {why}" if "missing" in why else why) from None
    total = sum(f.bytes for f in report.functions) + report.overhead_bytes
    if total != report.file_size:
        raise bad(
            f"functions and overhead add up to {total} bytes, file_size says {report.file_size}"
        )
    stated = data.get("function_count")
    if stated is not None and stated != report.function_count:
        raise bad(f"function_count {stated} but {report.function_count} functions listed")
    return report


def _report(saved: Report, data: dict[str, Any]) -> Report:
    """The ``Report`` a saved document describes: the codec has read and checked every field,
    its derived ones included; the model's own are made here from them (groups rolled up
    again, sums re-checked)."""
    _provenance(saved.provenance, "provenance")
    functions = read_functions(data["functions"], "functions")
    rows = load(list[OverheadShare], data.get("overhead", []), "overhead")
    overhead = [overhead_row(o.name, o.bytes) for o in rows]
    if sum(o.bytes for o in overhead) != data["overhead_bytes"]:
        overhead = [overhead_row("overhead", data["overhead_bytes"])]
    by = ",".join(parse_by(saved.by))
    if (saved.subgrouping is None) != ("," not in by):
        raise ValueError(f"'by' is {by!r} but subgrouping is {brief(saved.subgrouping)}")
    download = _download(data, rows, len(overhead))
    place = saved.source.embedded  # checked against its shape, keys it does not have dropped
    if place is not None:
        place = cast(dict[str, Any], dump(load(Embedded, place, "source.embedded")))
    return replace(
        saved,
        source=replace(saved.source, kind="report", embedded=place),
        by=by,
        functions=functions,
        groups=roll_up(
            functions,
            download.functions if download else None,
            nested=saved.subgrouping is not None,
        ),
        overhead=overhead,
        host_library=_host(data.get("host_library"), saved.jit_units),
        download=download,
    )


def _host(saved: dict[str, object] | None, jit: list[JitUnit]) -> HostLibrary | None:
    """The host library; a measured one must add up to its file size."""
    if saved is None:
        return None
    host = load(HostLibrary, saved, "host_library")
    where = "host_library.unattributed_bytes"
    unmapped = saved.get("unattributed_bytes")
    if unmapped is not None:
        byte_count(unmapped, where)
    if unmeasured_reason(host, jit) is None:
        unmapped = byte_count(unmapped, where)
        if unmapped != unattributed_bytes(host, jit):
            total = host.file_size - unattributed_bytes(host, jit) + unmapped
            raise ValueError(
                f"JIT units, shared and unattributed bytes add up to {total}, "
                f"host_library.file_size says {host.file_size}"
            )
    return host


def _download(
    data: dict[str, Any], rows: list[OverheadShare], overhead_rows: int
) -> Download | None:
    """The download figures (None for a report made without ``--download``), their sums
    re-checked so that an edited report cannot pass a download gate."""
    total = data.get("download_bytes")
    if total is None:
        return None
    shares = [
        byte_count(f.get("download_bytes"), "functions[].download_bytes") for f in data["functions"]
    ]
    overhead_total = byte_count(data.get("overhead_download_bytes"), "overhead_download_bytes")
    overhead = [o.download_bytes or 0 for o in rows]
    if len(overhead) != overhead_rows or sum(overhead) != overhead_total:
        overhead = [overhead_total] if overhead_rows else []
    if sum(shares) + sum(overhead) != total:
        raise UsageError(
            f"functions and overhead download {sum(shares) + sum(overhead)} bytes, "
            f"download_bytes says {total}"
        )
    member, wheel = data.get("download_member"), data.get("wheel")
    return Download(
        total,
        shares,
        overhead,
        data.get("download_model") or {},
        None if member is None else load(WheelFile, member),
        None if wheel is None else load(WheelFiles, wheel),
    )
