"""The writer's two sources of functions give the same bytes.

``parts_from_library`` hands the writer a library's own table (or a selection of its rows), which
it lays out and copies with list arithmetic (and without patching when nothing moves);
``new_library`` lays new functions out in memory first. Writing a selection of a library built
from new functions must give exactly the library built from that selection of the functions.
"""

from __future__ import annotations

import random
from itertools import pairwise
from pathlib import Path

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from synthetic import new_library, synthetic_functions

from builder.metallib import (
    Metallib,
    Piece,
    library_bytes,
    parts_from_library,
    verify,
    write_library,
)
from builder.metallib.native import disabled
from builder.metallib.table import coalesce


def _both_paths(
    count: int,
    indices: list[int] | None,
    *,
    reflection: bool = True,
    seed: int = 0,
    dynamic: bool = False,
) -> bytes:
    functions = synthetic_functions(count, reflection=reflection, seed=seed)
    install_name = "mlx.metallib" if dynamic else None
    lib = Metallib(library_bytes(new_library(functions, install_name=install_name)))
    out = library_bytes(parts_from_library(lib, indices))
    kept = range(count) if indices is None else sorted(set(indices))
    assert out == library_bytes(
        new_library([functions[i] for i in kept], install_name=install_name)
    )
    written = Metallib(out)
    assert written.columns().names == [lib.columns().names[i] for i in kept]
    assert verify(written, parallel="inline").ok
    return out


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
    whole = library_bytes(
        new_library(
            synthetic_functions(9, reflection=reflection),
            install_name="mlx.metallib" if dynamic else None,
        )
    )
    for indices in _selections(9):
        out = _both_paths(9, indices, reflection=reflection, dynamic=dynamic)
        if indices is None or len(indices) == 9:
            assert out == whole  # keeping everything is an identity rewrite


@pytest.mark.realdata
def test_keeping_everything_rewrites_a_real_library_identically(small_real_metallib: bytes) -> None:
    lib = Metallib(small_real_metallib)
    count = len(lib.columns())
    assert library_bytes(parts_from_library(lib)) == small_real_metallib
    assert library_bytes(parts_from_library(lib, range(count))) == small_real_metallib
    for indices in _selections(count)[2:]:
        written = Metallib(library_bytes(parts_from_library(lib, indices)))
        assert written.columns().names == [lib.columns().names[i] for i in indices]  # type: ignore[union-attr]
        assert verify(written, parallel="inline").ok


@settings(
    max_examples=60, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture]
)
@given(seed=st.integers(0, 2**32 - 1), reflection=st.booleans())
def test_both_paths_agree_on_random_subsets(seed: int, reflection: bool) -> None:
    rng = random.Random(seed)
    indices = sorted(rng.sample(range(12), rng.randint(1, 12)))
    _both_paths(12, indices, reflection=reflection, seed=seed % 7)


def test_keep_all_copies_every_section_in_one_run(tmp_path: Path) -> None:
    """What makes ``slim --keep '*'`` cost about a file copy: nothing is patched or re-chunked."""
    source = tmp_path / "in.metallib"
    source.write_bytes(
        library_bytes(new_library(synthetic_functions(20), install_name="mlx.metallib"))
    )
    from builder.metallib import open_metallib

    with open_metallib(source) as lib:
        parts = parts_from_library(lib)
        fns = parts.functions
        assert all(len(fns.runs(piece)) == 1 for piece in Piece)
        lay = write_library(parts, tmp_path / "out.metallib")
    assert lay.reflection_unchanged
    assert (tmp_path / "out.metallib").read_bytes() == source.read_bytes()


def _python_coalesce(offsets: list[int], sizes: list[int]) -> list[tuple[int, int]]:
    with disabled():
        return coalesce(offsets, sizes)


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
