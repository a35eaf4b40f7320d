"""The writer's two ways of writing a library's functions give the same bytes.

``parts_from_library`` returns ``SourceFunctions`` columns, which the writer lays out and copies
with list arithmetic (and skips patching when nothing moves); a plain list of the same functions
(``SourceFunction`` objects) takes the general per-function path. Both must produce identical,
valid files for every selection.
"""

from __future__ import annotations

import random
from itertools import pairwise
from pathlib import Path

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from synthetic import synthetic_parts

from builder.metallib import Metallib, library_bytes, parts_from_library, verify, write_library
from builder.metallib import native as native_state
from builder.metallib.source import SourceFunctions, coalesce


def _both_paths(data: bytes, indices: list[int] | None) -> bytes:
    lib = Metallib.from_bytes(data)
    columns = parts_from_library(lib, indices)
    assert isinstance(columns.functions, SourceFunctions)
    fast = library_bytes(columns)
    general = parts_from_library(lib, indices)
    general.functions = list(general.functions)  # SourceFunction objects: the per-function path
    assert fast == library_bytes(general)
    out = Metallib.from_bytes(fast)
    kept = range(len(lib.columns().names)) if indices is None else sorted(set(indices))
    assert out.columns().names == [lib.columns().names[i] for i in kept]
    assert verify(out, parallel="inline").ok
    return fast


def _selections(count: int) -> list[list[int] | None]:
    return [
        None,
        list(range(count)),
        list(range(1, count)),  # everything shifts
        list(range(count // 2)),
        list(range(0, count, 2)),
        [count - 1],
    ]


@pytest.mark.parametrize("reflection", [True, False])
@pytest.mark.parametrize("dynamic", [True, False])
def test_both_paths_agree_on_synthetic_libraries(reflection: bool, dynamic: bool) -> None:
    data = library_bytes(synthetic_parts(9, reflection=reflection, dynamic=dynamic))
    for indices in _selections(9):
        out = _both_paths(data, indices)
        if indices is None or len(indices) == 9:
            assert out == data  # keeping everything is an identity rewrite


@pytest.mark.realdata
def test_both_paths_agree_on_a_real_library(small_real_metallib: bytes) -> None:
    count = len(Metallib.from_bytes(small_real_metallib).columns().names)
    for indices in _selections(count):
        out = _both_paths(small_real_metallib, indices)
        if indices is None or len(indices) == count:
            assert out == small_real_metallib


@settings(max_examples=60, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(seed=st.integers(0, 2**32 - 1), reflection=st.booleans())
def test_both_paths_agree_on_random_subsets(seed: int, reflection: bool) -> None:
    rng = random.Random(seed)
    data = library_bytes(synthetic_parts(12, reflection=reflection, seed=seed % 7))
    indices = sorted(rng.sample(range(12), rng.randint(1, 12)))
    _both_paths(data, indices)


def test_keep_all_copies_every_section_in_one_run(tmp_path: Path) -> None:
    """What makes ``slim --keep '*'`` cost about a file copy: nothing is patched or re-chunked."""
    source = tmp_path / "in.metallib"
    source.write_bytes(library_bytes(synthetic_parts(20, dynamic=True)))
    from builder.metallib import open_metallib

    with open_metallib(source) as lib:
        parts = parts_from_library(lib)
        fns = parts.functions
        assert isinstance(fns, SourceFunctions)
        assert all(len(fns.runs(which)) == 1 for which in range(5))
        lay = write_library(parts, tmp_path / "out.metallib")
    assert lay.reflection_unchanged
    assert (tmp_path / "out.metallib").read_bytes() == source.read_bytes()


def _python_coalesce(offsets: list[int], sizes: list[int]) -> list[tuple[int, int]]:
    saved = native_state._MODULE
    native_state._MODULE = None
    try:
        return coalesce(offsets, sizes)
    finally:
        native_state._MODULE = saved


@given(pieces=st.lists(st.tuples(st.integers(0, 3), st.integers(0, 5)), max_size=30))
def test_coalesce_merges_back_to_back_pieces(pieces: list[tuple[int, int]]) -> None:
    offsets, sizes, at = [], [], 100
    for gap, size in pieces:
        at += gap
        offsets.append(at)
        sizes.append(size)
        at += size
    runs = _python_coalesce(offsets, sizes)
    assert coalesce(offsets, sizes) == runs  # native (when built) and Python agree
    covered = [(o, o + n) for o, n in zip(offsets, sizes) if n]
    assert sum(n for _, n in runs) == sum(sizes)
    assert all(any(s <= a and b <= s + n for s, n in runs) for a, b in covered)
    assert all(a[0] + a[1] < b[0] for a, b in pairwise(runs))  # merged: no two runs touch
