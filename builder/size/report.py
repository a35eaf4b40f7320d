"""A size report: attributed bytes rolled up into groups, as plain data (no I/O, no rendering).

``build_report`` turns an ``Attribution`` (what the file contains) into a ``Report`` (what the
user asked to see: groups by kernel unit, dtype, source or function). ``report_to_dict``
writes the JSON schema 1 (``docs/report-schema.md``) and
``builder.size.report_fields.report_from_dict`` reads it back, so a saved report is a target
like any other. Every figure carries its origin in ``Report.source``. A build's JIT units,
measured in its host library rather than the metallib, ride along in ``jit_units`` and
``host_library`` (``builder.size.jit_sizes``).
"""

from __future__ import annotations

import re
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, field, replace
from dataclasses import fields as fields_of
from itertools import repeat
from operator import add, itemgetter
from typing import TYPE_CHECKING, Any, NamedTuple

from builder.metallib.structs import Span
from builder.size.download_report import Download, add_download_fields
from builder.size.grouping import Sources, group_names, parse_by
from builder.size.jit_sizes import HostLibrary, JitUnit, host_to_dict
from builder.size.rollup import FunctionRow, Rollup, overhead_row, roll_up

if TYPE_CHECKING:
    from builder.size.attribution import Attribution
    from builder.size.grouping import RuleSet

__all__ = [
    "SCHEMA",
    "JitUnit",
    "Report",
    "Source",
    "build_report",
    "group_report",
    "report_to_dict",
]

SCHEMA = 2


@dataclass(frozen=True)
class Source:
    """Where a report's figures were measured: always a metallib file, reached through a target."""

    path: str | None
    """The metallib file measured (None only for a build whose units are all JIT)."""
    target: str
    """The target as the user gave it (path, ``PACKAGE==VERSION``, build dir, report JSON)."""
    kind: str
    """``metallib``, ``wheel``, ``spec``, ``build`` or ``report``."""
    wheel: str | None = None
    manifest: str | None = None
    member: str | None = None
    """The library's name (``builder.inputs.member_names``): the metallib's path inside its
    wheel or build directory, or ``BINARY#IDENTITY`` for one inside a binary (libraries are
    paired by it, then by ``identity``)."""
    embedded: dict[str, Any] | None = None
    """For a metallib inside a binary (``path``): its ``offset``, ``size`` and ``ordinal``
    there, and where the binary has sections ``format``, ``arch``, ``segment``, ``section``,
    ``section_offset`` and ``symbol`` (docs/report-schema.md)."""
    identity: str | None = None
    """For a metallib inside a binary: its identity there, which survives releases
    (``builder.metallib.identity``: symbol, else section, else ordinal)."""

    @property
    def window(self) -> Span | None:
        """The metallib's bytes in ``path`` when ``path`` is a binary holding it."""
        if self.embedded is None:
            return None
        return Span(self.embedded["offset"], self.embedded["size"])

    def to_json(self) -> dict[str, object]:
        """How every JSON document names the library: path, target, kind, wheel, manifest,
        member and identity (a report's ``source`` adds ``embedded``)."""
        return {
            "path": self.path,
            "target": self.target,
            "kind": self.kind,
            "wheel": self.wheel,
            "manifest": self.manifest,
            "member": self.member,
            "identity": self.identity,
        }

    @property
    def label(self) -> str:
        """A short name for tables: the target plus the member when there are several."""
        if not self.member:
            return self.target
        if self.kind == "binary" and self.identity is not None:  # the binary was the target
            return f"{self.target}#{self.identity}"
        return f"{self.target}:{self.member}"

    @property
    def binary(self) -> str | None:
        """The name of the binary holding the library (``member`` less ``#IDENTITY``); None
        for a library that is a file of its own."""
        if self.identity is None or not self.member:
            return None
        return self.member.removesuffix(f"#{self.identity}")


@dataclass(frozen=True)
class Report:
    """Measured sizes of one metallib, grouped ``by`` one key or two (``source,dtype``)."""

    source: Source
    file_size: int
    format_version: str
    by: str
    """The key, or two keys joined by a comma (the groups, then each group's children)."""
    grouping: str
    """How the first key's labels were obtained (``builder.size.grouping.Grouping.method``)."""
    functions: list[FunctionRow]
    """In file order."""
    groups: list[Rollup]
    """Largest first (ties by name); with two keys each carries its ``children``."""
    overhead: list[Rollup]
    """Bytes no function owns, by part of the container (``overhead_row``s)."""
    jit_units: list[JitUnit] = field(default_factory=list)
    host_library: HostLibrary | None = None
    """The host library of a build with JIT units, when it exists
    (``builder.size.jit_sizes``)."""
    provenance: dict[str, Any] = field(default_factory=dict)
    """What produced the figures: tool version, the library's format/AIR/MSL versions and
    compiler identity, the build's options (``builder.size.provenance``)."""
    download: Download | None = None
    """Download shares (``report --download``; ``builder.size.download_report``)."""
    subgrouping: str | None = None
    """How the second key's labels were obtained (None with one key)."""

    @property
    def overhead_bytes(self) -> int:
        return sum(row.bytes for row in self.overhead)

    @property
    def function_count(self) -> int:
        return len(self.functions)

    @property
    def keys(self) -> tuple[str, ...]:
        """``by`` as its keys: one, or two for nested groups."""
        return tuple(self.by.split(","))


class _Labels(NamedTuple):
    """Every function's label for each ``--by`` key, and how each key's labels were found."""

    first: list[str]
    second: list[str] | None
    grouping: str
    subgrouping: str | None


def _labels(
    names: Sequence[str],
    keys: Sequence[str],
    rules: RuleSet | None,
    units: Mapping[str, str] | None,
    sources: Sources | None,
) -> _Labels:
    first = group_names(names, keys[0], rules=rules, units=units, sources=sources)
    if len(keys) == 1:
        return _Labels(first.labels, None, first.method, None)
    second = group_names(names, keys[1], rules=rules, units=units, sources=sources)
    return _Labels(first.labels, second.labels, first.method, second.method)


def _grouped(report: Report, columns: list[Iterable[object]], labels: _Labels) -> Report:
    """``report`` with its functions made from ``columns`` (``FunctionRow``'s fields, column by
    column) labelled by ``labels``, and rolled up (``builder.size.rollup``)."""
    count = len(labels.first)
    columns[1] = labels.first
    columns[7] = labels.second if labels.second is not None else repeat("", count)
    functions = list(map(FunctionRow._make, zip(*columns)))
    shares = report.download.functions if report.download else None
    nested = labels.second is not None
    return replace(
        report,
        grouping=labels.grouping,
        subgrouping=labels.subgrouping,
        functions=functions,
        groups=roll_up(functions, shares, nested=nested),
    )


def group_report(
    report: Report,
    by: str,
    *,
    rules: RuleSet | None = None,
    units: Mapping[str, str] | None = None,
    sources: Sources | None = None,
) -> Report:
    """The same measurements grouped ``by`` one key or two (``kernel,dtype``): each function
    labelled for every key, then rolled up (``builder.size.rollup``)."""
    keys = parse_by(by)
    functions = report.functions
    columns: list[Iterable[object]] = (
        list(zip(*functions)) if functions else [() for _ in FunctionRow._fields]
    )
    labels = _labels([f.name for f in functions], keys, rules, units, sources)
    return _grouped(replace(report, by=",".join(keys)), columns, labels)


def build_report(
    attribution: Attribution,
    source: Source,
    *,
    by: str = "kernel",
    rules: RuleSet | None = None,
    units: Mapping[str, str] | None = None,
    sources: Sources | None = None,
    jit_units: Sequence[JitUnit] = (),
    host_library: HostLibrary | None = None,
    provenance: Mapping[str, Any] | None = None,
    download: Download | None = None,
) -> Report:
    """Group an attribution; ``units`` come from a build manifest, ``sources`` from a manifest
    or a discovered kernel tree."""
    keys = parse_by(by)
    names = attribution.names
    # Column arithmetic with map/zip: this runs once per function of a 15,000-function library.
    entry, public_md, private_md, module, reflection = attribution.pieces
    metadata = list(map(add, public_md, private_md))
    total = list(map(add, map(add, map(add, entry, metadata), module), reflection))
    measured = Report(
        source=source,
        file_size=attribution.file_size,
        format_version=attribution.format_version,
        by=",".join(keys),
        grouping="",
        functions=[],
        groups=[],
        overhead=[overhead_row(item.name, item.bytes) for item in attribution.overhead],
        jit_units=list(jit_units),
        host_library=host_library,
        provenance=dict(provenance or {}),
        download=download,
    )
    columns: list[Iterable[object]] = [
        names,
        [],
        total,
        module,
        entry,
        metadata,
        reflection,
        [],
        repeat("", len(names)),
        range(len(names)),
    ]
    return _grouped(measured, columns, _labels(names, keys, rules, units, sources))


def report_json_text(report: Report) -> str:
    """``json.dumps(report_to_dict(report))``, compact, but several times faster on big libraries.

    The function objects are formatted directly when every name and group is plain printable
    ASCII without quotes or backslashes (always true for Metal host names); otherwise the
    general encoder runs. Field order and values are identical either way.
    """
    from builder.files.jsontext import dumps

    doc = report_to_dict(report, functions=False)
    text = "".join(f.name + f.group for f in report.functions)
    nested = report.subgrouping is not None
    if report.download is not None or nested or not _PLAIN.fullmatch(text):
        doc["functions"] = _function_dicts(report)
        return dumps(doc, separators=(",", ":"))
    head = dumps(doc, separators=(",", ":"))
    body = ",".join(map(_FUNCTION_JSON.__mod__, map(_JSON_VALUES, report.functions)))
    return head[:-1] + ',"functions":[' + body + "]}"


_PLAIN = re.compile(r"[ !#-\[\]-~]*")
JSON_FIELDS = FunctionRow._fields[:7]
"""The fields of ``FunctionRow`` a report's JSON writes for each function, in its order (the
other fields are ``list``'s and the second ``--by`` label, written as ``subgroup``)."""
_TEXT_FIELDS = ("name", "group")
_FUNCTION_JSON = (
    "{" + ",".join(f'"{n}":' + ('"%s"' if n in _TEXT_FIELDS else "%d") for n in JSON_FIELDS) + "}"
)
_JSON_VALUES = itemgetter(slice(0, len(JSON_FIELDS)))


def _function_dicts(report: Report) -> list[dict[str, object]]:
    rows = [dict(zip(JSON_FIELDS, f)) for f in report.functions]
    if report.subgrouping is not None:  # two --by keys: each function's second label too
        rows = [
            {"name": row["name"], "group": row["group"], "subgroup": f.subgroup, **row}
            for row, f in zip(rows, report.functions)
        ]
    for row, share in zip(rows, report.download.functions if report.download else ()):
        row["download_bytes"] = share
    return rows


def _group_dict(group: Rollup) -> dict[str, object]:
    """A rollup node as JSON: every field of ``Rollup`` in its order (so a new measure needs no
    change here), a measure that was not taken (None) left out, ``children`` only when nested."""
    doc: dict[str, object] = {}
    for name in _ROLLUP_FIELDS:
        value = getattr(group, name)
        if name == "children":
            if value:
                doc[name] = [_group_dict(child) for child in value]
        elif value is not None:
            doc[name] = value
    return doc


_ROLLUP_FIELDS = tuple(f.name for f in fields_of(Rollup))


def report_to_dict(report: Report, *, functions: bool = True) -> dict[str, object]:
    """The report as JSON schema 1 (``docs/report-schema.md``)."""
    src = report.source
    overhead: list[dict[str, object]] = [
        {"name": o.name, "bytes": o.bytes} for o in report.overhead
    ]
    doc: dict[str, object] = {
        "schema": SCHEMA,
        "source": {
            **src.to_json(),
            **({} if src.embedded is None else {"embedded": src.embedded}),
        },
        "file_size": report.file_size,
        "format_version": report.format_version,
        "function_count": report.function_count,
        "by": report.by,
        "grouping": report.grouping,
        **({} if report.subgrouping is None else {"subgrouping": report.subgrouping}),
        "overhead_bytes": report.overhead_bytes,
        "overhead": overhead,
        "groups": [_group_dict(g) for g in report.groups],
        "jit_units": [
            {
                "name": j.name,
                "embedded_bytes": j.embedded_bytes,
                "host_bytes": j.host_bytes,
                "kernel_count": j.kernel_count,
                "embedding": j.embedding,
            }
            for j in report.jit_units
        ],
        "provenance": report.provenance,
    }
    if report.host_library is not None:  # builds with JIT units only: other reports unchanged
        doc["host_library"] = host_to_dict(report.host_library, report.jit_units)
    add_download_fields(doc, overhead, report.download)  # --download only
    if functions:
        doc["functions"] = _function_dicts(report)
    return doc
