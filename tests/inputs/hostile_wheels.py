"""Wheels built to break an extractor: escaping names, lying sizes, bytes that fail their CRC.

Everything is made with ``zipfile`` itself; where a field must lie, the in-memory ``ZipInfo`` is
changed after its data is written, so only the central directory (what readers trust) lies.
"""

from __future__ import annotations

import os
import warnings
import zipfile
from collections.abc import Mapping, Sequence
from pathlib import Path

__all__ = ["WHEEL_NAME", "corrupt_member", "temp_files", "tree", "write_wheel"]

WHEEL_NAME = "pkg-1.0-py3-none-macosx_14_0_arm64.whl"


def write_wheel(
    path: Path,
    members: Mapping[str, bytes] | Sequence[tuple[str, bytes]],
    *,
    declared: Mapping[str, int] | None = None,
    compression: int = zipfile.ZIP_DEFLATED,
) -> Path:
    """Write a zip with ``members`` (names used verbatim); ``declared`` overrides the size the
    central directory states for a member (ZIP64 fields are added when it is past 4 GiB)."""
    items = list(members.items()) if isinstance(members, Mapping) else list(members)
    path.parent.mkdir(parents=True, exist_ok=True)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")  # "Duplicate name" when a test wants two of them
        with zipfile.ZipFile(path, "w", compression=compression) as archive:
            for name, data in items:
                archive.writestr(zipfile.ZipInfo(name, (2024, 1, 1, 0, 0, 0)), data, compression)
                if declared and name in declared:
                    archive.filelist[-1].file_size = declared[name]
    with zipfile.ZipFile(path) as check:  # the names and sizes really are in the file
        assert [i.filename for i in check.infolist()] == [n for n, _ in items]
        if declared:
            sizes = {i.filename: i.file_size for i in check.infolist()}
            assert all(sizes[n] == s for n, s in declared.items())
    return path


def corrupt_member(wheel: Path, name: str, at: int = 0) -> None:
    """Flip one byte of a stored member's data, ``at`` bytes in, so its CRC no longer matches."""
    with zipfile.ZipFile(wheel) as archive:
        info = archive.getinfo(name)
        assert info.compress_type == zipfile.ZIP_STORED, "store it, so the byte is the data"
    with open(wheel, "r+b") as handle:
        handle.seek(info.header_offset + 26)
        name_len = int.from_bytes(handle.read(2), "little")
        extra_len = int.from_bytes(handle.read(2), "little")
        offset = info.header_offset + 30 + name_len + extra_len + at
        handle.seek(offset)
        byte = handle.read(1)
        handle.seek(offset)
        handle.write(bytes([byte[0] ^ 0xFF]))


def tree(root: Path, skip: Path | None = None) -> dict[str, bytes]:
    """Every file under ``root`` (except under ``skip``) with its contents."""
    files = {}
    for folder, dirs, names in os.walk(root):
        if skip is not None and Path(folder) == skip:
            dirs[:] = []
            continue
        for name in names:
            path = Path(folder, name)
            files[str(path.relative_to(root))] = path.read_bytes()
    return files


def temp_files(root: Path) -> list[str]:
    """Leftover temporary files or folders of the wheel cache under ``root``."""
    return [
        os.path.join(folder, name)
        for folder, dirs, names in os.walk(root)
        for name in [*dirs, *names]
        if name.startswith((".extract-", ".download-", ".record-"))
    ]
