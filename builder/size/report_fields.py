"""The saved report document (JSON schema 2, docs/report-schema.md), declared once as dataclasses:
``builder.render.json_docs`` writes it (``builder.files.dataclass_json.dump``) and
``report_from_dict`` reads it back (``load``), so a saved report is a target like any other.

A report JSON may come from anyone (docs/security.md): every field is checked against its type
(``load`` names the dotted field of a wrong one: ``'source.target' is 5, not a string``), every
count is bounded (``builder.files.bounds.byte_count``), the provenance must have the shape
``builder.size.load`` writes, and the totals are re-checked, so a hand-edited or truncated
report cannot pass a gate. Keys added by later versions are ignored; keys older reports lack take
their defaults (``kernel_count`` 0, ``embedding`` ``preamble``, ``provenance`` ``{}``).
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any, Literal, NoReturn

from builder.errors import UsageError
from builder.files.bounds import LARGEST_COUNT, brief, byte_count
from builder.files.dataclass_json import field, load
from builder.size.download_report import Download, WheelFile, WheelFiles
from builder.size.grouping import parse_by
from builder.size.jit_sizes import HostLibrary, JitUnit, unattributed_bytes, unmeasured_reason
from builder.size.report import SCHEMA, Report, Source
from builder.size.rollup import FunctionRow, overhead_row, roll_up

__all__ = [
    "FUNCTION_FIELDS",
    "EmbeddedDoc",
    "HostLibraryDoc",
    "JitUnitDoc",
    "OverheadDoc",
    "ReportDoc",
    "SourceDoc",
    "WheelDoc",
    "report_from_dict",
]

FUNCTION_FIELDS = FunctionRow._fields[:7]
"""The fields of ``FunctionRow`` a report writes for each function, in its order (the second
``--by`` label is written as ``subgroup``, the download share as ``download_bytes``)."""


def _count(value: int, where: str) -> int:
    return byte_count(value, where)


def _maybe_count(value: int | None, where: str) -> int | None:
    return None if value is None else byte_count(value, where)


def _count_field(**kwargs: Any) -> Any:
    return field(check=_count, **kwargs)


def _optional_count(**kwargs: Any) -> Any:
    return field(check=_maybe_count, omit="none", default=None, **kwargs)


def _optional_text() -> Any:
    return field(omit="none", default=None)


@dataclass(frozen=True)
class EmbeddedDoc:
    """``source.embedded``: a metallib's place in its binary."""

    offset: int = _count_field()
    size: int = _count_field()
    ordinal: int | None = _optional_count()
    format: str | None = _optional_text()
    arch: str | None = _optional_text()
    segment: str | None = _optional_text()
    section: str | None = _optional_text()
    section_offset: int | None = _optional_count()
    symbol: str | None = _optional_text()


@dataclass(frozen=True)
class SourceDoc:
    path: str | None = None
    target: str | None = None
    kind: str = "report"
    wheel: str | None = None
    manifest: str | None = None
    member: str | None = None
    identity: str | None = None
    embedded: EmbeddedDoc | None = field(omit="none", default=None)


@dataclass(frozen=True)
class OverheadDoc:
    name: str
    bytes: int = _count_field()
    download_bytes: int | None = _optional_count()


@dataclass(frozen=True)
class JitUnitDoc:
    name: str
    embedded_bytes: int = _count_field()
    host_bytes: int | None = field(check=_maybe_count, default=None)
    kernel_count: int = _count_field(default=0)
    embedding: Literal["whole-file", "preamble"] = "preamble"


@dataclass(frozen=True)
class HostLibraryDoc:
    path: str
    file_size: int = _count_field()
    measured_by: str | None = None
    shared_bytes: int | None = field(check=_maybe_count, default=None)
    unattributed_bytes: int | None = field(check=_maybe_count, default=None)


@dataclass(frozen=True)
class WheelFileDoc:
    name: str
    bytes: int = _count_field()
    download_bytes: int = _count_field()


@dataclass(frozen=True)
class WheelDoc:
    path: str
    bytes: int = _count_field()
    download_bytes: int = _count_field(default=0)
    files: list[WheelFileDoc] = field(default_factory=list)


# The provenance record's shape (builder.size.load): what each renderer may rely on.
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
    """``tool`` and ``library`` hold strings and lists of strings, ``build`` any JSON at most
    eight levels deep."""
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


def _functions(value: object, where: str) -> list[FunctionRow]:
    """One row per saved function, each field checked. A report may list a million functions,
    so the common case (every field of the right type) is tested inline, and only a function
    that fails it goes through the checks that name the field (a call per field took about 1.5
    times the CPU: 3.8 against 2.5 s for 1.3 million functions). Repeated group labels share one
    string."""
    if not isinstance(value, list) or not all(type(item) is dict for item in value):
        raise TypeError(f"{where!r} is not a list of objects")
    rows: list[FunctionRow] = []
    labels: dict[str, str] = {}
    for position, f in enumerate(value):
        name, group, sub = f.get("name"), f.get("group", "other"), f.get("subgroup", "")
        size, bitcode = f.get("bytes"), f.get("bitcode_bytes", 0)
        entry, meta = f.get("entry_bytes", 0), f.get("metadata_bytes", 0)
        refl = f.get("reflection_bytes", 0)
        if not (
            type(name) is str
            and type(group) is str
            and type(sub) is str
            and type(size) is int
            and type(bitcode) is int
            and type(entry) is int
            and type(meta) is int
            and type(refl) is int
            and min(size, bitcode, entry, meta, refl) >= 0
            and max(size, bitcode, entry, meta, refl) <= LARGEST_COUNT
        ):
            _check_function(f)  # raises, naming the field
        group, sub = labels.setdefault(group, group), labels.setdefault(sub, sub)
        rows.append(FunctionRow(name, group, size, bitcode, entry, meta, refl, sub, "", position))
    return rows


def _check_function(f: dict[str, object]) -> NoReturn:
    """The error of a saved function with a field of the wrong type."""
    for key in ("name", "group", "subgroup"):
        if key == "name" and key not in f:
            raise ValueError("'functions[].name' is missing")
        value = f.get(key, "")
        if not isinstance(value, str):
            raise TypeError(f"'functions[].{key}' is {brief(value)}, not a string")
    if "bytes" not in f:
        raise ValueError("'functions[].bytes' is missing")
    for key in FUNCTION_FIELDS[2:]:
        byte_count(f.get(key, 0), f"functions[].{key}")
    raise TypeError("'functions[]' holds a value of a type no report writes")


@dataclass(frozen=True, kw_only=True)
class ReportDoc:
    """One report (``report --format json``; several are ``{"schema": 2, "libraries": [...]}``).
    ``groups`` are written for readers and recomputed from the functions on reading; the
    functions are written row by row (``builder.render.json_docs``: 17,000 rows) and read by
    ``_functions``."""

    schema: int
    source: SourceDoc = field(default_factory=SourceDoc)
    file_size: int = _count_field()
    format_version: str = "?"
    function_count: int | None = None
    by: str = "kernel"
    grouping: str = "saved"
    subgrouping: str | None = field(omit="none", default=None)
    overhead_bytes: int = _count_field()
    overhead: list[OverheadDoc] = field(default_factory=list)
    groups: object = field(default=None, omit="none")
    """The report's ``Rollup`` groups when written (largest first; ``children`` with two
    keys); not read: recomputed from the functions."""
    jit_units: list[JitUnitDoc] = field(default_factory=list)
    provenance: dict[str, object] = field(default_factory=dict, check=_provenance)
    host_library: HostLibraryDoc | None = field(omit="none", default=None)
    download_bytes: int | None = _optional_count()
    overhead_download_bytes: int | None = _optional_count()
    download_model: dict[str, object] | None = field(omit="none", default=None)
    download_member: WheelFileDoc | None = field(omit="none", default=None)
    download_model_error_bytes: int | None = field(omit="none", default=None)
    wheel: WheelDoc | None = field(omit="none", default=None)
    functions: object = field(check=_functions, omit="empty", default=())


def report_from_dict(data: object, where: str) -> Report:
    """Read a saved report back; anything malformed or inconsistent is a UsageError (exit 2)
    naming the field."""

    def bad(why: str) -> UsageError:
        return UsageError(f"{where}: not a usable size report: {why}")

    if not isinstance(data, dict):
        raise bad("the top level is not an object")
    if data.get("schema") != SCHEMA:
        raise bad(f"schema is {brief(data.get('schema'))}, this tool reads schema {SCHEMA}")
    if "functions" not in data:
        raise bad("missing or malformed field: 'functions' is missing")
    try:
        doc = load(ReportDoc, data)
        report = _report(doc, data, where)
    except UsageError as exc:
        raise bad(str(exc)) from None
    except (TypeError, ValueError) as exc:
        why = str(exc)
        raise bad(f"missing or malformed field: {why}" if "missing" in why else why) from None
    functions = report.functions
    total = sum(f.bytes for f in functions) + report.overhead_bytes
    if total != report.file_size:
        raise bad(
            f"functions and overhead add up to {total} bytes, file_size says {report.file_size}"
        )
    if doc.function_count is not None and doc.function_count != len(functions):
        raise bad(f"function_count {doc.function_count} but {len(functions)} functions listed")
    return report


def _report(doc: ReportDoc, data: dict[str, Any], where: str) -> Report:
    """The ``Report`` a loaded document describes (groups recomputed, sums re-checked)."""
    functions: list[FunctionRow] = doc.functions  # type: ignore[assignment]
    overhead = [overhead_row(o.name, o.bytes) for o in doc.overhead]
    if sum(o.bytes for o in overhead) != doc.overhead_bytes:
        overhead = [overhead_row("overhead", doc.overhead_bytes)]
    by = ",".join(parse_by(doc.by))
    if (doc.subgrouping is None) != ("," not in by):
        raise ValueError(f"'by' is {by!r} but subgrouping is {brief(doc.subgrouping)}")
    jit = [
        JitUnit(j.name, j.embedded_bytes, j.host_bytes, j.kernel_count, j.embedding)
        for j in doc.jit_units
    ]
    download = _download(doc, data["functions"], len(overhead))
    src = doc.source
    return Report(
        source=Source(
            path=src.path,
            target=src.target or where,
            kind="report",
            wheel=src.wheel,
            manifest=src.manifest,
            member=src.member,
            embedded=None if src.embedded is None else _embedded_dict(src.embedded),
            identity=src.identity,
        ),
        file_size=doc.file_size,
        format_version=doc.format_version,
        by=by,
        grouping=doc.grouping,
        functions=functions,
        groups=roll_up(
            functions, download.functions if download else None, nested=doc.subgrouping is not None
        ),
        overhead=overhead,
        jit_units=jit,
        host_library=_host(doc.host_library, jit),
        provenance=doc.provenance,
        download=download,
        subgrouping=doc.subgrouping,
    )


def _embedded_dict(embedded: EmbeddedDoc) -> dict[str, object]:
    from builder.files.dataclass_json import dump

    found: dict[str, object] = dump(embedded)
    return found


def _host(doc: HostLibraryDoc | None, jit: list[JitUnit]) -> HostLibrary | None:
    """The host library; a measured one must add up to its file size."""
    if doc is None:
        return None
    host = HostLibrary(doc.path, doc.file_size, doc.measured_by, doc.shared_bytes)
    if unmeasured_reason(host, jit) is None:
        unmapped = byte_count(doc.unattributed_bytes, "host_library.unattributed_bytes")
        if unmapped != unattributed_bytes(host, jit):
            total = host.file_size - unattributed_bytes(host, jit) + unmapped
            raise ValueError(
                f"JIT units, shared and unattributed bytes add up to {total}, "
                f"host_library.file_size says {host.file_size}"
            )
    return host


def _download(
    doc: ReportDoc, functions: list[dict[str, Any]], overhead_rows: int
) -> Download | None:
    """The download figures (None for a report made without ``--download``), their sums
    re-checked so that an edited report cannot pass a download gate."""
    if doc.download_bytes is None:
        return None
    shares = [byte_count(f.get("download_bytes"), "functions[].download_bytes") for f in functions]
    overhead_total = byte_count(doc.overhead_download_bytes, "overhead_download_bytes")
    overhead = [o.download_bytes or 0 for o in doc.overhead]
    if len(overhead) != overhead_rows or sum(overhead) != overhead_total:
        overhead = [overhead_total] if overhead_rows else []
    if sum(shares) + sum(overhead) != doc.download_bytes:
        raise UsageError(
            f"functions and overhead download {sum(shares) + sum(overhead)} bytes, "
            f"download_bytes says {doc.download_bytes}"
        )
    member, wheel = doc.download_member, doc.wheel
    return Download(
        doc.download_bytes,
        shares,
        overhead,
        doc.download_model or {},
        None if member is None else WheelFile(member.name, member.bytes, member.download_bytes),
        None
        if wheel is None
        else WheelFiles(
            wheel.path,
            wheel.bytes,
            [WheelFile(f.name, f.bytes, f.download_bytes) for f in wheel.files],
        ),
    )
