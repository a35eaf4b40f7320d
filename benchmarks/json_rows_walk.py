"""Baseline for ``report --format json`` (issue 34 item 10): the least work that writes the same
function rows.

Maps the file, walks the function list and the header extension with ``struct`` (no checks),
derives each function's pieces as the format defines them (docs/metallib-format.md: a metadata
chunk runs to the next function's, a module is ``MDSZ`` bytes, a reflection chunk runs to the next
function's ``RFLT``), labels each name with the built-in MLX rules compiled into one regular
expression (read from ``builder/size/rules/mlx.rules``; no fallback), sums the groups, and writes
``{"functions": [...], "groups": [...]}`` as one JSON line with the same keys and values as the
report's rows. Nothing of ``builder`` is imported. ``bench_report.py --check`` compares its rows
with the report's.

    python benchmarks/json_rows_walk.py FILE > rows.json
"""

import json
import mmap
import re
import struct
import sys
from pathlib import Path

U16 = struct.Struct("<H").unpack_from
U32 = struct.Struct("<I").unpack_from
U64 = struct.Struct("<Q").unpack_from
OFFT = struct.Struct("<QQQ").unpack_from

RULES = Path(__file__).resolve().parent.parent / "builder" / "size" / "rules" / "mlx.rules"
groups_of, parts = [], []
for line in RULES.read_text().splitlines():
    if line.strip() and not line.startswith("#"):
        group, pattern = line.split(None, 1)
        parts.append(f"(?P<_r{len(groups_of)}>{pattern.strip()})")
        groups_of.append(group)
match = re.compile("|".join(parts)).match

with open(sys.argv[1], "rb") as handle:
    data = mmap.mmap(handle.fileno(), 0, access=mmap.ACCESS_READ)
pos = U64(data, 24)[0]
count = U32(data, pos)[0]
pos += 4
# (offset, size) of the public metadata, private metadata and bitcode sections
sections = [struct.unpack_from("<QQ", data, at) for at in (40, 56, 72)]
rows = []  # name, entry size, public, private, module offsets, module size, reflection offset
for _ in range(count):
    size = U32(data, pos)[0]
    name, offsets, module, reflection = "", (0, 0, 0), 0, None
    at, end = pos + 4, pos + size - 4
    while at < end:
        tag, length = data[at : at + 4], U16(data, at + 4)[0]
        if tag == b"NAME":
            name = data[at + 6 : at + 5 + length].decode()
        elif tag == b"OFFT":
            offsets = OFFT(data, at + 6)
        elif tag == b"MDSZ":
            module = U64(data, at + 6)[0]
        elif tag == b"RFLT":
            reflection = U64(data, at + 6)[0]
        at += 6 + length
    rows.append((name, size, *offsets, module, reflection))
    pos += size
reflection_end = None  # the reflection list's size (RLST in the header extension)
at = pos
while data[at : at + 4] != b"ENDT":
    length = U16(data, at + 4)[0]
    if data[at : at + 4] == b"RLST":
        reflection_end = U64(data, at + 14)[0]
    at += 6 + length

functions, totals = [], {}
for i, (name, entry, public, private, _, module, reflection) in enumerate(rows):
    last = i + 1 == len(rows)
    public_md = (sections[0][1] if last else rows[i + 1][2]) - public
    private_md = (sections[1][1] if last else rows[i + 1][3]) - private
    refl = 0
    if reflection is not None:
        refl = (reflection_end if last else rows[i + 1][6]) - reflection
    found = match(name)
    group = groups_of[int(found.lastgroup[2:])] if found else "other"
    total = entry + public_md + private_md + module + refl
    functions.append(
        {
            "name": name,
            "group": group,
            "bytes": total,
            "bitcode_bytes": module,
            "entry_bytes": entry,
            "metadata_bytes": public_md + private_md,
            "reflection_bytes": refl,
        }
    )
    sums = totals.setdefault(group, [0, 0, 0])
    sums[0] += 1
    sums[1] += total
    sums[2] += module
groups = [
    {"name": g, "function_count": n, "bytes": b, "bitcode_bytes": m}
    for g, (n, b, m) in sorted(totals.items(), key=lambda item: -item[1][1])
]
sys.stdout.write(json.dumps({"functions": functions, "groups": groups}))
