"""A saved report read back, every field checked: a report JSON may come from anyone
(docs/security.md).

``report_from_dict`` reads a saved report (the document ``builder.size.report.report_to_dict``
writes) through the checks below, so that every field it keeps has the type the renderers rely
on, and a wrong one is a TypeError or ValueError whose message names the field
(``'source.target' is 5, not a string``).
"""

from __future__ import annotations

from typing import NoReturn

from builder.errors import UsageError
from builder.files.bounds import LARGEST_COUNT, brief, byte_count
from builder.size.download_report import download_from_dict
from builder.size.grouping import parse_by
from builder.size.jit_sizes import JitUnit, host_from_dict
from builder.size.report import JSON_FIELDS, SCHEMA, Report, Source
from builder.size.rollup import FunctionRow, overhead_row, roll_up

__all__ = [
    "as_object",
    "brief",
    "embedded",
    "object_list",
    "optional_text",
    "provenance",
    "report_from_dict",
    "text",
]


def as_object(value: object, field: str) -> dict[str, object]:
    """A JSON object (``{}`` for an absent one)."""
    if value is None:
        return {}
    if not isinstance(value, dict):
        raise TypeError(f"{field!r} is {brief(value)}, not an object")
    return value


def object_list(value: object, field: str) -> list[dict[str, object]]:
    """A JSON array of objects."""
    if not isinstance(value, list) or not all(isinstance(item, dict) for item in value):
        raise TypeError(f"{field!r} is not a list of objects")
    return value


def optional_text(value: object, field: str) -> str | None:
    """A string or null."""
    if value is not None and not isinstance(value, str):
        raise TypeError(f"{field!r} is {brief(value)}, not a string")
    return value


def text(value: object, field: str) -> str:
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


def provenance(value: object) -> dict[str, object]:
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


def embedded(value: object, field: str) -> dict[str, object] | None:
    """A saved report's ``source.embedded`` (a metallib's place in a binary), checked: byte
    counts and short texts only, ``offset`` and ``size`` required."""
    if value is None:
        return None
    doc = as_object(value, field)
    out: dict[str, object] = {}
    for key in ("offset", "size", "section_offset", "ordinal"):
        if doc.get(key) is not None:
            out[key] = byte_count(doc[key], f"{field}.{key}")
    for key in ("format", "arch", "segment", "section", "symbol"):
        text = optional_text(doc.get(key), f"{field}.{key}")
        if text is not None:
            out[key] = text
    if "offset" not in out or "size" not in out:
        raise ValueError(f"{field!r} needs 'offset' and 'size'")
    return out


def report_from_dict(data: object, where: str) -> Report:
    """Read a saved report back; anything malformed or inconsistent is a UsageError (exit 2)
    naming the field: a saved report may come from anyone (docs/security.md), so every field is
    checked for its type, counts are bounded (``builder.files.bounds.byte_count``) and provenance
    must
    have the shape ``builder.size.provenance`` writes.

    The totals invariant is re-checked, so a hand-edited or truncated report cannot pass a gate.
    """

    def bad(why: str) -> UsageError:
        return UsageError(f"{where}: not a usable size report: {why}")

    if not isinstance(data, dict):
        raise bad("the top level is not an object")
    if data.get("schema") != SCHEMA:
        raise bad(f"schema is {brief(data.get('schema'))}, this tool reads schema {SCHEMA}")
    try:
        src = as_object(data.get("source"), "source")
        source = Source(
            path=optional_text(src.get("path"), "source.path"),
            target=optional_text(src.get("target"), "source.target") or where,
            kind="report",
            wheel=optional_text(src.get("wheel"), "source.wheel"),
            manifest=optional_text(src.get("manifest"), "source.manifest"),
            member=optional_text(src.get("member"), "source.member"),
            embedded=embedded(src.get("embedded"), "source.embedded"),
            identity=optional_text(src.get("identity"), "source.identity"),
        )
        fn_docs = object_list(data["functions"], "functions")
        functions = _function_rows(fn_docs)
        overhead_bytes = byte_count(data["overhead_bytes"], "overhead_bytes")
        overhead_docs = object_list(data.get("overhead", []), "overhead")
        overhead = [
            overhead_row(
                text(o["name"], "overhead[].name"),
                byte_count(o["bytes"], "overhead[].bytes"),
            )
            for o in overhead_docs
        ]
        if sum(o.bytes for o in overhead) != overhead_bytes:
            overhead = [overhead_row("overhead", overhead_bytes)]
        file_size = byte_count(data["file_size"], "file_size")
        jit = [
            JitUnit(
                text(j["name"], "jit_units[].name"),
                byte_count(j["embedded_bytes"], "jit_units[].embedded_bytes"),
                None
                if j.get("host_bytes") is None
                else byte_count(j["host_bytes"], "jit_units[].host_bytes"),
                byte_count(j.get("kernel_count", 0), "jit_units[].kernel_count"),
                _embedding(j.get("embedding", "preamble")),
            )
            for j in object_list(data.get("jit_units", []), "jit_units")
        ]
        try:
            by = ",".join(parse_by(text(data.get("by", "kernel"), "by")))
        except UsageError as exc:
            raise bad(f"field 'by': {exc}") from None
        subgrouping = data.get("subgrouping")
        if (subgrouping is None) != ("," not in by):
            raise bad(f"'by' is {by!r} but subgrouping is {brief(subgrouping)}")
        download = download_from_dict(data, fn_docs, overhead_docs, len(overhead), where)
        report = Report(
            source=source,
            file_size=file_size,
            format_version=text(data.get("format_version", "?"), "format_version"),
            by=by,
            grouping=text(data.get("grouping", "saved"), "grouping"),
            functions=functions,
            groups=roll_up(
                functions, download.functions if download else None, nested=subgrouping is not None
            ),
            overhead=overhead,
            jit_units=jit,
            host_library=host_from_dict(data.get("host_library"), jit),
            provenance=provenance(data.get("provenance")),
            download=download,
            subgrouping=None if subgrouping is None else text(subgrouping, "subgrouping"),
        )
    except KeyError as exc:
        raise bad(f"missing or malformed field: {exc} is missing") from None
    except (TypeError, ValueError, AttributeError) as exc:
        raise bad(str(exc)) from None
    total = sum(f.bytes for f in functions) + overhead_bytes
    if total != file_size:
        raise bad(f"functions and overhead add up to {total} bytes, file_size says {file_size}")
    if "function_count" in data and data["function_count"] != len(functions):
        raise bad(
            f"function_count {brief(data['function_count'])} but {len(functions)} functions listed"
        )
    return report


# The order _function_rows reads a saved function's byte counts in.
assert JSON_FIELDS[2:] == (
    "bytes",
    "bitcode_bytes",
    "entry_bytes",
    "metadata_bytes",
    "reflection_bytes",
)


def _function_rows(docs: list[dict[str, object]]) -> list[FunctionRow]:
    """One row per saved function, each field checked. A report may list a million functions,
    so the common case (every field of the right type) is tested inline, and only a function
    that fails it goes through the checks that name the field (a call per field took about 1.5
    times the CPU: 3.8 against 2.5 s for 1.3 million functions). Repeated group labels share one
    string."""
    rows: list[FunctionRow] = []
    labels: dict[str, str] = {}
    for position, f in enumerate(docs):
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
    """The error of a saved function with a field of the wrong type (``KeyError`` for a missing
    name or size, as before)."""
    text(f["name"], "functions[].name")
    text(f.get("group", "other"), "functions[].group")
    text(f.get("subgroup", ""), "functions[].subgroup")
    byte_count(f["bytes"], "functions[].bytes")
    for key in JSON_FIELDS[3:]:
        byte_count(f.get(key, 0), f"functions[].{key}")
    raise TypeError("'functions[]' holds a value of a type no report writes")


def _embedding(value: object) -> str:
    """A JIT family's ``embedding`` (reports saved before the key: ``preamble``)."""
    if value not in ("whole-file", "preamble"):
        raise UsageError(f"jit_units[].embedding {brief(value)} is not whole-file or preamble")
    return str(value)
