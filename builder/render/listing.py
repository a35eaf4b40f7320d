"""The ``list`` command as pure functions: rows from a parsed library, rendered as text or JSON.

Rows come from the reader's columns (no per-function objects), and the JSON is formatted row by
row with the C string encoder: ``list --format json`` on a 16,000-function library is mostly the
cost of parsing the function list.
"""

from __future__ import annotations

from itertools import count, repeat
from json.encoder import encode_basestring_ascii as _quote
from operator import add

from builder.files.jsontext import clean
from builder.metallib import FUNCTION_TYPES, Metallib
from builder.render.text import visible
from builder.size.rollup import FunctionRow

__all__ = ["function_rows", "rows_json", "rows_table"]


def _type_name(code: int | None) -> str:
    if code is None:
        return "none"
    return FUNCTION_TYPES.get(code, f"type{code}")


def function_rows(lib: Metallib, sort: str = "index") -> list[FunctionRow]:
    """One row per function (the report's ``FunctionRow``, without groups): file order, by
    ``name``, or largest module first (``size``)."""
    c = lib.columns()
    type_names = {code: _type_name(code) for code in set(c.types)}
    metadata = list(map(add, c.public_md_bytes, c.private_md_bytes))
    totals = map(sum, zip(c.entry_bytes, metadata, c.module_bytes, c.reflection_bytes))
    rows = list(
        map(
            FunctionRow._make,
            zip(
                c.names,
                repeat(""),
                totals,
                c.module_bytes,
                c.entry_bytes,
                metadata,
                c.reflection_bytes,
                repeat(""),
                map(type_names.__getitem__, c.types),
                count(),
            ),
        )
    )
    if sort == "name":
        rows.sort(key=lambda r: r.name)
    elif sort == "size":
        rows.sort(key=lambda r: (-r.bitcode_bytes, r.position))
    elif sort != "index":
        raise ValueError(f"unknown sort order {sort!r}")
    return rows


def rows_json(
    lib: Metallib, source: str, rows: list[FunctionRow], member: str | None = None
) -> str:
    """The ``list --format json`` object of one library (schema 1), one line; ``member`` is
    its name in the target (null: the target is the library)."""
    named = "null" if member is None else _quote(clean(member))
    items = ",".join(
        f'{{"name":{_quote(r.name)},"type":"{r.type}","bitcode_bytes":{r.bitcode_bytes},"bytes":{r.bytes}}}'
        for r in rows
    )
    return (
        f'{{"schema":1,"source":{_quote(clean(source))},"member":{named},'
        f'"file_size":{lib.file_size},'
        f'"format_version":"{lib.header.format_version_text}","function_count":{len(rows)},'
        f'"functions":[{items}]}}'
    )


def rows_table(lib: Metallib, source: str, rows: list[FunctionRow]) -> str:
    """Aligned plain text: a title line naming the file, a header, one line per function.

    Names and the path are shown through ``visible``: a name holding ESC, BEL or a newline is
    printed as ``\\x1b``, ``\\x07``, ``\\n``, so it can neither drive the terminal nor fake rows.
    """
    names = [visible(r.name) for r in rows]
    width = max(map(len, names), default=4)
    out = [
        (
            f"# {visible(source)}: {len(rows)} functions, {lib.file_size} bytes, "
            f"format {lib.header.format_version_text}"
        ),
        f"{'#':>6}  {'name':<{width}}  {'type':<8}  {'bitcode':>10}  {'bytes':>10}",
    ]
    out += [
        f"{r.position:>6}  {name:<{width}}  {r.type:<8}  {r.bitcode_bytes:>10}  {r.bytes:>10}"
        for r, name in zip(rows, names)
    ]
    return "\n".join(out)
