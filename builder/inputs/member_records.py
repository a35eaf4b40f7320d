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

Keep the wheel cache under ``METALLIB_BUILDER_CACHE_MAX``: the least recently used go first.

The cache grew without bound (4.3 GB in one trial of the issue's): every wheel named or
downloaded stays, with its extracted members. After each extraction (``wheel_extract``), the
entries are summed and, past the bound, removed oldest use first until the cache fits:

* a wheel's folder of extracted members (``metallibs/<wheel>-<sha256[:32]>/``), last used when
  its member record was last read (``member_records``: each reuse marks it);
* a downloaded wheel (``wheels/<file>.whl``) with its digest record, last used when that record
  was last read (``wheel_cache.wheel_digest`` marks it).

The entries of the run itself are never removed, even when they alone pass the bound (the run
needs them); an entry removed is fetched or extracted again when next needed. Records of a few
hundred bytes, the choice records in ``wheels/.resolved`` and temporary files (removed by
``wheel_cache.sweep_stale``) are not counted. Other folders under the cache root are not ours.
"""

from __future__ import annotations

import os
import shutil
from collections.abc import Callable, Iterable
from dataclasses import dataclass
from pathlib import Path

from builder.errors import UsageError
from builder.files.bounds import CACHE_MAX
from builder.files.reading import open_regular, read_json
from builder.inputs.wheel_cache import (
    file_stamp,
    is_sha256,
    record_path,
    save_record,
    sha256_of,
    touch,
)

__all__ = ["RECORD_NAME", "CacheEntry", "MemberRecords", "cache_entries", "prune_cache"]


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
        folder's last use, for the cache's pruning below)."""
        if self._dirty:
            save_record(self.path, {"members": self.entries})
            self._dirty = False
        else:
            touch(self.path)


_TEMP = (".extract-", ".download-", ".record-")


@dataclass(frozen=True)
class CacheEntry:
    """One removable part of the cache: its path, bytes, and when it was last used."""

    path: Path
    size: int
    used: float
    """Seconds since the epoch (a record's mtime)."""
    record: Path | None = None
    """A wheel's digest record, removed with it."""


def cache_entries(cache: Path) -> list[CacheEntry]:
    """Every wheel folder and downloaded wheel in ``cache``, with its size and last use."""
    entries: list[CacheEntry] = []
    for folder in _listing(cache / "metallibs"):
        if folder.name.startswith(_TEMP) or not folder.is_dir() or folder.is_symlink():
            continue
        size, newest = 0, 0.0
        for here, _, files in os.walk(folder):
            for name in files:
                try:
                    st = os.lstat(os.path.join(here, name))
                except OSError:
                    continue
                size += st.st_size
                newest = max(newest, st.st_mtime)
        used = _mtime(folder / RECORD_NAME)
        entries.append(CacheEntry(folder, size, newest if used is None else used))
    for wheel in _listing(cache / "wheels"):
        if wheel.suffix != ".whl" or wheel.name.startswith(_TEMP):
            continue
        try:
            st = os.lstat(wheel)
        except OSError:
            continue
        record = record_path(cache, wheel)
        used = _mtime(record)
        entries.append(CacheEntry(wheel, st.st_size, st.st_mtime if used is None else used, record))
    return entries


def prune_cache(cache: Path, keep: Iterable[Path], notice: Callable[[str], None]) -> list[Path]:
    """Remove least recently used entries of ``cache`` (never those at ``keep``) until it holds
    at most ``METALLIB_BUILDER_CACHE_MAX`` bytes; tell ``notice`` what went. Returns it."""
    limit = CACHE_MAX.value()
    entries = cache_entries(cache)
    total = sum(e.size for e in entries)
    if total <= limit:
        return []
    kept = {os.path.abspath(p) for p in keep}
    removed: list[Path] = []
    freed = 0
    for entry in sorted(entries, key=lambda e: e.used):
        if total - freed <= limit:
            break
        if os.path.abspath(entry.path) in kept or not _remove(entry):
            continue
        freed += entry.size
        removed.append(entry.path)
    if removed:
        notice(
            f"removed the {len(removed)} least recently used cache entries ({freed:,} bytes) "
            f"from {cache} to keep it under {limit:,} bytes (METALLIB_BUILDER_CACHE_MAX)"
        )
    return removed


def _listing(folder: Path) -> list[Path]:
    try:
        return sorted(folder.iterdir())
    except OSError:
        return []


def _mtime(path: Path) -> float | None:
    try:
        return os.stat(path).st_mtime
    except OSError:
        return None


def _remove(entry: CacheEntry) -> bool:
    """Delete ``entry`` (a folder whole, a wheel with its digest record); False if it could
    not be (never fatal: the bound is kept on the next run)."""
    try:
        if entry.path.is_dir() and not entry.path.is_symlink():
            shutil.rmtree(entry.path)
        else:
            entry.path.unlink()
        if entry.record is not None:
            entry.record.unlink(missing_ok=True)
    except OSError:
        return False
    return True
