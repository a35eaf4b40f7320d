"""What each member extracted from a wheel was when it was written: its SHA-256 and file stamp.

The cache folder of a wheel (``metallibs/<wheel stem>-<sha256[:32]>/``) is reused on every later
run, and it is a folder anyone with access to the cache can write to. Trusting a cached file
because its size matched let a member edited in place (``gemm`` renamed ``EVIL``) be reported
and verified as the wheel's. So extraction records, in ``.members.json`` beside the members,
the SHA-256 of the bytes it wrote (hashed while copying) and the file's stamp (size, mtime,
ctime, inode, device: ``wheel_cache.file_stamp``). On reuse:

* the stamp unchanged: the file is the one written (no process can set a ctime back, so an
  edit in place or a replacement always changes the stamp). This costs one ``stat`` (3-9 µs),
  where hashing torch's 386 MB dylib costs 0.33 s of CPU on every run;
* the stamp changed (a copied or restored cache, a ``touch``): the file is hashed again; the
  same SHA-256 keeps it (and the new stamp is recorded), another one means it was altered;
* no record for it (a cache written before records, a deleted record): extracted again.

A member that fails is extracted again from the wheel, with a notice naming it.
"""

from __future__ import annotations

import os
from pathlib import Path

from builder.errors import UsageError
from builder.files.reading import open_regular, read_json
from builder.inputs.wheel_cache import file_stamp, is_sha256, save_record, sha256_of, touch

__all__ = ["RECORD_NAME", "MemberRecords"]

RECORD_NAME = ".members.json"
"""The record's file name in a wheel's folder (no wheel member is extracted under a name that
does not end as a library: ``wheel_index.holds_metallibs``)."""


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
        folder's last use, for ``cache_prune``)."""
        if self._dirty:
            save_record(self.path, {"members": self.entries})
            self._dirty = False
        else:
            touch(self.path)
