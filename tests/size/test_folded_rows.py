"""--top folds the smaller groups into one "rest" row, but only two or more: a rest row standing
for a single group hid that group's name ("rest (1 groups)") and saved no line."""

from __future__ import annotations

import re
from collections.abc import Callable
from pathlib import Path

import pytest
from clirun import run_cli

# with --by function every function is its own group; sizes decide the order
FUNCTIONS = [
    ("alpha_float32", 4000),
    ("beta_float32", 3000),
    ("gamma_float32", 2000),
    ("delta_float32", 1000),
]
NAMES = [name for name, _ in FUNCTIONS]


def _names_and_rest(text: str) -> tuple[list[str], list[str]]:
    shown = [name for name in NAMES if re.search(rf"\b{name}\b", text)]
    return shown, re.findall(r"rest \(\d+ groups?\)", text)


@pytest.mark.parametrize("fmt", ["table", "markdown"])
def test_one_group_left_over_is_shown_not_folded(
    fmt: str, write_metallib: Callable[..., Path], capsys: pytest.CaptureFixture[str]
) -> None:
    lib = str(write_metallib("lib.metallib", FUNCTIONS))
    for top, shown, rest in ((3, NAMES, []), (2, NAMES[:2], ["rest (2 groups)"]), (4, NAMES, [])):
        code, out, err = run_cli(
            ["report", lib, "--by", "function", "--top", str(top), "--format", fmt], capsys
        )
        assert code == 0, err
        assert _names_and_rest(out) == (shown, rest), (top, out)


def test_compare_shows_a_single_left_over_group(
    write_metallib: Callable[..., Path], capsys: pytest.CaptureFixture[str]
) -> None:
    base = str(write_metallib("base/lib.metallib", FUNCTIONS))
    head = str(
        write_metallib(
            "head/lib.metallib", [(n, s + 100 * i) for i, (n, s) in enumerate(FUNCTIONS)]
        )
    )
    for top, count, rest in ((3, 4, []), (2, 2, ["rest (2 groups)"])):
        code, out, err = run_cli(
            ["compare", base, head, "--by", "function", "--top", str(top)], capsys
        )
        assert code == 0, err
        shown, folded = _names_and_rest(out)
        assert (len(shown), folded) == (count, rest), (top, out)
