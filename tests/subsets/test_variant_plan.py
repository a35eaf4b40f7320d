"""The ``--ceiling`` planner on made-up entry files whose sizes are known exactly: each step of the
search (greedy start, knapsack start, moves back, swaps, embedded-byte ties, exact sizes that
differ from the estimate) decides at least one case here. The real-library test
(test_variants_from.py) checks the result's fit and local optimality independently.
"""

from __future__ import annotations

import itertools
from collections.abc import Callable, Mapping

import pytest

from builder.errors import CheckFailed
from builder.subsets import variant_plan
from builder.subsets.variant_plan import Candidate, Plan, plan_ceiling

FULL = 10_000


def _plan(
    files: Mapping[str, tuple[int, int]],
    budget: int,
    *,
    extra: Callable[[frozenset[str]], int] = lambda jit: 0,
    embedded: Mapping[str, int] | None = None,
) -> Plan:
    """Files ``name -> (kernels, bytes saved)``; the exact size is FULL minus the savings plus
    ``extra(jit)`` (what the estimate cannot see, like reflection padding)."""
    candidates = [Candidate(name, kernels, saved) for name, (kernels, saved) in files.items()]

    def size_of(jit: frozenset[str]) -> int:
        return FULL - sum(files[s][1] for s in jit) + extra(jit)

    def embedded_of(jit: frozenset[str]) -> int:
        return sum((embedded or {}).get(s, 100) for s in jit)

    return plan_ceiling(candidates, budget, size_of=size_of, embedded_of=embedded_of)


def _no_knapsack(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(variant_plan, "DP_CELLS", 0)


FOUR = {"a": (4, 50), "b": (6, 60), "c": (6, 60), "d": (7, 70)}
"""Need 120: greedy (a, b, c) and moving a back gives b+c, 12 kernels; a+d fits with 11."""


def test_the_knapsack_finds_fewer_kernels_than_greedy_and_moves(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    plan = _plan(FOUR, FULL - 120)
    assert set(plan.jit) == {"a", "d"} and plan.kernels == 11 and plan.start == "knapsack"
    assert plan.metallib_bytes == FULL - 120
    _no_knapsack(monkeypatch)
    plan = _plan(FOUR, FULL - 120)
    assert set(plan.jit) == {"b", "c"} and plan.kernels == 12 and plan.start == "greedy"


def test_files_not_needed_go_back_to_aot(monkeypatch: pytest.MonkeyPatch) -> None:
    _no_knapsack(monkeypatch)
    plan = _plan({"a": (5, 60), "b": (8, 90)}, FULL - 90)  # greedy takes a (best ratio), then b
    assert plan.jit == ("b",) and plan.kernels == 8
    assert [(s.action, s.source) for s in plan.steps] == [("aot", "a")]


def test_a_swap_lowers_the_run_time_kernels(monkeypatch: pytest.MonkeyPatch) -> None:
    _no_knapsack(monkeypatch)
    plan = _plan({"x": (10, 200), "y": (8, 120)}, FULL - 100)  # greedy: x alone fits
    assert plan.jit == ("y",) and plan.kernels == 8
    assert [(s.action, s.source, s.swapped_for) for s in plan.steps] == [("swap", "y", "x")]


def test_equal_kernels_prefer_fewer_embedded_bytes(monkeypatch: pytest.MonkeyPatch) -> None:
    files = {"p": (5, 100), "q": (5, 100)}
    assert _plan(files, FULL - 50, embedded={"p": 1000, "q": 10}).jit == ("q",)
    assert _plan(files, FULL - 50, embedded={"p": 10, "q": 1000}).jit == ("p",)
    # p saves a byte more per kernel, so greedy and the knapsack take it; a swap then trades it
    # for q: as many kernels, fewer embedded bytes.
    plan = _plan({"p": (5, 101), "q": (5, 100)}, FULL - 50, embedded={"p": 1000, "q": 10})
    assert plan.jit == ("q",) and plan.embedded_bytes == 10
    assert [(s.action, s.source, s.swapped_for) for s in plan.steps] == [("swap", "q", "p")]
    _no_knapsack(monkeypatch)  # equal ratios: greedy itself takes the file with fewer bytes
    assert _plan(files, FULL - 50, embedded={"p": 1000, "q": 10}).steps == ()


def test_exact_sizes_decide_not_the_estimate() -> None:
    """The estimate says ``a`` alone fits; its exact size is 8 bytes over: ``b`` is chosen."""
    plan = _plan(
        {"a": (1, 100), "b": (2, 100)}, FULL - 100, extra=lambda jit: 8 if jit == {"a"} else 0
    )
    assert plan.jit == ("b",) and plan.metallib_bytes == FULL - 100


def test_every_chosen_file_is_needed_and_explained() -> None:
    files = {f"f{i}": (i + 1, 37 * (i + 3)) for i in range(9)}
    budget = FULL - 700
    plan = _plan(files, budget)
    assert plan.metallib_bytes <= budget
    assert {f.source for f in plan.files} == set(plan.jit)
    for f in plan.files:
        back = FULL - sum(files[s][1] for s in plan.jit if s != f.source)
        assert f.back_bytes == back > budget
        assert f.saved_bytes == back - plan.metallib_bytes
    best = min(
        sum(files[s][0] for s in combo)
        for r in range(len(files) + 1)
        for combo in itertools.combinations(files, r)
        if FULL - sum(files[s][1] for s in combo) <= budget
    )
    assert plan.kernels == best


def test_nothing_moves_when_all_aot_fits() -> None:
    plan = _plan(FOUR, FULL)
    assert plan.jit == () and plan.start == "all-aot" and plan.metallib_bytes == FULL


def test_a_cap_below_the_least_reachable_size_is_a_failed_check() -> None:
    least = FULL - sum(saved for _, saved in FOUR.values())
    with pytest.raises(CheckFailed, match=f"least reachable metallib size, {least:,} bytes"):
        _plan(FOUR, least - 1)
    assert _plan(FOUR, least).metallib_bytes == least


def test_files_without_library_kernels_never_move() -> None:
    plan = _plan({"empty": (0, 0), "a": (3, 500)}, FULL - 400)
    assert plan.jit == ("a",)
