"""Count a wheel's central-directory entries before ``zipfile`` parses them.

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

import os
import struct
from typing import BinaryIO

from builder.files.bounds import MAX_MEMBERS
from builder.inputs.wheel_cache import CHUNK, UnsafeWheelError

__all__ = ["check_entries", "directory_entries"]

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
