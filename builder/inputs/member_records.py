"""The record of one wheel's extraction folder: each extracted member's SHA-256 and file stamp, so
a member is reused only while it holds the bytes written (``builder.inputs.wheel_extract``
extracts; why a cached member is checked at all: ``builder.inputs.wheel_cache``)."""

from __future__ import annotations

import os
from pathlib import Path

from builder.errors import UsageError
from builder.files.reading import open_regular, read_json
from builder.inputs.wheel_cache import (
    RECORD_NAME,
    file_stamp,
    is_sha256,
    save_record,
    sha256_of,
    touch,
)

__all__ = ["MemberRecords"]


class MemberRecords:
    """The record of one wheel's extraction folder ``root``: member name -> SHA-256 and stamp."""

    def __init__(self, root: Path) -> None:
        self.path = root / RECORD_NAME
        self.entries: dict[str, dict[str, object]] = {}
        self._dirty = False
        try:
            data = read_json(self.path, "the cache's member record")
        except UsageError:  # none yet, or damaged: every member counts as unrecorded
            return
        members = data.get("members") if isinstance(data, dict) else None
        if isinstance(members, dict):
            self.entries = {
                name: entry
                for name, entry in members.items()
                if isinstance(entry, dict) and is_sha256(entry.get("sha256"))
            }

    def changed(self, name: str, target: Path, size: int) -> str | None:
        """None when ``target`` holds the bytes recorded for member ``name`` (of ``size``
        bytes); else why it is to be extracted again: ``"missing"``, ``"unrecorded"`` or
        ``"altered"`` (its SHA-256 is not the one recorded when it was written)."""
        try:
            st = os.stat(target)
        except OSError:
            return "missing"
        entry = self.entries.get(name)
        if entry is None or st.st_size != size:
            return "unrecorded" if entry is None else "altered"
        stamp = file_stamp(st)
        if all(entry.get(key) == value for key, value in stamp.items()):
            return None
        try:
            with open_regular(target, "the cached member") as handle:
                digest = sha256_of(handle)
        except (UsageError, OSError):
            return "missing"
        if digest != entry["sha256"]:
            return "altered"
        self.entries[name] = {"sha256": digest, **stamp}  # the same bytes, a new stamp
        self._dirty = True
        return None

    def add(self, name: str, target: Path, digest: str) -> None:
        """Record member ``name``, just written to ``target`` with SHA-256 ``digest``."""
        try:
            stamp = file_stamp(os.stat(target))
        except OSError:
            return  # gone already (a concurrent prune): it is extracted again next time
        self.entries[name] = {"sha256": digest, **stamp}
        self._dirty = True

    def save(self) -> None:
        """Write the record if anything changed, else mark it used now (its mtime is the
        folder's last use, for ``wheel_cache.prune_cache``)."""
        if self._dirty:
            save_record(self.path, {"members": self.entries})
            self._dirty = False
        else:
            touch(self.path)
