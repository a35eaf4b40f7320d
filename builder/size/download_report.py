"""Download figures on a report: the model's shares (``builder.size.download``), the wheel's real
compressed sizes, and their JSON fields (docs/report-schema.md, "Download size").

A report made with ``--download`` carries a ``Download``: the modelled total, one share per
function and per overhead row (aligned with the report's rows, so regrouping keeps them), and,
for a metallib taken from a wheel, every file of that wheel with the compressed size its zip
directory records, the real figure the model is checked against.
"""

from __future__ import annotations

import os
import zlib
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, NamedTuple

from builder.errors import UsageError
from builder.files.reading import open_regular

if TYPE_CHECKING:
    from builder.metallib import Metallib
    from builder.size.attribution import Attribution

__all__ = [
    "Download",
    "WheelFile",
    "WheelFiles",
    "add_download_fields",
    "download_from_dict",
    "measure_download",
    "read_wheel_files",
]


class WheelFile(NamedTuple):
    """One file of a wheel: its size and its compressed size, both from the zip's directory."""

    name: str
    bytes: int
    download_bytes: int


@dataclass(frozen=True)
class WheelFiles:
    """Every file of a wheel, in archive order, and the wheel file's own size."""

    path: str
    bytes: int
    """The ``.whl`` file on disk: what the package index serves."""
    files: list[WheelFile]

    @property
    def download_bytes(self) -> int:
        """The members' compressed bytes together (the rest of ``bytes`` is zip headers)."""
        return sum(f.download_bytes for f in self.files)


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


def measure_download(lib: Metallib, attribution: Attribution, wheel: str | None) -> Download:
    """Model ``lib``'s download; with the wheel it came from, list the wheel's files too."""
    from builder.size.download import LEVEL, MODEL, PART_BYTES, STEP, WINDOW, download_share

    share = download_share(lib, attribution)
    model = {
        "description": MODEL,
        "codec": "raw deflate",
        "zlib": zlib.ZLIB_RUNTIME_VERSION,
        "level": LEVEL,
        "window_bytes": WINDOW,
        "part_bytes": PART_BYTES,
        "step_bytes": STEP,
        "parts": share.parts,
    }
    files = read_wheel_files(wheel) if wheel else None
    # a metallib inside a binary is not a wheel file of its own: no member to check the model on
    member = _member(lib.path, files) if files and not lib.file_offset else None
    return Download(share.total, share.functions, share.overhead, model, member, files)


def read_wheel_files(wheel: str) -> WheelFiles:
    """The zip directory of ``wheel``: names, sizes and compressed sizes (nothing is extracted)."""
    import zipfile

    from builder.inputs.wheel_index import check_entries

    try:
        with open_regular(wheel, "the wheel") as handle:
            check_entries(handle, wheel)  # before zipfile makes an object of every entry
            handle.seek(0)
            with zipfile.ZipFile(handle) as archive:
                size = os.fstat(handle.fileno()).st_size
                infos = archive.infolist()
    except (OSError, zipfile.BadZipFile, ValueError, EOFError) as exc:
        raise UsageError(f"{wheel}: cannot read the wheel's file list: {exc}") from None
    files = [WheelFile(i.filename, i.file_size, i.compress_size) for i in infos if not i.is_dir()]
    return WheelFiles(wheel, size, files)


def _member(path: str | None, files: WheelFiles) -> WheelFile | None:
    """The wheel entry the extracted metallib at ``path`` came from: the longest member name
    that ends its path (extraction keeps member paths, ``builder.inputs.wheels``)."""
    if path is None:
        return None
    text = Path(path).as_posix()
    found = [f for f in files.files if f.name.endswith(".metallib") and text.endswith("/" + f.name)]
    return max(found, key=lambda f: len(f.name)) if found else None


def add_download_fields(
    doc: dict[str, object], overhead: list[dict[str, object]], download: Download | None
) -> None:
    """Add the download fields to a report's JSON object (``report_to_dict``) and its
    ``overhead`` rows, in place; the functions' and groups' ``download_bytes`` are added where
    their objects are made."""
    if download is None:
        return
    for row, share in zip(overhead, download.overhead):
        row["download_bytes"] = share
    doc["download_bytes"] = download.total
    doc["overhead_download_bytes"] = download.overhead_bytes
    doc["download_model"] = download.model
    if download.member is not None:
        doc["download_member"] = download.member._asdict()
        doc["download_model_error_bytes"] = download.model_error
    if download.wheel is not None:
        wheel = download.wheel
        doc["wheel"] = {
            "path": wheel.path,
            "bytes": wheel.bytes,
            "download_bytes": wheel.download_bytes,
            "files": [f._asdict() for f in wheel.files],
        }


def download_from_dict(
    data: dict[str, object],
    functions_in: list[dict[str, object]],
    rows: list[dict[str, object]],
    overhead_rows: int,
    where: str,
) -> Download | None:
    """The download figures of a saved report (None when it was made without ``--download``);
    the sums are re-checked, so an edited report cannot pass a download gate."""
    if "download_bytes" not in data:
        return None

    def bad(why: str) -> UsageError:
        return UsageError(f"{where}: not a usable size report: {why}")

    functions = [_count(f.get("download_bytes")) for f in functions_in]
    overhead_total = _count(data.get("overhead_download_bytes"))
    shares = [_count(o.get("download_bytes", 0)) for o in rows]
    if len(shares) != overhead_rows or sum(shares) != overhead_total:
        shares = [overhead_total] if overhead_rows else []
    total = _count(data["download_bytes"])
    if sum(functions) + sum(shares) != total:
        raise bad(
            f"functions and overhead download {sum(functions) + sum(shares)} bytes, "
            f"download_bytes says {total}"
        )
    model = data.get("download_model")
    member = data.get("download_member")
    wheel = data.get("wheel")
    return Download(
        total,
        functions,
        shares,
        model if isinstance(model, dict) else {},
        _file(member) if isinstance(member, dict) else None,
        WheelFiles(str(wheel["path"]), _count(wheel["bytes"]), [_file(f) for f in wheel["files"]])
        if isinstance(wheel, dict)
        else None,
    )


def _file(value: dict[str, object]) -> WheelFile:
    return WheelFile(str(value["name"]), _count(value["bytes"]), _count(value["download_bytes"]))


def _count(value: object) -> int:
    if isinstance(value, bool) or not isinstance(value, int) or value < 0:
        raise ValueError(f"{value!r} is not a byte count")
    return value
