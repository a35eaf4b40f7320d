"""Baseline for the list/report benchmarks: the least a program can do to list a metallib's
functions. Opens the file, maps it, and walks the function list with ``struct``, reading each
entry's NAME and MDSZ, then prints the count. No checks, no objects, no output formatting.

    python benchmarks/bare_walk.py FILE
"""

import mmap
import struct
import sys

with open(sys.argv[1], "rb") as handle:
    data = mmap.mmap(handle.fileno(), 0, access=mmap.ACCESS_READ)
count = struct.unpack_from("<I", data, 88)[0]
pos = 92
names = []
sizes = []
for _ in range(count):
    size = struct.unpack_from("<I", data, pos)[0]
    at, end = pos + 4, pos + size - 4
    while at < end:
        code, length = struct.unpack_from("<4sH", data, at)
        if code == b"NAME":
            names.append(data[at + 6 : at + 5 + length].decode())
        elif code == b"MDSZ":
            sizes.append(struct.unpack_from("<Q", data, at + 6)[0])
        at += 6 + length
    pos += size
print(len(names), sum(sizes))
