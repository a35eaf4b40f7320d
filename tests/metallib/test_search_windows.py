"""The search without the extension (``METALLIB_BUILDER_NATIVE=0``) on files large enough to use
its windows: it searches the map 32 MiB at a time and gives the pages back behind it. A library
whose header straddles a window's end, and one after it, are found where they were put; the
extension's search agrees; peak memory stays a window's worth, not the file's."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest

from builder.metallib import embedded
from builder.metallib.embedded import find_metallibs
from builder.metallib.native import disabled, native_module
from builder.metallib.structs import Span

pytestmark = pytest.mark.picks_container_code

WINDOW = 32 << 20  # embedded._WINDOW, stated here as the reference


def _placed(path: Path, size: int, libraries: list[tuple[int, bytes]]) -> None:
    """A file of ``size`` bytes, zero but for ``libraries`` at their offsets and a few decoys
    (text hits of the magic, a magic with random bytes behind it) beside them; sparse where it
    can be."""
    with open(path, "wb") as handle:
        handle.truncate(size)
        for offset, data in libraries:
            handle.seek(offset - 40)
            handle.write(b"MTLBinaryArchive\0MTLB" + os.urandom(19))
            handle.write(data)
            if offset + len(data) + 64 <= size:
                handle.write(b"MTLB" + os.urandom(60))
    assert path.stat().st_size == size


def _both(path: Path) -> list[Span]:
    """The libraries found without the extension, checked against the extension's search when it
    is built."""
    with disabled():
        assert native_module() is None
        found = [e.span for e in find_metallibs(path)]
    if native_module() is not None:
        assert [e.span for e in find_metallibs(path)] == found
    return found


def test_the_real_window_is_what_the_test_states() -> None:
    assert embedded._WINDOW == WINDOW


@pytest.mark.parametrize("before", [100, 88, 31, 20, 3, 1])
def test_a_library_across_the_first_window_end_and_one_after(
    tmp_path: Path, small_real_metallib: bytes, before: int
) -> None:
    """The library's magic ``before`` bytes before the 32 MiB mark: its header inside the first
    window, straddling its end (less than the 32 bytes the search matches left in it), or its
    magic cut by the end; a second library 4 MiB into the next window."""
    lib = small_real_metallib
    first, second = WINDOW - before, WINDOW + (4 << 20)
    path = tmp_path / "large.bin"
    _placed(path, WINDOW + (8 << 20), [(first, lib), (second, lib)])
    assert _both(path) == [Span(first, len(lib)), Span(second, len(lib))]


@pytest.mark.parametrize("window", [1 << 16, 1 << 20])
def test_many_windows_with_a_library_at_each_kind_of_edge(
    tmp_path: Path, small_real_metallib: bytes, window: int, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A smaller window (patched), so one file crosses many. The search resumes after each
    library it proves, its first window starting there: each next library's magic is put at,
    before or across that window's end."""
    lib = small_real_metallib
    monkeypatch.setattr(embedded, "_WINDOW", window)
    offsets, cursor = [], 0
    for before in (0, 4, 2, 31, 32, 33, 88, 90):
        offsets.append(cursor + window - before)
        cursor = offsets[-1] + len(lib)
    size = cursor + 200 + len(lib)
    offsets.append(size - len(lib))
    path = tmp_path / "windows.bin"
    _placed(path, size, [(at, lib) for at in offsets])
    assert _both(path) == [Span(at, len(lib)) for at in offsets]


_PEAK = """
import sys
from builder.metallib.embedded import find_metallibs

def peak():
    for line in open("/proc/self/status"):
        if line.startswith("VmHWM:"):
            return int(line.split()[1]) * 1024

before = peak()
found = find_metallibs(sys.argv[1])
print(len(found), peak() - before)
"""


@pytest.mark.slow
@pytest.mark.skipif(not os.path.exists("/proc/self/status"), reason="needs Linux's /proc")
def test_pages_searched_are_given_back(tmp_path: Path) -> None:
    """Without the extension, searching a 128 MiB file (its bytes written, not a sparse hole)
    raises the process's peak memory by at most two windows (the one searched and the one
    before it, dropped once a whole window lies behind the cursor), not by the file: the pages
    behind the cursor are given back (``MADV_DONTNEED``)."""
    path = tmp_path / "filled.bin"
    with open(path, "wb") as handle:
        handle.writelines(b"\7" * (1 << 20) for _ in range(128))
    env = {**os.environ, "METALLIB_BUILDER_NATIVE": "0"}
    done = subprocess.run(
        [sys.executable, "-c", _PEAK, str(path)],
        capture_output=True,
        text=True,
        env=env,
        check=True,
    )
    count, grown = map(int, done.stdout.split())
    assert count == 0
    assert grown < 3 * WINDOW, f"peak memory grew by {grown:,} bytes searching 128 MiB"
