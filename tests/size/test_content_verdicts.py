"""The verdict model's content fields: a floor (``at_least``) and a version limit pass and fail
as the gates of issue 35 need them to."""

from __future__ import annotations

import pytest

from builder.size.verdicts import Verdict, version_key


@pytest.mark.parametrize(
    ("value", "limit", "passed"),
    [(0, 1, False), (1, 1, True), (1_569, 1, True), (16_112, 16_113, False)],
)
def test_a_floor_passes_at_or_above_its_limit(value: int, limit: int, passed: bool) -> None:
    floor = Verdict("require", "lib", limit, value, at_least=True, pattern="*_nax*")
    ceiling = Verdict("max-functions", "lib", limit, value)
    assert floor.passed is passed
    assert ceiling.passed is (value <= limit)


@pytest.mark.parametrize(
    ("value", "limit", "passed"),
    [
        ("26.2", "14.0", False),
        ("14.0", "14.0", True),
        ("14", "14.0.0", True),
        ("3.10", "3.9", False),
        ("3.1", "4.0", True),
        ("26.2", "26.10", True),
    ],
)
def test_a_version_limit_compares_versions_not_text(value: str, limit: str, passed: bool) -> None:
    # the integers are whatever the caller put there: the texts decide
    verdict = Verdict("max-deployment-target", "lib", 0, 1, value_text=value, limit_text=limit)
    assert verdict.passed is passed
    assert (version_key(value) <= version_key(limit)) is passed


def test_version_key_drops_trailing_zeros_only() -> None:
    assert version_key("14.0") == version_key("14") == (14,)
    assert version_key("10.0.1") == (10, 0, 1)
    with pytest.raises(ValueError):
        version_key("fourteen")
