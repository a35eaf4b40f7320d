from __future__ import annotations

import pytest

from builder.errors import UsageError
from builder.files.bounds import parse_size
from builder.render.text import human_delta, human_size
from builder.settings.validators import Limit, parse_limit


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        ("0", 0),
        ("512", 512),
        ("10KB", 10_000),
        ("10kb", 10_000),
        ("2MB", 2_000_000),
        ("1MiB", 1024**2),
        ("1.5 MiB", 1572864),
        ("3KiB", 3072),
        ("1GB", 10**9),
        ("7B", 7),
    ],
)
def test_parse_size(text: str, expected: int) -> None:
    assert parse_size(text) == expected


@pytest.mark.parametrize("text", ["", "MB", "10 parsecs", "1e5", "ten"])
def test_parse_size_rejects(text: str) -> None:
    with pytest.raises(UsageError):
        parse_size(text)


def test_parse_limit() -> None:
    assert parse_limit("5%") == Limit(percent=5.0)
    assert parse_limit("0.5%").allowed(1000) == 5.0
    assert parse_limit("100KB") == Limit(bytes=100_000)
    assert parse_limit("100KB").allowed(10**9) == 100_000
    with pytest.raises(UsageError):
        parse_limit("x%")


def test_human() -> None:
    assert human_size(999) == "999 B"
    assert human_size(1000) == "1.00 kB"
    assert human_size(105_153_824) == "105.2 MB"
    assert human_delta(-512) == "-512 B"
    assert human_delta(0) == "0 B"
    assert human_delta(1_234_567) == "+1.23 MB"
