"""Baseline for the list and report benchmarks: the least work that reads a metallib's sizes.

Maps the file and walks every function-list entry's tags with ``struct``, adding up the MDSZ
payloads (each module's size); no names, no rows, no checks, no objects, no output but one line.
Any tool that lists or reports sizes has to do at least this.

    python benchmarks/mdsz_walk.py FILE
"""

import mmap
import struct
import sys

U16 = struct.Struct("<H").unpack_from
U32 = struct.Struct("<I").unpack_from
U64 = struct.Struct("<Q").unpack_from

with open(sys.argv[1], "rb") as handle:
    data = mmap.mmap(handle.fileno(), 0, access=mmap.ACCESS_READ)
pos = U64(data, 24)[0]
count = U32(data, pos)[0]
pos += 4
total = 0
for _ in range(count):
    size = U32(data, pos)[0]
    at, end = pos + 4, pos + size - 4  # the tags, up to ENDT
    while at < end:
        if data[at : at + 4] == b"MDSZ":
            total += U64(data, at + 6)[0]
        at += 6 + U16(data, at + 4)[0]  # every tag in a function entry has a u16 length
    pos += size
print(count, total)
