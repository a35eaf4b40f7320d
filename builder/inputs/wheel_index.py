"""Which wheel pip takes, and a look into it on the package index before downloading it: its zip
directory, read with HTTP range requests.

``PACKAGE==VERSION`` downloads a whole wheel (torch's is 127 MB). Whether the wheel holds
anything this tool reads (a ``.metallib``, or a binary that may hold one) is written in its zip
directory at the end of the file; an index that answers ``Range`` requests (the Python package
index does: ``206 Partial Content``) gives it for a few hundred kilobytes. When the wheel holds
none, the target fails without the download. Anything unexpected on the way (another index, a
server that ignores ranges, no compatible file found) returns None and the caller downloads the
wheel with pip as before: this only ever saves a download, it never decides which wheel is used.

Which file pip would pick is decided as pip decides it: the platform and Python tags that
``pip download --platform P --python-version 3.12`` accepts (pip's own ``packaging``), in pip's
order of preference.

Count a wheel's central-directory entries before ``zipfile`` parses them.

``zipfile.ZipFile`` reads the whole central directory and makes one ``ZipInfo`` per entry
(about 500 bytes each) before any other check can run: a wheel of 3 million empty entries took
1.46 GB and 107 s. So every wheel the tool opens goes through :func:`check_entries` first, which
finds the directory as ``zipfile`` does (the end-of-central-directory record, or its ZIP64 form,
at the end of the file) and refuses a wheel with more entries than ``METALLIB_BUILDER_MAX_MEMBERS``:
first by the count the record declares, then by walking the directory's fixed-size record headers
in chunks (a record may declare fewer entries than the directory holds; ``zipfile`` reads them
all). The walk stops at the bound, so a refusal costs at most the bound's worth of headers. A
directory this walk cannot follow is left for ``zipfile`` to refuse in its own words.
"""

from __future__ import annotations

import io
import json
import os
import re
import struct
import subprocess
import sys
import zipfile
from contextlib import suppress
from pathlib import Path
from typing import Any, BinaryIO

from builder.errors import UsageError
from builder.files.bounds import MAX_MEMBERS
from builder.inputs.wheel_cache import CHUNK, UnsafeWheelError

__all__ = [
    "RangeFile",
    "cached_wheel",
    "canonical_name",
    "check_entries",
    "check_remote",
    "compatible",
    "directory_entries",
    "holds_metallibs",
    "remember_choice",
    "remote_members",
]


_TIMEOUT = 30
_JSON = "application/vnd.pypi.simple.v1+json"


def _supported(platform: str) -> list[Any]:
    """The tags ``pip download --platform PLATFORM --python-version 3.12`` accepts, best first."""
    from pip._vendor.packaging import tags

    mac = re.fullmatch(r"macosx_(\d+)_(\d+)_(\w+)", platform)
    platforms = list(tags.mac_platforms((int(mac[1]), int(mac[2])), mac[3])) if mac else [platform]
    return list(tags.cpython_tags((3, 12), platforms=platforms)) + list(
        tags.compatible_tags((3, 12), "cp312", platforms=platforms)
    )


def compatible(filename: str, name: str, version: str, platform: str) -> int | None:
    """How much pip prefers the wheel ``filename`` for ``name==version`` on ``platform`` (lower
    is better), or None when pip would not take it."""
    from pip._vendor.packaging.utils import canonicalize_name, parse_wheel_filename

    try:
        wheel_name, wheel_version, _, wheel_tags = parse_wheel_filename(filename)
    except Exception:  # noqa: BLE001 - pip's InvalidWheelFilename and version errors alike
        return None
    if canonicalize_name(wheel_name) != canonicalize_name(name) or str(wheel_version) != version:
        return None
    ranks = [i for i, tag in enumerate(_supported(platform)) if tag in wheel_tags]
    return min(ranks) if ranks else None


class RangeFile(io.RawIOBase):
    """A remote file read with HTTP ``Range`` requests, for ``zipfile`` (which reads only the end
    of a zip and its directory). ``ValueError`` when the server does not answer with ranges."""

    def __init__(self, url: str) -> None:
        self.url, self.position, self.fetched = url, 0, 0
        _, total = self._get(0, 0)
        self.size = total

    def _get(self, start: int, end: int) -> tuple[bytes, int]:
        import urllib.request  # only on the download path: it costs start-up time elsewhere

        request = urllib.request.Request(self.url, headers={"Range": f"bytes={start}-{end}"})
        with urllib.request.urlopen(request, timeout=_TIMEOUT) as response:
            if response.status != 206:
                raise ValueError(f"no range support (HTTP {response.status})")
            found = re.fullmatch(
                r"bytes (\d+)-(\d+)/(\d+)", response.headers.get("Content-Range", "")
            )
            body = response.read(end - start + 1)
        if found is None or int(found[1]) != start:
            raise ValueError("unexpected Content-Range")
        self.fetched += len(body)
        return body, int(found[3])

    def readable(self) -> bool:
        return True

    def seekable(self) -> bool:
        return True

    def tell(self) -> int:
        return self.position

    def seek(self, offset: int, whence: int = 0) -> int:
        base = {0: 0, 1: self.position, 2: self.size}[whence]
        self.position = max(0, base + offset)
        return self.position

    def read(self, size: int = -1) -> bytes:
        end = self.size if size < 0 else min(self.size, self.position + size)
        if end <= self.position:
            return b""
        body, _ = self._get(self.position, end - 1)
        self.position += len(body)
        return body


def _index_url() -> str:
    """pip's index (``PIP_INDEX_URL``, else its configured ``index-url``, else the default)."""
    if os.environ.get("PIP_INDEX_URL"):
        return os.environ["PIP_INDEX_URL"]
    done = subprocess.run(
        [sys.executable, "-m", "pip", "config", "list"], capture_output=True, text=True, check=False
    )
    found = re.search(r"^[\w:.]*\.?index-url='([^']+)'$", done.stdout, re.MULTILINE)
    return found[1] if found else "https://pypi.org/simple"


def canonical_name(name: str, separator: str = "-") -> str:
    """A project's name as the package index normalizes it (PEP 503, by pip's ``packaging``:
    runs of ``-_.`` become one ``-``, lower case); ``separator="_"`` as wheel file names spell
    it."""
    from pip._vendor.packaging.utils import canonicalize_name

    return canonicalize_name(name).replace("-", separator)


def _files(index: str, name: str) -> list[tuple[str, str]]:
    """(file name, absolute URL) of each file the simple index lists for ``name``."""
    import urllib.parse
    import urllib.request

    page = urllib.parse.urljoin(index.rstrip("/") + "/", canonical_name(name) + "/")
    request = urllib.request.Request(page, headers={"Accept": f"{_JSON}, text/html;q=0.1"})
    with urllib.request.urlopen(request, timeout=_TIMEOUT) as response:
        kind, body = response.headers.get("Content-Type", ""), response.read(64 << 20)
    if kind.startswith(_JSON):
        listed = json.loads(body)["files"]
        return [(f["filename"], urllib.parse.urljoin(page, f["url"])) for f in listed]
    links = re.findall(rb'href="([^"]+)"', body)
    out = []
    for link in links:
        url = urllib.parse.urljoin(page, link.decode().replace("&amp;", "&"))
        out.append((urllib.parse.unquote(url.split("#")[0].rsplit("/", 1)[-1]), url))
    return out


def remote_members(name: str, version: str, platform: str) -> tuple[str, list[str], int] | None:
    """(wheel file name, member names, bytes fetched) of the wheel pip would download, read
    from its zip directory on the index; None when that cannot be done (download it then)."""
    if not platform.startswith("macosx_"):
        return None
    try:
        index = _index_url()
        if not index.startswith(("https://", "http://")):
            return None
        ranked = [
            (compatible(f, name, version, platform), f, url) for f, url in _files(index, name)
        ]
        usable = sorted((rank, f, url) for rank, f, url in ranked if rank is not None)
        if not usable:
            return None
        _, filename, url = usable[0]
        remote = RangeFile(url.split("#")[0])
        with zipfile.ZipFile(remote) as archive:
            names = archive.namelist()
        return filename, names, remote.fetched
    except (OSError, ValueError, KeyError, TypeError, zipfile.BadZipFile, EOFError):
        return None


def holds_metallibs(member: str) -> bool:
    """Whether a wheel member is read for metallibs: a ``.metallib``, or a binary that may hold
    some (``.dylib``, ``.so`` or ``.so.N``, ``.bundle``: macOS wheels keep their Mach-O
    libraries under these names). Binaries are searched after extraction
    (``builder.metallib.embedded``); one that holds none is left out of the target."""
    name = member.rsplit("/", 1)[-1]
    return name.endswith((".metallib", ".dylib", ".so", ".bundle")) or ".so." in name


RESOLVED = ".resolved"
"""Folder of the wheel cache recording which file pip chose for a (name, version, platform)."""


def _record(folder: Path, name: str, version: str, platform: str) -> Path:
    canonical = canonical_name(name, "_")
    return folder / RESOLVED / f"{canonical}-{version}-{platform}"


def remember_choice(folder: Path, name: str, version: str, platform: str, wheel: Path) -> None:
    """Record that pip chose ``wheel`` for ``platform`` (best effort: a cache that cannot be
    written costs a download, nothing else)."""
    from builder.errors import OutputError
    from builder.files.atomic import make_dirs, write_atomic

    record = _record(folder, name, version, platform)
    with suppress(OutputError):
        make_dirs(record.parent)
        write_atomic(record, wheel.name)


def cached_wheel(folder: Path, name: str, version: str, platform: str) -> Path | None:
    """The cached wheel pip chose for ``platform`` before (its record in ``.resolved/``), or
    one built for exactly ``platform``; None: ask the index. A wheel cached for another
    platform is not taken just because it would run there: the index may hold a better one
    (mlx-metal 0.32.0 has a macosx_26_0 wheel beside its macosx_14_0 one, with other kernels),
    and pip, not the cache, knows which it takes."""
    from builder.files.reading import UnreadableFile, read_text

    record = _record(folder, name, version, platform)
    chosen = None
    if record.is_file():
        try:
            chosen = folder / read_text(record, "the wheel cache's record").strip()
        except UnreadableFile:
            chosen = None
    if chosen is not None and chosen.parent == folder and chosen.is_file():
        return chosen
    prefix = f"{canonical_name(name, '_')}-{version}-"
    for wheel in sorted(folder.glob("*.whl")):
        exact = wheel.name.removesuffix(".whl").split("-")[-1].split(".")
        if (
            wheel.name.lower().startswith(prefix)
            and platform in exact
            and compatible(wheel.name, name, version, platform) is not None
        ):
            return wheel
    return None


def check_remote(name: str, version: str, platform: str) -> None:
    """UsageError, before any download, when the index's zip directory of the wheel shows no
    member that could hold a metallib (``builder.inputs.wheel_index``; silent when the index
    does not allow the look)."""
    found = remote_members(name, version, platform)
    if found is None:
        return
    filename, members, fetched = found
    if not any(holds_metallibs(m) for m in members):
        raise UsageError(
            f"{name}=={version}: its wheel {filename} holds no .metallib and no binary that "
            f"could hold one ({len(members)} files; read from its zip directory on the index, "
            f"{fetched:,} bytes, without downloading the wheel)"
        )


_END = struct.Struct("<4s4H2LH")  # end of central directory: signature ... comment length
_END_SIGNATURE = b"PK\x05\x06"
_LOCATOR = struct.Struct("<4sLQL")  # ZIP64 end-of-central-directory locator
_LOCATOR_SIGNATURE = b"PK\x06\x07"
_END64 = struct.Struct("<4sQ2H2L4Q")  # ZIP64 end of central directory
_END64_SIGNATURE = b"PK\x06\x06"
_ENTRY = struct.Struct("<4s4B4HL2L5H2L")  # one central-directory record's fixed part
_ENTRY_SIGNATURE = b"PK\x01\x02"
_MAX_COMMENT = 0xFFFF


def directory_entries(handle: BinaryIO) -> tuple[int, int, int] | None:
    """(entries declared, where the directory starts, its size in bytes) of the open zip
    ``handle``, found as ``zipfile`` finds them; None when there is no end record (``zipfile``
    then says the file is not a zip)."""
    size = os.fstat(handle.fileno()).st_size
    tail_start = max(0, size - _END.size - _MAX_COMMENT)
    handle.seek(tail_start)
    tail = handle.read()
    if tail.endswith(b"\0\0") and tail[-_END.size : -_END.size + 4] == _END_SIGNATURE:
        at = len(tail) - _END.size  # no comment: the record is the last 22 bytes
    else:
        at = tail.rfind(_END_SIGNATURE)
        if at < 0 or at + _END.size > len(tail):
            return None
    end = _END.unpack_from(tail, at)
    entries, directory_size = end[4], end[5]
    location = tail_start + at
    zip64 = _zip64(handle, location)
    if zip64 is not None:
        entries, directory_size = zip64
        location -= _END64.size + _LOCATOR.size
    return entries, location - directory_size, directory_size


def _zip64(handle: BinaryIO, location: int) -> tuple[int, int] | None:
    """(entries, directory size) of the ZIP64 record just before the end record at
    ``location``, when there is one."""
    start = location - _LOCATOR.size - _END64.size
    if start < 0:
        return None
    handle.seek(start)
    data = handle.read(_END64.size + _LOCATOR.size)
    if len(data) != _END64.size + _LOCATOR.size:
        return None
    if _LOCATOR.unpack_from(data, _END64.size)[0] != _LOCATOR_SIGNATURE:
        return None
    record = _END64.unpack_from(data)
    if record[0] != _END64_SIGNATURE:
        return None
    return record[7], record[8]


def check_entries(handle: BinaryIO, wheel: object) -> None:
    """UnsafeWheelError (exit 2, naming the bound and its variable) when the zip open as
    ``handle`` lists more than ``METALLIB_BUILDER_MAX_MEMBERS`` entries; the handle's position
    is left anywhere."""
    limit = MAX_MEMBERS.value()
    found = directory_entries(handle)
    if found is None:
        return
    declared, start, size = found

    def refuse(declares: str = "") -> UnsafeWheelError:
        return UnsafeWheelError(f"{wheel}: {declares}{MAX_MEMBERS.exceeded(limit)}")

    if declared > limit:
        raise refuse(f"its end record declares {declared:,} entries: ")
    if start < 0:
        return
    handle.seek(start)
    counted, left, skip, buffer = 0, size, 0, b""
    while left > 0:
        chunk = handle.read(min(CHUNK, left))
        if not chunk:
            return  # the file ends inside its directory: zipfile says so
        left -= len(chunk)
        if skip >= len(chunk):  # still inside the previous record's name, extra or comment
            skip -= len(chunk)
            continue
        buffer, skip = buffer + chunk[skip:], 0
        at = 0
        while at + _ENTRY.size <= len(buffer):
            record = _ENTRY.unpack_from(buffer, at)
            if record[0] != _ENTRY_SIGNATURE:
                return  # not a directory this walk can follow: zipfile says what is wrong
            counted += 1
            if counted > limit:
                raise refuse()
            at += _ENTRY.size + record[12] + record[13] + record[14]
        skip = max(0, at - len(buffer))
        buffer = buffer[at:]
