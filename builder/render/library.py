"""What one library or binary holds, line by line: ``list`` (every function, text or JSON),
``verify`` (its problems and verdict) and ``sources`` (a host library's run-time sources, a
table per binary on the table model, ``builder.render.table``).

``list`` rows come from the reader's columns (no per-function objects), and its JSON is formatted
row by row with the C string encoder: ``list --format json`` on a 16,000-function library is
mostly the cost of parsing the function list. Names come from the file: shown through
``visible`` (ESC, BEL, newline escaped) in text.
"""

from __future__ import annotations

from collections.abc import Sequence
from itertools import count, repeat
from json.encoder import encode_basestring_ascii as _quote
from operator import add
from typing import TYPE_CHECKING

from builder.files.dataclass_json import clean
from builder.metallib import Metallib
from builder.metallib.structs import type_name
from builder.render.table import SIZES, Column, Name, Row, Said, Table
from builder.render.text import human_size, visible
from builder.size.rollup import FunctionRow

if TYPE_CHECKING:
    from builder.metallib.verify import VerifyReport
    from builder.size.host_strings import HostString

__all__ = [
    "SHOWN_PROBLEMS",
    "Found",
    "function_rows",
    "rows_json",
    "rows_table",
    "sorted_rows",
    "sources_tables",
    "verify_dict",
    "verify_lines",
    "verify_verdict",
]

Found = Sequence[tuple[str | None, Sequence["HostString"]]]
"""Each binary's member path in the wheel (None: the binary given itself) and its sources."""


def sources_tables(shown: str, found: Found, namespace: str | None) -> list[Table]:
    """A table per binary, titled by its member of the wheel ``shown`` when it is one: the
    source (its function, or where a translation unit no function returns sits), architecture
    (a fat file lists each), file offset, kernels written in it, bytes, and the total."""
    tables = []
    for member, sources in found:
        title = shown if member is None else f"{member} of {shown}"
        total = sum(s.size for s in sources)
        archs = len({s.arch for s in sources}) > 1
        columns = (
            Column("source", "source", "text"),
            *([Column("arch", "arch", "text")] if archs else []),
            Column("offset", "offset", "text"),
            Column("kernels", "kernels", "count"),
            *SIZES,
        )
        rows = [
            Row(
                (
                    Name(s.label),
                    *([s.arch] if archs else []),
                    f"{s.offset:#x}",
                    s.kernels,
                    s.size,
                    s.size,
                )
            )
            for s in sources
        ]
        kernels = sum(s.kernels or 0 for s in sources)
        rows.append(
            Row(("total", *([None] if archs else []), None, kernels, total, total), "total")
        )
        where = f" in {namespace}" if namespace else ""
        tables.append(
            Table(
                columns,
                tuple(rows),
                title=(
                    Name(title),
                    Said(  # the namespace is the user's
                        f": {len(sources)} run-time source(s){where}, {human_size(total)} "
                        f"({total:,} bytes, NULs of C strings included)"
                    ),
                ),
                context=(("file", member or shown),),
            )
        )
    return tables


def function_rows(lib: Metallib, sort: str = "index") -> list[FunctionRow]:
    """One row per function (the report's ``FunctionRow``, without groups), in ``sort`` order
    (:func:`sorted_rows`)."""
    c = lib.columns()
    type_names = {code: type_name(code) for code in set(c.types)}
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
    return sorted_rows(rows, sort)


def sorted_rows(rows: list[FunctionRow], sort: str) -> list[FunctionRow]:
    """``rows`` in file order (``index``), by ``name``, or largest module first (``size``)."""
    if sort == "name":
        rows.sort(key=lambda r: r.name)
    elif sort == "size":
        rows.sort(key=lambda r: (-r.bitcode_bytes, r.position))
    elif sort != "index":
        raise ValueError(f"unknown sort order {sort!r}")
    return rows


def rows_json(
    file: tuple[int, str], source: str, rows: list[FunctionRow], member: str | None = None
) -> str:
    """The ``list --format json`` object of one library (schema 1), one line: ``file`` is its
    size and format version, ``member`` its name in the target (null: the target is the
    library). A function's ``type`` is null where a saved report, which does not record it,
    is listed."""
    named = "null" if member is None else _quote(clean(member))
    typed = {t: f'"{t}"' if t else "null" for t in {r.type for r in rows}}  # the tool's words
    items = ",".join(
        f'{{"name":{_quote(r.name)},"type":{typed[r.type]},'
        f'"bitcode_bytes":{r.bitcode_bytes},"bytes":{r.bytes}}}'
        for r in rows
    )
    return (
        f'{{"schema":1,"source":{_quote(clean(source))},"member":{named},'
        f'"file_size":{file[0]},"format_version":{_quote(file[1])},"function_count":{len(rows)},'
        f'"functions":[{items}]}}'
    )


def rows_table(file: tuple[int, str], source: str, rows: list[FunctionRow]) -> str:
    """Aligned plain text: a title line naming the file, a header, one line per function (its
    type ``-`` where a saved report, which does not record it, is listed).

    Names and the path are shown through ``visible``: a name holding ESC, BEL or a newline is
    printed as ``\\x1b``, ``\\x07``, ``\\n``, so it can neither drive the terminal nor fake rows.
    """
    names = [visible(r.name) for r in rows]
    width = max(map(len, names), default=4)
    out = [
        f"# {visible(source)}: {len(rows)} functions, {file[0]} bytes, format {visible(file[1])}",
        f"{'#':>6}  {'name':<{width}}  {'type':<8}  {'bitcode':>10}  {'bytes':>10}",
    ]
    out += [
        f"{r.position:>6}  {name:<{width}}  {r.type or '-':<8}  {r.bitcode_bytes:>10}  "
        f"{r.bytes:>10}"
        for r, name in zip(rows, names)
    ]
    return "\n".join(out)


SHOWN_PROBLEMS = 50
"""Problems printed per library in text (JSON has every one)."""


def verify_lines(
    report: VerifyReport, shown: str, warnings: Sequence[str] = (), notes: Sequence[str] = ()
) -> list[str]:
    """A ``FAIL`` line per problem (the first ``SHOWN_PROBLEMS``), a ``warning:`` line per
    warning and a ``note:`` line per note (``builder.size.platform_warnings``: they do not fail
    it), then ``OK:`` or ``FAILED:`` naming the library, its functions, format and the module
    bytes hashed."""
    lines = []
    for problem in report.problems[:SHOWN_PROBLEMS]:
        who = visible(problem.function) if problem.function is not None else "(container)"
        lines.append(f"FAIL {who}: byte offset {problem.offset}: {visible(problem.message)}")
    if len(report.problems) > SHOWN_PROBLEMS:
        lines.append(f"... and {len(report.problems) - SHOWN_PROBLEMS} more problems")
    lines += [f"warning: {visible(text)}" for text in warnings]
    lines += [f"note: {visible(text)}" for text in notes]
    verdict = "OK" if report.ok else "FAILED"
    lines.append(
        f"{verdict}: {visible(shown)}: {report.function_count} functions, "
        f"format {report.format_version}, "
        f"{report.hashed_bytes} module bytes hashed ({human_size(report.hashed_bytes)})"
    )
    return lines


def verify_verdict(target: str, count: int, failed: Sequence[str]) -> str:
    """The last line over the ``count`` libraries of ``target``: ``OK`` when none failed, else
    ``FAILED`` naming the ones that did."""
    if not failed:
        return f"OK: {visible(target)}: all {count} libraries verified"
    names = ", ".join(visible(name) for name in failed)
    return f"FAILED: {visible(target)}: {len(failed)} of {count} libraries failed ({names})"


def verify_dict(
    report: VerifyReport,
    shown: str,
    member: str | None,
    warnings: Sequence[str] = (),
    notes: Sequence[str] = (),
) -> dict[str, object]:
    """The JSON object of one library (schema 1): its verdict, figures, every problem, and the
    warnings and notes that do not fail it; ``member`` is its name in the target (None: the
    target is the library)."""
    return {
        "schema": 1,
        "source": shown,
        "member": member,
        "ok": report.ok,
        "file_size": report.file_size,
        "format_version": report.format_version,
        "function_count": report.function_count,
        "hashed_bytes": report.hashed_bytes,
        "problems": [
            {"function": p.function, "offset": p.offset, "message": p.message}
            for p in report.problems
        ],
        "warnings": list(warnings),
        "notes": list(notes),
    }
