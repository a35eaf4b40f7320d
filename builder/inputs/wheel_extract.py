"""Extracting the members of a wheel that may hold metallibs into the cache, checked as the
untrusted input a wheel is.

Member names are checked before anything is written (relative, normalised, no ``..``, landing
inside the wheel's folder, no member both a file and another's folder), nothing is extracted
unless the declared sizes fit the cache's free space, no member is written past its declared
size, the bytes actually written are counted against that free space and
``METALLIB_BUILDER_MAX_EXTRACT`` (``builder.files.bounds``: a deflate bomb that declares its true
size stops there), and each CRC is checked while copying. Each member must then open as a
metallib. A failed extraction (a member that is not a metallib included) removes what it wrote
and the wheel's digest record. What each member was when written is recorded beside the members
(``MemberRecords``; why: ``builder.inputs.wheel_cache``). Downloading is ``builder.inputs.wheels``.
"""

from __future__ import annotations

import hashlib
import os
import shutil
import sys
import tempfile
import zipfile
import zlib
from collections.abc import Callable
from contextlib import suppress
from pathlib import Path, PurePosixPath, PureWindowsPath

from builder.files.bounds import MAX_EXTRACT
from builder.files.reading import UnreadableFile, open_regular
from builder.files.temporaries import remove_temporary
from builder.inputs.member_records import MemberRecords
from builder.inputs.wheel_cache import (
    CHUNK,
    CacheWriteError,
    CorruptWheelError,
    UnsafeWheelError,
    UnusableWheelError,
    make_dir,
    prepare_cache,
    prune_cache,
    record_path,
    wheel_digest,
    write_error,
)
from builder.inputs.wheel_index import check_entries, holds_metallibs

__all__ = ["extract_metallibs"]

# What reading a damaged archive can raise: zipfile's own error, a short read, a broken deflate
# stream, an unsupported method or encryption, undecodable names, or the disk itself.
_READ_ERRORS = (
    zipfile.BadZipFile,
    EOFError,
    zlib.error,
    OSError,
    ValueError,
    NotImplementedError,
    RuntimeError,
)


def extract_metallibs(wheel: Path, notice: Callable[[str], None] | None = None) -> list[Path]:
    """Extract every member of ``wheel`` that may hold metallibs (``holds_metallibs``: each
    ``*.metallib`` and each binary) into the cache; return their paths in wheel order.

    The folder is keyed by the wheel's SHA-256, so two different wheels with the same file name
    never share extracted files. A member already in the cache is reused only when it holds the
    bytes recorded when it was written (``MemberRecords``); one that was altered is extracted
    again, and ``notice`` (default: a line on stderr) is told. Then the cache is kept under
    ``METALLIB_BUILDER_CACHE_MAX`` (``wheel_cache.prune_cache``). ``wheel`` is only read.
    """
    cache = prepare_cache()
    try:
        handle = open_regular(wheel, "the wheel")
    except UnreadableFile as exc:
        raise CorruptWheelError(str(exc)) from None
    with handle:
        # Hash and unzip through one open file: what is hashed is what gets extracted.
        digest = wheel_digest(cache, wheel, handle)
        try:
            check_entries(handle, wheel)  # before zipfile makes an object of every entry
            handle.seek(0)
            archive = zipfile.ZipFile(handle)
        except _READ_ERRORS as exc:
            raise CorruptWheelError(f"{wheel}: not a readable wheel: {exc}") from None
        try:
            with archive:
                targets = _extract_all(cache, wheel, archive, digest, notice or _to_stderr)
        except BaseException:
            remove_temporary(record_path(cache, wheel))  # nothing of an unusable wheel stays
            raise
    prune_cache(cache, keep=[_root(cache, wheel, digest), wheel], notice=notice or _to_stderr)
    return targets


def _to_stderr(message: str) -> None:
    sys.stderr.write(f"note: {message}\n")


def _root(cache: Path, wheel: Path, digest: str) -> Path:
    """The wheel's folder in the cache."""
    return cache / "metallibs" / f"{wheel.stem[:100]}-{digest[:32]}"


def _extract_all(
    cache: Path, wheel: Path, archive: zipfile.ZipFile, digest: str, notice: Callable[[str], None]
) -> list[Path]:
    parent = cache / "metallibs"
    root = _root(cache, wheel, digest)
    members = [i for i in archive.infolist() if holds_metallibs(i.filename) and not i.is_dir()]
    targets = _member_targets(wheel, root, members)  # all checked before anything is written
    records = MemberRecords(root)
    todo = []
    for info, target in zip(members, targets):
        why = records.changed(info.filename, target, info.file_size)
        if why == "altered":
            notice(
                f"{wheel.name}: the cached copy of {info.filename!r} ({target}) is not what was "
                "extracted (its SHA-256 differs from the one recorded then); extracting it again"
            )
        if why is not None:
            todo.append((info, target))
    if not todo:
        records.save()
        return targets
    make_dir(parent)
    allowance = _Allowance(wheel, parent, sum(info.file_size for info, _ in todo))
    written: list[Path] = []
    try:
        for info, target in todo:
            sha256 = _extract_one(wheel, archive, info, target, allowance)
            written.append(target)
            records.add(info.filename, target, sha256)
        for info, target in todo:  # (after the bounds: a bomb is named as one first)
            if info.filename.endswith(".metallib"):  # binaries are searched, not opened whole
                _check_metallib(wheel, info, target)  # the cache keeps usable files only
    except BaseException:
        for path in written:  # a wheel that fails half-way leaves nothing of itself behind
            remove_temporary(path)
        for folder, _, _ in sorted(os.walk(root), reverse=True):  # nor empty folders
            with suppress(OSError):  # not empty: metallibs of an earlier, complete extraction
                os.rmdir(folder)
        raise
    records.save()
    return targets


class _Allowance:
    """Bytes one extraction may still write: the smaller of the cap and the free space of the
    cache's file system before it started, counted on what is actually written (never on what
    members declare). CacheWriteError at once when the members declare more than is free."""

    def __init__(self, wheel: Path, folder: Path, declared: int) -> None:
        self.wheel, self.cap, self.folder = wheel, MAX_EXTRACT.value(), folder
        try:
            self.free = shutil.disk_usage(folder).free
        except OSError as exc:
            raise write_error(folder, exc, "checking its free space") from None
        if declared > self.free:
            raise CacheWriteError(
                f"{wheel}: its metallibs declare {_size(declared)} but the cache folder {folder} "
                f"has only {_size(self.free)} free; free some space or point "
                "METALLIB_BUILDER_CACHE elsewhere"
            )
        self.left = min(self.cap, self.free)

    def spend(self, n: int) -> None:
        self.left -= n
        if self.left >= 0:
            return
        if self.cap <= self.free:
            raise UnsafeWheelError(
                f"{self.wheel}: {MAX_EXTRACT.exceeded(self.cap)} (nothing of it was kept)"
            )
        raise CacheWriteError(
            f"{self.wheel}: its metallibs fill the {_size(self.free)} free in "
            f"the cache folder {self.folder}; free some space or point "
            "METALLIB_BUILDER_CACHE elsewhere"
        )


def _unsafe_reason(name: str) -> str | None:
    """Why a member name cannot be used as a relative path, or None if it can."""
    if "\\" in name:
        return "it contains a backslash"
    if PurePosixPath(name).is_absolute() or PureWindowsPath(name).anchor:
        return "it is an absolute path"
    parts = name.split("/")
    if ".." in parts:
        return "it climbs out with '..'"
    if any(part in ("", ".") for part in parts):
        return "it is not a normalised path (empty or '.' parts)"
    return None


def _member_targets(wheel: Path, root: Path, members: list[zipfile.ZipInfo]) -> list[Path]:
    resolved_root = root.resolve()
    seen: set[str] = set()
    folders: set[str] = set()  # every folder some member name needs
    for info in members:
        parts = info.filename.split("/")[:-1]
        folders.update("/".join(parts[:n]) for n in range(1, len(parts) + 1))
    targets = []
    for info in members:
        name = info.filename
        reason = _unsafe_reason(name)
        target = root.joinpath(*name.split("/"))
        if reason is None and not _inside(target, resolved_root):
            reason = f"it resolves outside the extraction folder {root}"
        if reason is None and name in seen:
            reason = "the wheel holds two members with that name"
        if reason is None and name in folders:
            inner = next(i.filename for i in members if i.filename.startswith(name + "/"))
            reason = (
                f"it is a file, and the member {inner!r} needs a folder of that name; "
                "a wheel cannot hold both"
            )
        if reason is not None:
            raise UnsafeWheelError(f"{wheel}: refusing to extract member {name!r}: {reason}")
        seen.add(name)
        targets.append(target)
    return targets


def _inside(target: Path, resolved_root: Path) -> bool:
    """Whether ``target``, following any symlinks already in the cache, stays in the root."""
    try:
        return target.resolve().is_relative_to(resolved_root)
    except (OSError, RuntimeError):  # a symlink loop
        return False


def _size(n: int) -> str:
    if n < 10**6:
        return f"{n:,} bytes"
    return f"{n / 1e6:,.1f} MB" if n < 10**9 else f"{n / 1e9:,.1f} GB"


def _extract_one(
    wheel: Path,
    archive: zipfile.ZipFile,
    info: zipfile.ZipInfo,
    target: Path,
    allowance: _Allowance,
) -> str:
    """Copy one member to a temp file beside ``target``, then rename; no temp file survives.
    Returns the SHA-256 of the bytes written."""
    folder = target.parent
    doing = f"extracting {info.filename!r} from {wheel.name}"
    tmp: str | None = None
    try:
        try:
            folder.mkdir(parents=True, exist_ok=True)
            fd, tmp = tempfile.mkstemp(dir=folder, prefix=".extract-")
        except OSError as exc:
            raise write_error(folder, exc, doing) from None
        copied = False
        try:
            sha256 = _copy_member(wheel, archive, info, fd, folder, doing, allowance)
            copied = True
        finally:
            try:
                os.close(fd)
            except OSError as exc:
                if copied:  # a close that fails can mean the data never reached the disk
                    raise write_error(folder, exc, doing) from None
        try:
            os.replace(tmp, target)
        except OSError as exc:
            raise write_error(folder, exc, doing) from None
        tmp = None
    finally:
        if tmp is not None:
            remove_temporary(tmp)
    return sha256


def _check_metallib(wheel: Path, info: zipfile.ZipInfo, path: Path) -> None:
    """UnusableWheelError unless the extracted ``path`` opens as a metallib (its header, header
    extension and sections: what every command reads first), naming the member and the byte
    offset where it stops being one."""
    from builder.metallib import MetallibError, MetallibFormatError, open_metallib

    try:
        with open_metallib(path):
            return
    except MetallibFormatError as exc:
        why = f"byte offset {exc.offset}: {exc.message}"
    except MetallibError as exc:
        why = str(exc)
    raise UnusableWheelError(
        f"{wheel}: member {info.filename!r} is not a metallib ({why}); nothing of the wheel "
        "was kept"
    )


def _copy_member(
    wheel: Path,
    archive: zipfile.ZipFile,
    info: zipfile.ZipInfo,
    fd: int,
    folder: Path,
    doing: str,
    allowance: _Allowance,
) -> str:
    """Stream ``info`` into ``fd``, never writing more than it declares or ``allowance`` leaves;
    zipfile checks the CRC when the member's last byte has been read. Returns the SHA-256 of
    what was written (hashed on the way: about 0.1 s for mlx-metal's 130 MB metallib)."""
    sha = hashlib.sha256()

    def corrupt(why: object) -> CorruptWheelError:
        return CorruptWheelError(
            f"{wheel}: member {info.filename!r} (local header at byte {info.header_offset}) "
            f"is corrupt: {why}"
        )

    left = info.file_size
    try:
        src = archive.open(info)
    except _READ_ERRORS as exc:
        raise corrupt(exc) from None
    with src:
        while True:
            try:
                chunk = src.read(min(CHUNK, left + 1))  # one byte more exposes an overlong member
            except _READ_ERRORS as exc:
                raise corrupt(exc) from None
            if not chunk:
                break
            if len(chunk) > left:
                raise corrupt(f"it holds more than the {info.file_size} bytes it declares")
            left -= len(chunk)
            allowance.spend(len(chunk))
            sha.update(chunk)
            view = memoryview(chunk)
            while view:
                try:
                    view = view[os.write(fd, view) :]
                except OSError as exc:
                    raise write_error(folder, exc, doing) from None
    if left:
        raise corrupt(f"it ends {left} bytes short of the {info.file_size} bytes it declares")
    return sha.hexdigest()
