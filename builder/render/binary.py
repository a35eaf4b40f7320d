"""A binary's account (``builder.size.binary_account``) in each format ``report`` writes: its
embedded libraries and the rest of the file by section, adding up to the file's size."""

from __future__ import annotations

import io
from collections.abc import Sequence
from typing import TYPE_CHECKING

from builder.render.markup import md_code, print_table, rich_text, text_console
from builder.render.text import human_size, percent

if TYPE_CHECKING:
    from builder.size.binary_account import BinaryAccount

__all__ = ["binary_json", "binary_markdown", "binary_text"]


def _title(account: BinaryAccount) -> str:
    libraries = sum(1 for r in account.rows if not r.overhead)
    return (
        f"{account.shown}: {account.kind}, {human_size(account.file_size)} "
        f"({account.file_size:,} bytes); {libraries} metallib(s) "
        f"{percent(account.library_bytes, account.file_size)}, the rest by section"
    )


def binary_text(accounts: Sequence[BinaryAccount], *, color: bool, width: int | None) -> str:
    """One rich table per binary: part, bytes, share of the file."""
    from rich.table import Table

    out = io.StringIO()
    console = text_console(out, color=color, width=width)
    for account in accounts:
        table = Table(title=rich_text(_title(account)), title_justify="left")
        table.add_column("part of the binary")
        table.add_column("functions", justify="right")
        table.add_column("size", justify="right")
        table.add_column("bytes", justify="right")
        table.add_column("share", justify="right")
        for row in account.rows:
            count = "" if row.overhead else f"{row.function_count:,}"
            table.add_row(
                rich_text(row.name),
                count,
                human_size(row.bytes),
                f"{row.bytes:,}",
                percent(row.bytes, account.file_size),
            )
        table.add_section()
        table.add_row(
            "total", "", human_size(account.file_size), f"{account.file_size:,}", "100.0%"
        )
        print_table(console, table, fit=width is None)
    return out.getvalue()


def binary_markdown(accounts: Sequence[BinaryAccount]) -> str:
    """A markdown table per binary."""
    parts = []
    for account in accounts:
        parts += [f"### Binary {md_code(account.shown)}\n", f"{md_code(_title(account))}\n"]
        parts += ["| part of the binary | functions | size | share |", "|---|---:|---:|---:|"]
        for row in account.rows:
            count = "" if row.overhead else f"{row.function_count:,}"
            share = percent(row.bytes, account.file_size)
            parts.append(f"| {md_code(row.name)} | {count} | {human_size(row.bytes)} | {share} |")
        parts.append(f"| total | | {human_size(account.file_size)} | 100.0% |\n")
    return "\n".join(parts)


def binary_json(accounts: Sequence[BinaryAccount]) -> list[dict[str, object]]:
    """``binaries`` of the report JSON (docs/report-schema.md)."""
    return [
        {
            "path": account.path,
            "binary": account.shown,
            "kind": account.kind,
            "file_size": account.file_size,
            "parts": [
                {
                    "name": row.name,
                    "library": not row.overhead,
                    "function_count": row.function_count,
                    "bytes": row.bytes,
                }
                for row in account.rows
            ],
        }
        for account in accounts
    ]
