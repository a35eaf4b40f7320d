"""A size report: attributed bytes rolled up into groups, as plain data (no I/O, no rendering).

``build_report`` turns an ``Attribution`` (what the file contains) into a ``Report`` (what the
user asked to see: groups by kernel unit, dtype, source or function). The models are their
JSON documents (schema 2, ``docs/report-schema.md``): their fields carry the codec's metadata
(``builder.files.dataclass_json``), ``builder.size.saved`` lays a report out and reads one back,
so a saved report is a target like any other. Every figure carries its origin in
``Report.source``. A build's JIT units, measured in its host library rather than the metallib,
ride along in ``jit_units`` and ``host_library`` (``builder.size.jit_sizes``); ``jit_breakdown``
makes them rows. With ``--download``, a ``Download`` holds the modelled shares
(``builder.size.download``) and a wheel's files with their real compressed sizes.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, replace
from itertools import repeat
from operator import add
from typing import TYPE_CHECKING, Any, NamedTuple, cast

from builder.files.dataclass_json import count, dump, field, load
from builder.metallib.structs import Span
from builder.size.grouping import Sources, group_names, parse_by
from builder.size.jit_sizes import HostLibrary, JitUnit
from builder.size.rollup import FunctionRow, Rollup, overhead_row, roll_up

if TYPE_CHECKING:
    from builder.size.attribution import Attribution
    from builder.size.grouping import RuleSet

__all__ = [
    "SCHEMA",
    "Download",
    "Embedded",
    "JitUnit",
    "Report",
    "Source",
    "WheelFile",
    "WheelFiles",
    "build_report",
    "group_report",
]

SCHEMA = 2


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


def _embedded(value: dict[str, Any] | None, where: str) -> dict[str, Any] | None:
    """A saved ``Source.embedded`` checked against its shape (keys it does not have dropped)."""
    return None if value is None else cast(dict[str, Any], dump(load(Embedded, value, where)))


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
    identity: str | None = None
    """For a metallib inside a binary: its identity there, which survives releases
    (``builder.metallib.binary_sections``: symbol, else section, else ordinal)."""
    embedded: dict[str, Any] | None = field(omit="none", default=None, check=_embedded)
    """For a metallib inside a binary (``path``): its ``Embedded`` place there, as JSON data."""

    @property
    def window(self) -> Span | None:
        """The metallib's bytes in ``path`` when ``path`` is a binary holding it."""
        if self.embedded is None:
            return None
        return Span(self.embedded["offset"], self.embedded["size"])

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
class WheelFile:
    """One file of a wheel: its size and its compressed size, both from the zip's directory."""

    name: str
    bytes: int = count()
    download_bytes: int = count()


@dataclass(frozen=True)
class WheelFiles:
    """Every file of a wheel, in archive order, and the wheel file's own size."""

    path: str
    bytes: int = count()
    """The ``.whl`` file on disk: what the package index serves."""
    download_bytes: int = count(init=False, default=0)
    """The members' compressed bytes together (the rest of ``bytes`` is zip headers)."""
    files: list[WheelFile] = field(default_factory=list)

    def __post_init__(self) -> None:
        object.__setattr__(self, "download_bytes", sum(f.download_bytes for f in self.files))


@dataclass(frozen=True)
class Download:
    """A library's modelled download and everyone's share of it (``builder.size.download``)."""

    total: int
    functions: list[int]
    """Per function, aligned with ``Report.functions``."""
    overhead: list[int]
    """Per overhead row, aligned with ``Report.overhead``."""
    model: dict[str, object]
    """What the figures mean and how they were computed (JSON ``download_model``)."""
    member: WheelFile | None = None
    """The metallib's own entry in its wheel: the real compressed size the model estimates."""
    wheel: WheelFiles | None = None

    @property
    def overhead_bytes(self) -> int:
        return sum(self.overhead)

    @property
    def model_error(self) -> int | None:
        """Modelled minus real compressed bytes (None without a wheel member to compare with)."""
        return None if self.member is None else self.total - self.member.download_bytes


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
    jit_units: list[JitUnit] = dataclasses.field(default_factory=list)
    host_library: HostLibrary | None = None
    """The host library of a build with JIT units, when it exists
    (``builder.size.jit_sizes``)."""
    provenance: dict[str, Any] = dataclasses.field(default_factory=dict)
    """What produced the figures: tool version, the library's format/AIR/MSL versions and
    compiler identity, the build's options (``builder.size.load``)."""
    download: Download | None = None
    """Download shares (``report --download``; ``builder.size.download``)."""
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
