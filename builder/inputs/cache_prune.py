"""Keep the wheel cache under ``METALLIB_BUILDER_CACHE_MAX``: the least recently used go first.

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

from builder.files.bounds import CACHE_MAX
from builder.inputs.member_records import RECORD_NAME
from builder.inputs.wheel_cache import record_path

__all__ = ["CacheEntry", "cache_entries", "prune_cache"]

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
