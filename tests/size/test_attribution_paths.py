"""The three ways attribution places pieces, each held on its own (issue 24, item 20).

All three give the same numbers on a well-formed library, so a test of totals cannot tell which
one ran, nor whether a fast path's guards would let a misplaced piece through. Here: the range
map against a byte-by-byte owner map on pieces given in any order, each of ``_fast_path``'s
guards on regions built for it, and spies that fail when a fast path falls back.
"""

from __future__ import annotations

import random
from collections.abc import Callable
from itertools import pairwise
from pathlib import Path
from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from synthetic import synthetic_bytes

from builder.metallib import Metallib, Region, Span, open_metallib
from builder.size import attribution
from builder.size.attribution import _by_sizes, _fast_path, attribute, range_map

Spans = list[list[Span | None]]


def _owners(spans: Spans, regions: list[Region]) -> tuple[list[int], list[list[int]]]:
    """The reference, one byte at a time: a byte belongs to the piece with the lowest (offset,
    kind, index) among those covering it; bytes past the last region belong to nobody."""
    end = regions[-1].end if regions else 0
    sizes = [[0] * len(kind) for kind in spans]
    per_region = [0] * len(regions)
    covering: list[tuple[int, int, int] | None] = [None] * end
    for kind, kind_spans in enumerate(spans):
        for index, span in enumerate(kind_spans):
            if span is None:
                continue
            for byte in range(span.offset, min(span.offset + span.size, end)):
                key = (span.offset, kind, index)
                if covering[byte] is None or key < covering[byte]:  # type: ignore[operator]
                    covering[byte] = key
    for byte, owner in enumerate(covering):
        if owner is not None:
            sizes[owner[1]][owner[2]] += 1
            per_region[next(i for i, r in enumerate(regions) if r.offset <= byte < r.end)] += 1
    return per_region, sizes


def _regions(cuts: list[int], end: int) -> list[Region]:
    bounds = [0, *sorted({c for c in cuts if 0 < c < end}), end]
    return [Region(f"r{i}", a, b - a) for i, (a, b) in enumerate(pairwise(bounds))]


@settings(max_examples=150, deadline=None)
@given(
    pieces=st.lists(
        st.tuples(st.integers(0, 2), st.integers(0, 90), st.integers(0, 30)), max_size=14
    ),
    cuts=st.lists(st.integers(1, 79), max_size=4),
    seed=st.integers(0, 2**16),
)
def test_range_map_owns_each_byte_once_whatever_the_order(
    pieces: list[tuple[int, int, int]], cuts: list[int], seed: int
) -> None:
    """Overlapping spans, some running past the file's end (80), handed over in a shuffled
    order: the same owners as the byte map, whatever the order."""
    spans: Spans = [[], [], []]
    for kind, offset, size in pieces:
        for k in range(3):  # every kind has a slot for every index, None where absent
            spans[k].append(Span(offset, size) if k == kind else None)
    order = list(range(len(pieces)))
    random.Random(seed).shuffle(order)
    shuffled = [[kind[i] for i in order] for kind in spans]
    regions = _regions(cuts, 80)
    per_region, sizes = range_map(shuffled, regions)
    want_regions, want_sizes = _owners(shuffled, regions)
    assert sizes == want_sizes
    assert per_region == want_regions


def test_range_map_on_overlaps_given_last_first() -> None:
    """Worked by hand: piece 0 [50, 70) arrives before piece 1 [10, 60) that covers most of it,
    and kind 1's piece [30, 40) lies inside piece 1."""
    regions = [Region("a", 0, 40), Region("b", 40, 60)]
    spans: Spans = [[Span(50, 20), Span(10, 50)], [Span(30, 10), None]]
    per_region, sizes = range_map(spans, regions)
    assert sizes == [[10, 50], [0, 0]]
    assert per_region == [30, 30]


# -- _fast_path: Apple's layout or nothing ---------------------------------------------------------
LAYOUT = [Region("head", 0, 10), Region("one", 10, 30), Region("two", 40, 20)]


def _fast(*kinds: list[tuple[int, int] | None]) -> tuple[list[int], list[list[int]]] | None:
    spans = [[None if s is None else Span(*s) for s in kind] for kind in kinds]
    return _fast_path(spans, LAYOUT)


def test_fast_path_accepts_each_kind_in_its_own_region() -> None:
    assert _fast([(10, 5), (15, 25)], [(40, 20), (60, 0)], [None, None]) == (
        [0, 30, 20],
        [[5, 25], [20, 0], [0, 0]],
    )


@pytest.mark.parametrize(
    ("why", "kinds"),
    [
        ("before the first region", [[(10, 5), (15, 5)], [(2, 3), (5, 3)]]),
        ("past its region's end", [[(10, 5), (15, 26)]]),
        ("across two regions", [[(30, 5), (40, 5)]]),
        ("two kinds in one region", [[(10, 5), (15, 5)], [(20, 5), (25, 5)]]),
        ("out of order", [[(15, 5), (10, 5)]]),
        ("overlapping", [[(10, 6), (15, 5)]]),
        ("some pieces missing", [[(10, 5), None]]),
    ],
)
def test_fast_path_declines_what_is_not_apples_layout(
    why: str, kinds: list[list[tuple[int, int] | None]]
) -> None:
    regions = LAYOUT if why != "before the first region" else LAYOUT[1:]
    spans = [[None if s is None else Span(*s) for s in kind] for kind in kinds]
    assert _fast_path(spans, regions) is None, why


def test_fast_path_accepts_a_kind_in_the_first_region() -> None:
    assert _fast([(0, 4), (4, 6)], [(10, 30)]) == ([10, 30, 0], [[4, 6], [30]])


def test_fast_path_leaves_empty_kinds_unplaced() -> None:
    """A kind of zero-length pieces claims no region: another kind may use that region."""
    assert _fast([(10, 0), (10, 0)], [(10, 4), (14, 6)]) == ([0, 10, 0], [[0, 0], [4, 6]])


# -- _by_sizes: the reader's guarantee, checked once per kind --------------------------------------
def _lib() -> Metallib:
    return Metallib(synthetic_bytes([("a_float32", 40), ("b_int8", 70), ("c", 9)]))


def test_by_sizes_declines_sections_that_do_not_match_the_regions() -> None:
    lib = _lib()
    regions = lib.regions()
    assert _by_sizes(lib, regions) is not None
    bitcode = next(i for i, r in enumerate(regions) if r.offset == lib.header.bitcode.offset)
    small = regions[bitcode]._replace(size=regions[bitcode].size - 1)
    assert _by_sizes(lib, [*regions[:bitcode], small, *regions[bitcode + 1 :]]) is None
    moved = regions[bitcode]._replace(offset=regions[bitcode].offset + 1)
    assert _by_sizes(lib, [*regions[:bitcode], moved, *regions[bitcode + 1 :]]) is None
    assert _by_sizes(lib, regions[bitcode:]) is None  # the function list before any region
    private = regions[bitcode - 1]
    merged = private._replace(size=private.size + regions[bitcode].size)  # modules inside it
    assert _by_sizes(lib, [*regions[: bitcode - 1], merged, *regions[bitcode + 1 :]]) is None


# -- no silent fallback ----------------------------------------------------------------------------
def _forbid(monkeypatch: pytest.MonkeyPatch, *names: str) -> None:
    def refuse(name: str) -> Callable[..., Any]:
        def called(*args: object, **kwargs: object) -> Any:
            raise AssertionError(f"attribution fell back to {name}")

        return called

    for name in names:
        monkeypatch.setattr(attribution, name, refuse(name))


def _check_both_paths(lib: Metallib, monkeypatch: pytest.MonkeyPatch) -> None:
    expected = attribute(lib)
    with monkeypatch.context() as patch:
        _forbid(patch, "piece_spans", "_fast_path", "range_map")
        assert attribute(lib) == expected  # sizes only
    with monkeypatch.context() as patch:
        _forbid(patch, "range_map")
        assert attribute(lib, verify=True) == expected  # offsets, no range map


@pytest.mark.parametrize("install_name", [None, "x.metallib"])
@pytest.mark.parametrize("reflection", [True, False])
def test_a_well_formed_library_takes_the_fast_paths(
    monkeypatch: pytest.MonkeyPatch, reflection: bool, install_name: str | None
) -> None:
    data = synthetic_bytes(
        [("a_float32", 40), ("b_int8", 70), ("c", 0)],
        reflection=reflection,
        install_name=install_name,
    )
    _check_both_paths(Metallib(data), monkeypatch)


@pytest.mark.realdata
def test_a_real_library_takes_the_fast_paths(
    mlx_metallib: Callable[[str, str], Path], monkeypatch: pytest.MonkeyPatch
) -> None:
    with open_metallib(mlx_metallib("0.32.0", "macosx_26_0_arm64")) as lib:
        _check_both_paths(lib, monkeypatch)


def test_the_range_map_still_takes_what_the_fast_paths_decline(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """The spies can fail: with both fast paths declining, the range map runs and agrees."""
    lib = _lib()
    expected = attribute(lib)
    calls: list[int] = []
    real = attribution.range_map

    def counted(*args: Any) -> Any:
        calls.append(1)
        return real(*args)

    monkeypatch.setattr(attribution, "_by_sizes", lambda *args: None)
    monkeypatch.setattr(attribution, "_fast_path", lambda *args: None)
    monkeypatch.setattr(attribution, "range_map", counted)
    assert attribute(lib) == expected and calls == [1]


def test_each_row_adds_its_pieces() -> None:
    result = attribute(_lib())
    for row in result.functions:
        assert row.metadata == row.public_md + row.private_md > 0
        assert row.bytes == row.entry + row.metadata + row.module + row.reflection
