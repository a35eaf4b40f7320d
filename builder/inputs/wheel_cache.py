"""The wheel cache's folder, its errors, stale temp-file cleanup and wheel content digests.

Layout under ``$METALLIB_BUILDER_CACHE`` (default ``$XDG_CACHE_HOME/metallib-builder``)::

    wheels/<file>.whl                        wheels downloaded by ``pip download``
    metallibs/<wheel stem>-<sha256[:32]>/    extracted metallibs, keyed by the wheel's content
        .members.json                        each member's SHA-256 and file stamp when written
    digests/<hash of the wheel's path>.json  a wheel's SHA-256 with its size, times, inode

A record's mtime is when its entry was last used: the least recently used entries go first when
the cache passes ``METALLIB_BUILDER_CACHE_MAX`` (``builder.inputs.member_records``). Extracted
members are checked against their record on every reuse (``builder.inputs.member_records``).

Temporary files (``.extract-*``, ``.download-*``, ``.record-*``) are removed on every failure,
Ctrl-C included; only a killed process leaves them behind. The first cache use in each process
deletes those older than ``STALE_AFTER_S`` (an hour: far longer than any extraction or download
in flight, so a concurrent run is never disturbed).
"""

from __future__ import annotations

import errno
import hashlib
import json
import os
import re
import shutil
import stat
import tempfile
import time
from collections.abc import Iterator
from pathlib import Path
from typing import IO

from builder.errors import UsageError
from builder.files.reading import read_json

__all__ = [
    "STALE_AFTER_S",
    "CacheWriteError",
    "CorruptWheelError",
    "DownloadError",
    "UnsafeWheelError",
    "UnusableWheelError",
    "WheelError",
    "cache_dir",
    "file_stamp",
    "is_sha256",
    "save_record",
    "sha256_of",
    "sweep_stale",
    "touch",
    "wheel_digest",
]

STALE_AFTER_S = 3600.0
CHUNK = 1 << 20
_TEMP_PREFIXES = (".extract-", ".download-", ".record-")


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


def unlink_quietly(path: str | Path) -> None:
    """Remove a file we created; if that fails too, the sweep gets it later."""
    try:
        os.unlink(path)
    except OSError:
        pass


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
    # Only the tool's own folders: the cache root may be a folder holding other things too.
    walks = [os.walk(cache / "metallibs"), _top(cache / "wheels"), _top(cache / "digests")]
    for folder, dirs, files in (entry for walk in walks for entry in walk):
        for name in [*dirs, *files]:
            if not name.startswith(_TEMP_PREFIXES):
                continue
            path = Path(folder, name)
            try:
                info = path.lstat()
                inner = [Path(d, f).lstat().st_mtime for d, _, fs in os.walk(path) for f in fs]
                if max([info.st_mtime, *inner]) >= cutoff:
                    continue
                if stat.S_ISDIR(info.st_mode):
                    shutil.rmtree(path)
                else:
                    path.unlink()
            except OSError:
                continue  # gone already, or not ours to delete: never fatal
            removed.append(path)
        dirs[:] = [d for d in dirs if not d.startswith(_TEMP_PREFIXES)]
    return removed


def _top(folder: Path) -> Iterator[tuple[str, list[str], list[str]]]:
    """``os.walk`` of ``folder`` without descending."""
    for entry in os.walk(folder):
        yield entry
        return


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
        touch(
            record
        )  # the wheel's last use, for the cache's size limit (member_records.prune_cache)
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
    try:
        os.utime(path)
    except OSError:
        pass


def save_record(record: Path, data: dict[str, object]) -> None:
    """Write a cache record (JSON) atomically; best effort: a record only saves work."""
    tmp: str | None = None
    try:
        record.parent.mkdir(parents=True, exist_ok=True)
        fd, tmp = tempfile.mkstemp(dir=record.parent, prefix=".record-")
        with os.fdopen(fd, "w", encoding="utf-8") as out:
            json.dump(data, out)
        os.replace(tmp, record)
        tmp = None
    except OSError:
        pass  # the record only saves a re-hash; a cache that cannot take it fails at extraction
    finally:
        if tmp is not None:
            unlink_quietly(tmp)
