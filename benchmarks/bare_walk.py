"""Baseline for the list and report benchmarks: the least a program can do to list a metallib's
functions with their sizes. Maps the file and walks every function-list entry's tags with
``struct``, keeping NAME, MDSZ and OFFT; no checks, no objects, no output formatting.

    python benchmarks/bare_walk.py FILE
"""

import mmap
import struct
import sys

U16 = struct.Struct("<H")
U32 = struct.Struct("<I")
U64 = struct.Struct("<Q")
OFFT = struct.Struct("<QQQ")

with open(sys.argv[1], "rb") as handle:
    data = mmap.mmap(handle.fileno(), 0, access=mmap.ACCESS_READ)
list_offset = U64.unpack_from(data, 24)[0]
count = U32.unpack_from(data, list_offset)[0]
pos = list_offset + 4
rows = []
for _ in range(count):
    size = U32.unpack_from(data, pos)[0]
    at, end = pos + 4, pos + size - 4
    name, mdsz, offsets = None, 0, None
    while at < end:
        code = data[at : at + 4]
        length = U16.unpack_from(data, at + 4)[0]
        payload = at + 6
        if code == b"NAME":
            name = data[payload : payload + length - 1].decode()
        elif code == b"MDSZ":
            mdsz = U64.unpack_from(data, payload)[0]
        elif code == b"OFFT":
            offsets = OFFT.unpack_from(data, payload)
        at = payload + length
    rows.append((name, mdsz, offsets))
    pos += size
print(len(rows), sum(row[1] for row in rows))
