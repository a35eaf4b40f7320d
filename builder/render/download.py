"""Download figures for people: the columns, the model's line and a wheel's files
(``report --download``, ``compare --download``; the data is ``builder.size.download_report``).

Every renderer asks ``DownloadColumn.of(report)`` for the download cell of each row it shows; a
report without download figures gives None and the format stays as it was.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import TYPE_CHECKING

from builder.render.rows import Shown, top_rows
from builder.render.text import human_delta, human_size, percent, signed_percent
from builder.size.rollup import Rollup

if TYPE_CHECKING:
    from builder.size.compare import Comparison
    from builder.size.download_report import Download, WheelFiles
    from builder.size.report import Report

__all__ = [
    "DownloadColumn",
    "compare_download_line",
    "download_line",
    "wheel_file_rows",
    "wheels_of",
]


class DownloadColumn:
    """The download cells of a report's rows: a group's come from its rollup node
    (``Rollup.download_bytes``), the overhead's and the total's from the report."""

    def __init__(self, download: Download) -> None:
        self.total = download.total
        self.overhead = download.overhead_bytes

    @classmethod
    def of(cls, report: Report) -> DownloadColumn | None:
        return None if report.download is None else cls(report.download)

    def cells(self, value: int | None) -> tuple[str, str]:
        """Human size and share of the modelled total."""
        value = value or 0
        return human_size(value), percent(value, self.total)


def download_line(report: Report) -> str | None:
    """What the download column is and how close it came: one line under a table."""
    download = report.download
    if download is None:
        return None
    level = download.model.get("level", "?")
    line = (
        f"download: {human_size(download.total)} ({download.total:,} bytes, "
        f"{percent(download.total, report.file_size)} of the file), modelled as a wheel "
        f"stores it (zlib level {level}; docs/download-size.md)"
    )
    member = download.member
    if member is not None and download.model_error is not None:
        line += (
            f"; the wheel's {member.name} is {member.download_bytes:,} bytes compressed: "
            f"model {human_delta(download.model_error)} "
            f"({100.0 * download.model_error / max(member.download_bytes, 1):+.4f}%)"
        )
    return line


def compare_download_line(comparison: Comparison) -> str | None:
    """The modelled download of both sides and its change, in one line."""
    base, head, delta = (
        comparison.base.download,
        comparison.head.download,
        comparison.download_delta,
    )
    if base is None or head is None or delta is None:
        return None
    return (
        f"download (modelled, zlib 6 as a wheel stores it): {human_size(base.total)} → "
        f"{human_size(head.total)}, {human_delta(delta)} "
        f"({signed_percent(comparison.download_percent)})"
    )


def wheels_of(reports: Sequence[Report]) -> list[WheelFiles]:
    """The wheels behind ``reports`` with their file lists, each once, in order."""
    seen: dict[str, WheelFiles] = {}
    for report in reports:
        wheel = report.download.wheel if report.download else None
        if wheel is not None:
            seen.setdefault(wheel.path, wheel)
    return list(seen.values())


def wheel_file_rows(wheel: WheelFiles, top: int | None) -> Shown:
    """A wheel's files as rollup rows (bytes, and the zip's compressed bytes as download bytes),
    the largest ``top`` by download (then name), the rest folded."""
    files = sorted(wheel.files, key=lambda f: (-f.download_bytes, f.name))
    return top_rows([Rollup(f.name, 0, f.bytes, 0, f.download_bytes) for f in files], top)
