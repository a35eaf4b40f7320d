"""Baseline for the verify benchmark: SHA-256 of the bitcode section as one block, nothing else.

python benchmarks/hash_bitcode.py FILE
"""

import hashlib
import mmap
import struct
import sys

with open(sys.argv[1], "rb") as handle:
    data = mmap.mmap(handle.fileno(), 0, access=mmap.ACCESS_READ)
offset, size = struct.unpack_from("<QQ", data, 72)
print(hashlib.sha256(memoryview(data)[offset : offset + size]).hexdigest())
