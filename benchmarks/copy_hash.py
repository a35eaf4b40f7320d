"""Reference for slim's floor: copy the file and hash its bitcode section, on both cores.

``slim`` copies what it keeps and checks each kept module's SHA-256 against its HASH tag. This
does the same bytes' worth of work with nothing else: the kernel copies the file
(``copy_file_range``) on one thread while hashlib hashes the bitcode section as two blocks on two
threads (hashlib releases the GIL). No parsing, no per-module digests. ``cp`` alone is the floor
without the check.

    python benchmarks/copy_hash.py FILE OUT
"""

import hashlib
import mmap
import os
import struct
import sys
import threading

source, target = sys.argv[1], sys.argv[2]
with open(source, "rb") as handle:
    data = memoryview(mmap.mmap(handle.fileno(), 0, access=mmap.ACCESS_READ))
offset, size = struct.unpack_from("<QQ", data, 72)
half = offset + size // 2
digests = [b"", b""]


def digest(slot: int, start: int, end: int) -> None:
    digests[slot] = hashlib.sha256(data[start:end]).digest()


threads = [
    threading.Thread(target=digest, args=(0, offset, half)),
    threading.Thread(target=digest, args=(1, half, offset + size)),
]
for thread in threads:
    thread.start()
src = os.open(source, os.O_RDONLY)
dst = os.open(target, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o644)
left = len(data)
while left:
    left -= os.copy_file_range(src, dst, left)
os.close(dst)
for thread in threads:
    thread.join()
print(digests[0].hex(), digests[1].hex())
