"""The wheel cache: its folder and errors, the records of what it holds, and its bounds.

Layout under ``$METALLIB_BUILDER_CACHE`` (default ``$XDG_CACHE_HOME/metallib-builder``)::

    wheels/<file>.whl                        wheels downloaded by ``pip download``
    metallibs/<wheel stem>-<sha256[:32]>/    extracted metallibs, keyed by the wheel's content
        .members.json                        each member's SHA-256 and file stamp when written
    digests/<hash of the wheel's path>.json  a wheel's SHA-256 with its size, times, inode

A wheel's folder of members is reused on every later run, and anyone with access to the cache can
write to it: trusting a cached file because its size matched let a member edited in place
(``gemm`` renamed ``EVIL``) be reported and verified as the wheel's. So extraction records the
SHA-256 of the bytes it wrote (hashed while copying) and the file's stamp (``file_stamp``). On
reuse (``MemberRecords.changed``): the stamp unchanged, the file is the one written (no process
can set a ctime back), for one ``stat`` where hashing torch's 386 MB dylib costs 0.33 s of CPU;
the stamp changed (a copied or restored cache, a ``touch``), the file is hashed again, and the
same SHA-256 keeps it; no record, or another SHA-256, and it is extracted again from the wheel,
with a notice naming it.

A record's mtime is when its entry was last used. The cache grew without bound (4.3 GB in one
trial of the issue's), so after each extraction ``prune_cache`` removes the least recently used
entries (a wheel's folder of members; a downloaded wheel with its digest record) until the cache
is under ``METALLIB_BUILDER_CACHE_MAX``. The entries of the run itself are never removed, even
when they alone pass the bound; an entry removed is fetched or extracted again when next needed.
Records, the choice records in ``wheels/.resolved`` and temporary files are not counted, and
other folders under the cache root are not ours.

Temporary files (``.extract-*``, ``.download-*``) are removed on every failure, Ctrl-C included;
only a killed process leaves them behind. The first cache use in each process deletes those
older than ``STALE_AFTER_S`` (an hour: far longer than any extraction or download in flight, so
a concurrent run is never disturbed).
"""

from __future__ import annotations

import errno
import hashlib
import json
import os
import re
import shutil
import stat
import time
from collections.abc import Callable, Iterable
from contextlib import suppress
from dataclasses import dataclass
from itertools import chain, islice
from pathlib import Path
from typing import IO

from builder.errors import OutputError, UsageError
from builder.files.atomic import make_dirs, write_atomic
from builder.files.bounds import CACHE_MAX
from builder.files.reading import read_json

__all__ = [
    "RECORD_NAME",
    "STALE_AFTER_S",
    "CacheEntry",
    "CacheWriteError",
    "CorruptWheelError",
    "DownloadError",
    "UnsafeWheelError",
    "UnusableWheelError",
    "WheelError",
    "cache_dir",
    "cache_entries",
    "extraction_root",
    "file_stamp",
    "is_sha256",
    "prune_cache",
    "save_record",
    "sha256_of",
    "sweep_stale",
    "touch",
    "wheel_digest",
]


STALE_AFTER_S = 3600.0
CHUNK = 1 << 20
_TEMP_PREFIXES = (".extract-", ".download-", ".record-")  # .record-: records of earlier versions


class WheelError(UsageError):
    """A wheel or the wheel cache cannot be used (exit 2)."""


class DownloadError(WheelError):
    """The package index could not be reached or had no such wheel."""


class UnsafeWheelError(WheelError):
    """A member name would be written outside the wheel's extraction folder."""


class CorruptWheelError(WheelError):
    """The wheel is not a readable zip, or a member fails its CRC or size check."""


class UnusableWheelError(WheelError):
    """The wheel is intact, but a member named ``*.metallib`` is not a metallib."""


class CacheWriteError(WheelError):
    """The cache folder cannot take the files (no space, read-only, no permission)."""


def cache_dir() -> Path:
    """The cache root; created on first use."""
    root = os.environ.get("METALLIB_BUILDER_CACHE")
    if root:
        path = Path(root)
    else:
        base = os.environ.get("XDG_CACHE_HOME") or str(Path.home() / ".cache")
        path = Path(base) / "metallib-builder"
    make_dir(path)
    return path


def write_error(folder: Path, exc: OSError, doing: str) -> CacheWriteError:
    """One line for any failed write into the cache (ENOSPC, EROFS, EACCES...)."""
    code = errno.errorcode.get(exc.errno or 0, "")
    full = exc.errno in (errno.ENOSPC, errno.EDQUOT)
    return CacheWriteError(
        f"cannot write to the cache folder {folder} while {doing}: {exc.strerror or exc}"
        + (f" ({code})" if code else "")
        + ("; free some space or" if full else ";")
        + " point METALLIB_BUILDER_CACHE at another folder"
    )


def make_dir(path: Path) -> None:
    """``mkdir -p`` whose failure is a ``CacheWriteError``."""
    try:
        path.mkdir(parents=True, exist_ok=True)
    except OSError as exc:
        raise write_error(path, exc, "creating it") from None


_swept: set[str] = set()


def prepare_cache() -> Path:
    """The cache root, swept of a killed run's temporary files (once per process and root)."""
    cache = cache_dir()
    if str(cache) not in _swept:
        _swept.add(str(cache))
        sweep_stale(cache)
    return cache


def sweep_stale(cache: Path, max_age_s: float = STALE_AFTER_S) -> list[Path]:
    """Delete temporary files and folders under ``cache`` untouched for ``max_age_s``.

    Age is the newest mtime of the entry (and of everything in a download folder, which pip keeps
    writing to), so anything a running process is still writing is kept. Returns what went.
    """
    cutoff = time.time() - max_age_s
    removed = []
    # Only the tool's own folders (the cache root may hold other things too); in wheels/ and
    # digests/ only their own entries.
    tops = [islice(os.walk(cache / name), 1) for name in ("wheels", "digests")]
    for folder, dirs, files in chain(os.walk(cache / "metallibs"), *tops):
        for name in [*dirs, *files]:
            if not name.startswith(_TEMP_PREFIXES):
                continue
            path = Path(folder, name)
            try:
                info = path.lstat()
                inner = [Path(d, f).lstat().st_mtime for d, _, fs in os.walk(path) for f in fs]
                if max([info.st_mtime, *inner]) >= cutoff:
                    continue
                _delete(path)
            except OSError:
                continue  # gone already, or not ours to delete: never fatal
            removed.append(path)
        dirs[:] = [d for d in dirs if not d.startswith(_TEMP_PREFIXES)]
    return removed


def record_path(cache: Path, wheel: Path) -> Path:
    """Where the digest record of the wheel at ``wheel`` lives."""
    key = hashlib.sha256(os.fsencode(os.path.abspath(wheel))).hexdigest()[:32]
    return cache / "digests" / f"{key}.json"


def wheel_digest(cache: Path, wheel: Path, handle: IO[bytes]) -> str:
    """SHA-256 of the open ``wheel``, remembered in a record in the cache.

    Hashing costs about 0.11 s per 150 MB here (SHA-NI, warm page cache; a few times that without
    SHA instructions or from a cold disk), so the digest is reused while the file's size, mtime,
    ctime, inode and device are all unchanged; rewriting a file in place changes its ctime.
    """
    stamp = {"path": os.path.abspath(wheel), **file_stamp(os.fstat(handle.fileno()))}
    record = record_path(cache, wheel)
    try:
        saved = read_json(record, "the digest record")
    except UsageError:  # none yet, or damaged: hash the wheel again
        saved = None
    if (
        isinstance(saved, dict)
        and all(saved.get(k) == v for k, v in stamp.items())
        and is_sha256(saved.get("sha256"))
    ):
        touch(record)  # the wheel's last use, for the cache's size bound (prune_cache)
        return str(saved["sha256"])
    try:
        handle.seek(0)
        digest = sha256_of(handle)
    except OSError as exc:
        raise CorruptWheelError(f"{wheel}: cannot read the wheel: {exc.strerror or exc}") from None
    save_record(record, {**stamp, "sha256": digest})
    return digest


def file_stamp(st: os.stat_result) -> dict[str, int]:
    """What changes whenever a file's bytes do: its size, mtime, ctime, inode and device. No
    process can set a ctime (the kernel sets it to the present on every change, ``utime``
    included), so a file edited in place or replaced has a new stamp."""
    return {
        "size": st.st_size,
        "mtime_ns": st.st_mtime_ns,
        "ctime_ns": st.st_ctime_ns,
        "inode": st.st_ino,
        "device": st.st_dev,
    }


def is_sha256(value: object) -> bool:
    """Whether ``value`` is a SHA-256 in lower-case hex, as records hold it."""
    return isinstance(value, str) and re.fullmatch(r"[0-9a-f]{64}", value) is not None


def sha256_of(handle: IO[bytes]) -> str:
    """SHA-256 of what is left to read in ``handle`` (read in ``CHUNK``s; OSError passes)."""
    sha = hashlib.sha256()
    while block := handle.read(CHUNK):
        sha.update(block)
    return sha.hexdigest()


def touch(path: Path) -> None:
    """Set ``path``'s mtime to now: a record's mtime is when its entry was last used. Best
    effort (a read-only cache is still usable)."""
    with suppress(OSError):
        os.utime(path)


def save_record(record: Path, data: dict[str, object]) -> None:
    """Write a cache record (JSON) atomically (``files.atomic.write_atomic``); best effort: the
    record only saves a re-hash, and a cache that cannot take it fails at extraction."""
    with suppress(OutputError):
        make_dirs(record.parent)
        write_atomic(record, json.dumps(data))


RECORD_NAME = ".members.json"
"""The file name of a wheel folder's member record (``member_records.MemberRecords``; no wheel
member is extracted under a name that does not end as a library: ``holds_metallibs``)."""


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
        if folder.name.startswith(_TEMP_PREFIXES) or not folder.is_dir() or folder.is_symlink():
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
        if wheel.suffix != ".whl" or wheel.name.startswith(_TEMP_PREFIXES):
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
        _delete(entry.path)
        if entry.record is not None:
            entry.record.unlink(missing_ok=True)
    except OSError:
        return False
    return True


def _delete(path: Path) -> None:
    """Remove a file, or a folder whole (never through a symbolic link); OSError passes."""
    if stat.S_ISDIR(path.lstat().st_mode):
        shutil.rmtree(path)
    else:
        path.unlink()


def extraction_root(paths: list[Path]) -> Path:
    """The folder a wheel's extracted members are named relative to: the wheel's extraction
    folder, ``CACHE/metallibs/<wheel stem>-<sha256 prefix>`` (``builder.inputs.wheel_cache``),
    found by the cache's own path, so that a member's folder called ``metallibs`` is only a
    folder (``a/metallibs/b/x.metallib``)."""
    extracted = cache_dir() / "metallibs"
    first = paths[0]
    for parent in first.parents:
        if parent.parent == extracted:
            return parent
    try:  # the same folder reached by another spelling (a relative or linked cache path)
        for parent in first.parents:
            if parent.parent.samefile(extracted):
                return parent
    except OSError:
        pass
    return first.parent
