"""Download share: what each function costs in a wheel, where the library is stored compressed.

A wheel is a zip file and stores a metallib as raw deflate at zlib level 6 (``zipfile``'s
default; mlx-metal's wheels match ``zlib.compress(data, 6)`` to the byte). What a user downloads
is that compressed stream, so every function, group and overhead row gets ``download_bytes``,
its share of it, and the shares add up exactly to the modelled total.

The model (``MODEL``), built so that a group's share predicts what removing the group saves:

* the file is cut into shards of about ``SHARD_BYTES`` at segment boundaries (a segment is a run
  of bytes with one owner: a function's piece, or container overhead);
* each shard is compressed on its own as raw deflate (level 6, 32 KiB window, memLevel 8), primed
  with the ``WINDOW`` bytes before it as its dictionary and ended by a sync flush, as parallel
  gzip implementations do: the shards concatenated are one valid deflate stream of the file, a
  few hundred bytes longer than the single-pass stream in a wheel (docs/download-size.md);
* each shard is inflated again ``STEP`` compressed bytes at a time, and the bits of each step
  are spread over the bytes that step decoded: a function's bytes are charged what encoding them
  took (the literals it holds, the matches that copy earlier data into it), which is what
  removing it removes. Steps that decode to nothing hold a block's Huffman tables, which serve
  the whole block: their bits are spread over the next ``SPREAD`` bytes (a level-6 block covers
  30 to 80 KB of these libraries).

The shards run on every core, in C (``deflate_share`` in ``builder.metallib._native``) or, without
the extension, in Python's zlib on threads and a Python loop; both give identical numbers (same
zlib, same integer arithmetic), measured in docs/performance.md and tests/size/test_download.py.
"""

from __future__ import annotations

import bisect
import os
import zlib
from array import array
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass, replace
from pathlib import Path
from typing import TYPE_CHECKING

from builder.errors import InternalError, UsageError
from builder.files.reading import open_regular
from builder.metallib.native import native_module
from builder.metallib.table import Piece

if TYPE_CHECKING:
    from collections.abc import Sequence

    from builder.metallib import Metallib, Region
    from builder.size.attribution import Attribution
    from builder.size.report import Download, WheelFile, WheelFiles

__all__ = [
    "LEVEL",
    "MODEL",
    "SHARD_BYTES",
    "SPREAD",
    "STEP",
    "WINDOW",
    "Segments",
    "deflate_share",
    "download_share",
    "download_total",
    "measure_download",
    "read_wheel_files",
    "segments",
]

LEVEL = 6
"""zlib level: what ``zipfile`` (and so every wheel builder) uses for a deflated member."""
WINDOW = 32768
"""Bytes before a shard that prime it: deflate's whole window, so matches reach across cuts."""
SHARD_BYTES = 1 << 20
"""About how much input one shard holds (cut at the next segment start)."""
STEP = 16
"""Compressed bytes inflated per attribution step: charges are exact to within one step."""
SPREAD = 32768
"""Bytes over which a block's tables (bits that decode to nothing) are charged."""
MODEL = (
    "zlib level 6 raw deflate, as a wheel's zip member stores it; compressed in shards of about "
    f"{SHARD_BYTES >> 20} MiB cut at function boundaries, each primed with the {WINDOW >> 10} KiB "
    "before it; every compressed bit is charged to the bytes it decodes into "
    f"(in steps of {STEP} compressed bytes; "
    f"a block's tables over the {SPREAD >> 10} KiB after them)"
)


@dataclass(frozen=True)
class Segments:
    """The file as runs of one owner each: owner ``i < function_count`` is function ``i``,
    ``function_count + j`` is the attribution's overhead row ``j``."""

    starts: list[int]
    owners: list[int]
    file_size: int
    function_count: int


def segments(lib: Metallib, attribution: Attribution) -> Segments:
    """Every byte of ``lib`` to the owner the attribution gave it: function pieces, first to
    cover a byte wins (as ``attribution.range_map``), and the rest to the overhead row of the
    region it lies in."""
    table = lib.columns()
    count = len(table.names)
    offsets: list[int] = []
    ends: list[int] = []
    owners: list[int] = []
    for piece in Piece:
        for index, (offset, size) in enumerate(zip(table.offsets(piece), table.sizes(piece))):
            if size and offset is not None:
                offsets.append(offset)
                ends.append(offset + size)
                owners.append(index)
    if any(ends[i] > offsets[i + 1] for i in range(len(offsets) - 1)):  # not Apple's layout
        order = sorted(range(len(offsets)), key=lambda i: offsets[i])  # stable: piece order
        offsets, ends, owners = ([column[i] for i in order] for column in (offsets, ends, owners))
    regions = lib.regions()
    row_of = {item.offset: count + row for row, item in enumerate(attribution.overhead)}
    starts: list[int] = []
    owned: list[int] = []
    file_size = attribution.file_size
    covered = 0
    for offset, end, owner in zip(offsets, ends, owners):
        end = min(end, file_size)
        if end <= covered:
            continue
        if offset > covered:
            _gap(covered, offset, regions, row_of, starts, owned, lib)
        starts.append(max(offset, covered))
        owned.append(owner)
        covered = end
    _gap(covered, file_size, regions, row_of, starts, owned, lib)
    return Segments(starts, owned, file_size, count)


def _gap(
    begin: int,
    end: int,
    regions: Sequence[Region],
    row_of: dict[int, int],
    starts: list[int],
    owned: list[int],
    lib: Metallib,
) -> None:
    """Bytes no function owns, split at region boundaries, each to its region's overhead row."""
    where = max(bisect.bisect_right([r.offset for r in regions], begin) - 1, 0)
    while begin < end:
        region = regions[where]
        row = row_of.get(region.offset)
        if row is None:
            raise InternalError(
                f"download share: bytes at {begin} in the {region.name} belong to no overhead row",
                path=lib.path,
                offset=begin,
            )
        starts.append(begin)
        owned.append(row)
        begin = min(end, region.end)
        where += 1


def cuts(starts: Sequence[int], file_size: int, shard_bytes: int = SHARD_BYTES) -> list[int]:
    """Where each shard starts: the first segment start at least ``shard_bytes`` past the last."""
    found = [0]
    while True:
        at = bisect.bisect_left(starts, found[-1] + shard_bytes)
        if at >= len(starts):
            return found
        found.append(starts[at])


def deflate_share(
    data: memoryview | bytes,
    cut_at: Sequence[int],
    starts: Sequence[int],
    threads: int,
    *,
    native: bool = True,
    attribute: bool = True,
) -> tuple[list[int], list[int]]:
    """Each shard's compressed bytes and each segment's share of them in bits (``MODEL``; all 0
    without ``attribute``), by the C extension when it is built with zlib and ``native``, else by
    Python's zlib."""
    module = native_module() if native else None
    step = STEP if attribute else 0
    if module is not None and getattr(module, "HAS_DEFLATE", False):
        sizes, costs = module.deflate_share(
            data,
            array("Q", cut_at).tobytes(),
            array("Q", starts).tobytes(),
            LEVEL,
            WINDOW,
            step,
            SPREAD,
            threads,
        )
        return memoryview(sizes).cast("Q").tolist(), memoryview(costs).cast("Q").tolist()
    return _python_share(data, list(cut_at), list(starts), threads, step)


def _python_share(
    data: memoryview | bytes, cut_at: list[int], starts: list[int], threads: int, step: int
) -> tuple[list[int], list[int]]:
    """The pure-Python twin of ``deflate_share`` in csrc/deflate_share.c, step for step."""
    size = len(data)
    sizes = [0] * len(cut_at)
    costs = [0] * len(starts)
    ends = [*starts[1:], size]

    def charge(seg: int, pos: int, to: int, bits: int) -> int:
        """Spread ``bits`` over [pos, to) by cumulative floor; the segment holding ``to - 1``."""
        given = 0
        while True:
            stop = min(ends[seg], to)
            upto = bits * (stop - pos) // (to - pos)
            costs[seg] += upto - given
            given = upto
            if stop == to:
                return seg
            seg += 1

    def shard(k: int) -> None:
        a = cut_at[k]
        b = cut_at[k + 1] if k + 1 < len(cut_at) else size
        prime = bytes(data[max(0, a - WINDOW) : a])
        packer = zlib.compressobj(
            LEVEL,
            zlib.DEFLATED,
            -15,
            8,
            zlib.Z_DEFAULT_STRATEGY,
            **({"zdict": prime} if prime else {}),
        )
        last = k + 1 == len(cut_at)
        packed = packer.compress(data[a:b]) + packer.flush(
            zlib.Z_FINISH if last else zlib.Z_SYNC_FLUSH
        )
        sizes[k] = len(packed)
        if not step:
            return
        unpacker = zlib.decompressobj(-15, **({"zdict": prime} if prime else {}))
        seg = bisect.bisect_right(starts, a) - 1
        pos, pending, plain = a, 0, []
        for used in range(0, len(packed), step):
            chunk = packed[used : used + step]
            out = unpacker.decompress(chunk)
            if unpacker.unused_data or pos + len(out) > b:
                raise InternalError(
                    f"download share: shard at {a} does not inflate back to its input"
                )
            if not out:
                pending += 8 * len(chunk)
                continue
            plain.append(out)
            to = pos + len(out)
            if pending:  # a block's tables: over the next SPREAD bytes
                charge(seg, pos, min(pos + SPREAD, b), pending)
            seg = charge(seg, pos, to, 8 * len(chunk))
            if to < b and to == ends[seg]:
                seg += 1
            pos, pending = to, 0
        if pos != b or b"".join(plain) != data[a:b]:
            raise InternalError(f"download share: shard at {a} does not inflate back to its input")
        costs[seg] += pending  # the flush marker after the last byte: its segment pays

    with ThreadPoolExecutor(max_workers=max(1, threads)) as pool:
        list(pool.map(shard, range(len(cut_at))))  # zlib drops the GIL while it compresses
    return sizes, costs


def download_total(lib: Metallib, attribution: Attribution, *, threads: int | None = None) -> int:
    """The modelled download of ``lib`` alone (the same shards as ``download_share``, so the same
    total, without the attribution's inflate pass)."""
    layout = segments(lib, attribution)
    cut_at = cuts(layout.starts, layout.file_size)
    sizes, _ = deflate_share(
        lib.data, cut_at, layout.starts, threads or _threads(), attribute=False
    )
    return sum(sizes)


def _threads() -> int:
    cpus = len(os.sched_getaffinity(0)) if hasattr(os, "sched_getaffinity") else os.cpu_count()
    return max(1, min(cpus or 1, 16))


def download_share(
    lib: Metallib, attribution: Attribution, *, threads: int | None = None, native: bool = True
) -> Download:
    """Model ``lib``'s download (``MODEL``) and give every function and overhead row its share
    (no wheel files: ``measure_download`` adds them)."""
    from builder.size.report import Download

    layout = segments(lib, attribution)
    cut_at = cuts(layout.starts, layout.file_size)
    threads = threads or _threads()
    shard_sizes, costs = deflate_share(lib.data, cut_at, layout.starts, threads, native=native)
    owners = layout.function_count + len(attribution.overhead)
    bits = [0] * owners
    owned = [0] * owners
    ends = [*layout.starts[1:], layout.file_size]
    for owner, cost, start, end in zip(layout.owners, costs, layout.starts, ends):
        bits[owner] += cost
        owned[owner] += end - start
    expected = [fn.bytes for fn in attribution.functions] + [o.bytes for o in attribution.overhead]
    if owned != expected:
        where = next(i for i, (a, b) in enumerate(zip(owned, expected)) if a != b)
        raise InternalError(
            f"download share: owner {where} holds {owned[where]} bytes, the attribution says "
            f"{expected[where]}",
            path=lib.path,
            offset=0,
        )
    total = sum(shard_sizes)
    shares = _whole_bytes(bits, total)
    count = layout.function_count
    model = {
        "description": MODEL,
        "codec": "raw deflate",
        "zlib": zlib.ZLIB_RUNTIME_VERSION,
        "level": LEVEL,
        "window_bytes": WINDOW,
        "shard_bytes": SHARD_BYTES,
        "step_bytes": STEP,
        "shards": len(cut_at),
    }
    return Download(total, shares[:count], shares[count:], model)


def _whole_bytes(bits: list[int], total: int) -> list[int]:
    """Bits to whole bytes that add up to ``total`` exactly: each share rounded down, then one
    byte more to the largest remainders (ties to the earlier owner)."""
    if sum(bits) != 8 * total:
        raise InternalError(f"download share: {sum(bits)} bits charged, the stream has {8 * total}")
    shares = [b >> 3 for b in bits]
    left = total - sum(shares)
    for index in sorted(range(len(bits)), key=lambda i: (-(bits[i] & 7), i))[:left]:
        shares[index] += 1
    return shares


def measure_download(lib: Metallib, attribution: Attribution, wheel: str | None) -> Download:
    """Model ``lib``'s download; with the wheel it came from, list the wheel's files too."""
    share = download_share(lib, attribution)
    files = read_wheel_files(wheel) if wheel else None
    # a metallib inside a binary is not a wheel file of its own: no member to check the model on
    member = _member(lib.path, files) if files and not lib.file_offset else None
    return replace(share, member=member, wheel=files)


def read_wheel_files(wheel: str) -> WheelFiles:
    """The zip directory of ``wheel``: names, sizes and compressed sizes (nothing is extracted)."""
    import zipfile

    from builder.inputs.wheel_index import check_entries

    try:
        with open_regular(wheel, "the wheel") as handle:
            check_entries(handle, wheel)  # before zipfile makes an object of every entry
            handle.seek(0)
            with zipfile.ZipFile(handle) as archive:
                size = os.fstat(handle.fileno()).st_size
                infos = archive.infolist()
    except (OSError, zipfile.BadZipFile, ValueError, EOFError) as exc:
        raise UsageError(f"{wheel}: cannot read the wheel's file list: {exc}") from None
    from builder.size.report import WheelFile, WheelFiles

    files = [WheelFile(i.filename, i.file_size, i.compress_size) for i in infos if not i.is_dir()]
    return WheelFiles(wheel, size, files=files)


def _member(path: str | None, files: WheelFiles) -> WheelFile | None:
    """The wheel entry the extracted metallib at ``path`` came from: the longest member name
    that ends its path (extraction keeps member paths, ``builder.inputs.wheels``)."""
    if path is None:
        return None
    text = Path(path).as_posix()
    found = [f for f in files.files if f.name.endswith(".metallib") and text.endswith("/" + f.name)]
    return max(found, key=lambda f: len(f.name)) if found else None
