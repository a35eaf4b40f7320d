"""A size report: attributed bytes rolled up into groups, as plain data (no I/O, no rendering).

``build_report`` turns an ``Attribution`` (what the file contains) into a ``Report`` (what the
user asked to see: groups by kernel unit, dtype, source, template parameters or function). The
models are their JSON documents (schema 3, ``docs/report-schema.md``): their fields carry the
codec's metadata (``builder.files.dataclass_json``): ``dump(report)`` is the saved report, the
figures it derives (counts, sums, download shares, template parameters) written as fields the
model computes; ``builder.size.saved`` reads one back, so a saved report is a target like any
other. Every figure carries its origin in ``Report.source``. A build's JIT units, measured in
its host library rather than the metallib, ride along in ``jit_units`` and ``host_library``
(``builder.size.jit_sizes``); ``builder.size.compare.jit_breakdown`` makes them rows. With
``--download``, a ``Download`` holds the modelled shares (``builder.size.download``) and a
wheel's files with their real compressed sizes.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, replace
from itertools import repeat
from operator import add, attrgetter
from typing import TYPE_CHECKING, Any, NamedTuple

from builder.files.dataclass_json import count, dump, field
from builder.metallib.structs import Span
from builder.size.grouping import Sources, group_names, parse_by
from builder.size.jit_sizes import HostLibrary, JitUnit, unattributed_bytes, unmeasured_reason
from builder.size.params import GroupParameters, parameter_groups
from builder.size.rollup import FunctionRow, Rollup, overhead_row, roll_up

if TYPE_CHECKING:
    from builder.size.attribution import Attribution
    from builder.size.grouping import RuleSet

__all__ = [
    "SCHEMA",
    "Download",
    "JitUnit",
    "OverheadShare",
    "Report",
    "Source",
    "WheelFile",
    "WheelFiles",
    "build_report",
    "group_report",
]

SCHEMA = 3
"""The report's layout: 3 since ``download_model`` counts shards, not parts (``builder.size.saved``
reads 2 too)."""


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
    embedded: dict[str, Any] | None = field(omit="none", default=None)
    """For a metallib inside a binary (``path``): its place there, the JSON data of a
    ``builder.size.saved.Embedded``."""

    @property
    def window(self) -> Span | None:
        """The metallib's bytes in ``path`` when ``path`` is a binary holding it."""
        if self.embedded is None:
            return None
        return Span(self.embedded["offset"], self.embedded["size"])

    @property
    def label(self) -> str:
        """A short name for tables: the target plus the member when there are several."""
        from builder.inputs.member_names import label

        return label(self.target, self.kind, self.member, self.identity)

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
class OverheadShare:
    """An overhead row as a saved report writes it: its bytes, and with ``--download`` its share."""

    name: str
    bytes: int = count()
    download_bytes: int | None = count(omit="none", default=None)


def _overhead_shares(report: Report) -> list[OverheadShare]:
    """The overhead rows as a saved report writes them: with ``--download``, each one's share."""
    shares = report.download.overhead if report.download else [None] * len(report.overhead)
    return [OverheadShare(o.name, o.bytes, s) for o, s in zip(report.overhead, shares)]


def _host_document(report: Report) -> dict[str, object] | None:
    """``HostLibrary`` and, when its symbols were measured, the bytes in no symbol."""
    host, jit = report.host_library, report.jit_units
    if host is None:
        return None
    unmapped = unattributed_bytes(host, jit) if unmeasured_reason(host, jit) is None else None
    return {**dump(host), "unattributed_bytes": unmapped}


@dataclass(frozen=True, kw_only=True)
class Report:
    """Measured sizes of one metallib, grouped ``by`` one key or two (``source,dtype``).

    Its document (``dump``) is the saved report, in the order of the fields. The overhead rows
    and the host library are written otherwise than they are held (the codec's ``write``:
    with their download shares, with the bytes in no symbol); the download's figures are
    fields ``__post_init__`` derives; ``builder.render.json_docs`` writes the functions row by
    row. Defaults are what older saved reports lack."""

    schema: int = field(init=False, default=SCHEMA)
    source: Source
    file_size: int = count()
    format_version: str = "?"
    function_count: int = field(init=False, default=0)
    by: str = "kernel"
    """The key, or two keys joined by a comma (the groups, then each group's children)."""
    grouping: str = "saved"
    """How the first key's labels were obtained (``builder.size.grouping.Grouping.method``)."""
    subgrouping: str | None = field(omit="none", default=None)
    """How the second key's labels were obtained (None with one key)."""
    overhead_bytes: int = count(init=False, default=0)
    overhead: list[Rollup] = field(write=_overhead_shares, default_factory=list)
    """Bytes no function owns, by part of the container (``overhead_row``s)."""
    groups: list[Rollup] = field(write=attrgetter("groups"), default_factory=list)
    """Largest first (ties by name); with two keys each carries its ``children``. Written for
    readers; not read (``builder.size.saved`` rolls the functions up again)."""
    parameters: list[GroupParameters] | None = field(init=False, omit="none", default=None)
    """With ``param`` among the ``--by`` keys: each group's (the first key's) template
    parameters and the bytes of each of their values (``builder.size.params``), derived from
    the functions (None without that key)."""
    jit_units: list[JitUnit] = field(default_factory=list)
    provenance: dict[str, Any] = field(default_factory=dict)
    """What produced the figures: tool version, the library's format/AIR/MSL versions and
    compiler identity, the build's options (``builder.size.load``)."""
    warnings: list[str] = field(omit="empty", default_factory=list)
    """What is wrong with the library or with how it was measured, one sentence each (a kernel
    tree that does not match it, a platform above its wheel's tag): the terminal prints them on
    stderr and every other view (markdown, the PR comment, JSON) carries them too."""
    tree_kernels_missing: list[str] | None = field(omit="none", default=None)
    """With a kernel tree (``--source-dir``): the tree's kernels for the library's platform
    that the library does not hold, sorted; None without a tree."""
    host_library: HostLibrary | None = field(write=_host_document, omit="none", default=None)
    """The host library of a build with JIT units, when it exists
    (``builder.size.jit_sizes``)."""
    download_bytes: int | None = count(init=False, omit="none", default=None)
    overhead_download_bytes: int | None = count(init=False, omit="none", default=None)
    download_model: dict[str, object] | None = field(init=False, omit="none", default=None)
    download_member: WheelFile | None = field(init=False, omit="none", default=None)
    download_model_error_bytes: int | None = field(init=False, omit="none", default=None)
    wheel: WheelFiles | None = field(init=False, omit="none", default=None)
    functions: list[FunctionRow] = field(omit="always", default_factory=list)
    """In file order."""
    download: Download | None = field(omit="always", default=None)
    """Download shares (``report --download``; ``builder.size.download``)."""
    module_hashes: bytes | None = field(omit="always", default=None, repr=False, compare=False)
    """Each function's HASH tag (32 bytes, in ``functions`` order) as the library states it;
    None for a saved report (``builder.size.duplicates``: which modules are identical)."""

    def __post_init__(self) -> None:
        """The figures the saved report carries beside the model, derived from it."""
        download = self.download
        derived: dict[str, Any] = {
            "function_count": len(self.functions),
            "overhead_bytes": sum(row.bytes for row in self.overhead),
        }
        if "param" in self.keys:  # the first key's groups: kernel,param gives a kernel group's
            functions = self.functions
            names, sizes = [f.name for f in functions], [f.bytes for f in functions]
            derived["parameters"] = parameter_groups(names, sizes, [f.group for f in functions])
        if download is not None:
            derived.update(
                download_bytes=download.total,
                overhead_download_bytes=download.overhead_bytes,
                download_model=download.model,
                download_member=download.member,
                download_model_error_bytes=download.model_error,
                wheel=download.wheel,
            )
        for name, value in derived.items():
            object.__setattr__(self, name, value)

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
    module_hashes: bytes | None = None,
) -> Report:
    """Group an attribution; ``units`` come from a build manifest, ``sources`` from a manifest
    or a discovered kernel tree; ``module_hashes``: the functions' HASH tags."""
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
        module_hashes=module_hashes,
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
