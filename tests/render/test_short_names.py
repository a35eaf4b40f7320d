"""Tables never cut two different paths to the same text (issue 36, item 8): in an 80-column
terminal two libraries of one binary (torch's ``#__TEXT,metal_basic`` and ``#__TEXT,metal_40``)
or of two wheels (two mlx-metal releases) are shown by a short name, their identity or version,
with the whole name once in the title above (``member_names.shortened``)."""

from __future__ import annotations

import re

import pytest
from clirun import run_cli

from builder.inputs.member_names import shortened

TORCH = "torch==2.14.1:torch/lib/libtorch_cpu.dylib"


@pytest.mark.parametrize(
    ("labels", "short", "whole"),
    [
        (
            [f"{TORCH}#__TEXT,metal_basic", f"{TORCH}#__TEXT,metal_40"],
            ("__TEXT,metal_basic", "__TEXT,metal_40"),
            f"{TORCH}#…",
        ),
        (
            ["mlx-metal==0.32.0:mlx/lib/mlx.metallib", "mlx-metal==0.32.1:mlx/lib/mlx.metallib"],
            ("0.32.0", "0.32.1"),
            "mlx-metal==…:mlx/lib/mlx.metallib",
        ),
        (
            [
                "w/mlx_metal-0.31.0-py3-none-macosx_14_0_arm64.whl:mlx/lib/mlx.metallib",
                "w/mlx_metal-0.32.0-py3-none-macosx_14_0_arm64.whl:mlx/lib/mlx.metallib",
            ],
            ("0.31.0", "0.32.0"),
            "w/mlx_metal-…-py3-none-macosx_14_0_arm64.whl:mlx/lib/mlx.metallib",
        ),
        # nothing shared at a separator, or one name only: the names as they are
        (["a.metallib", "b.metallib"], ("a.metallib", "b.metallib"), None),
        (["x.so#1", "x.so#1"], ("x.so#1", "x.so#1"), None),
    ],
)
def test_short_names_keep_what_tells_them_apart(
    labels: list[str], short: tuple[str, ...], whole: str | None
) -> None:
    assert shortened(labels) == (short, whole)


def _at_80(
    args: list[str], capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> list[str]:
    """stdout of ``metallib-builder ARGS`` as an 80-column terminal gets it."""
    monkeypatch.setenv("COLUMNS", "80")
    monkeypatch.setattr("builder.cli.console.stdout_table_width", lambda: 80)
    code, out, err = run_cli(args, capsys)
    assert code == 0, err
    lines = out.splitlines()
    assert max(map(len, lines)) <= 80
    return lines


def _first_cells(lines: list[str], heading: str) -> list[str]:
    """The first cell of each row of the table whose heading row starts with ``heading``."""
    start = next(i for i, line in enumerate(lines) if re.match(rf"┃ {heading}\b", line))
    cells = []
    for line in lines[start + 2 :]:
        if not line.startswith("│"):
            break
        cell = line.split("│")[1].strip()
        if cell:
            cells.append(cell)
    return cells


@pytest.mark.realdata
def test_torch_libraries_keep_distinct_names_at_80_columns(
    capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    """``report torch==2.14.1``: the binary's parts and the duplicates table name the two
    libraries by their identities, whole, and the titles name the binary once."""
    lines = _at_80(
        ["report", "torch==2.14.1", "--platform", "macosx_14_0_arm64"], capsys, monkeypatch
    )
    parts = _first_cells(lines, "part of the binary")
    assert parts[:2] == ["__TEXT,metal_basic", "__TEXT,metal_40"]
    assert len(parts) == len(set(parts))
    row = next(line for line in lines if line.startswith("│ __TEXT,metal_basic │ __TEXT,metal_40"))
    assert "…" not in row
    text = " ".join(lines)
    assert text.count(f"{TORCH}#…") == 2  # once above each of the two tables


@pytest.mark.realdata
def test_two_wheels_keep_distinct_names_at_80_columns(
    capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    """``report`` of two mlx-metal releases: the duplicates table names them by version; the
    compare title holds both names whole."""
    specs = ["mlx-metal==0.32.0", "mlx-metal==0.32.1", "--platform", "macosx_14_0_arm64"]
    lines = _at_80(["report", *specs], capsys, monkeypatch)
    assert _first_cells(lines, "library") == ["0.32.0"]
    row = next(line for line in lines if line.startswith("│ 0.32.0 "))
    assert row.split("│")[2].strip() == "0.32.1"
    assert "mlx-metal==…:mlx/lib/mlx.metallib" in " ".join(lines)
    lines = _at_80(["compare", *specs], capsys, monkeypatch)
    for spec in specs[:2]:
        assert any(f"{spec}:mlx/lib/mlx.metallib" in line for line in lines)


def test_long_short_names_go_on_and_numbers_stay_whole() -> None:
    """Short names longer than the terminal leaves them (metal-linalg's symbols) go on over
    several lines, whole, and no cell of the table is cut at 80 columns."""
    from builder.render.duplicates import duplicates_table
    from builder.render.table import text_tables
    from builder.size.duplicates import Duplication, OnlyIn

    binary = "metal-linalg==2.19.0:metal_linalg/_core.cpython-312-darwin.so#"
    first, second = "_metal_linalg_QR_Streaming_AMX_Reduced_metallib", "_metal_linalg_Cholesky_x"
    only = OnlyIn(0, 0, [], [])
    pair = Duplication(binary + first, binary + second, 8, 46_570, 1, 4_420, ["a"], [], only, only)
    lines = text_tables([duplicates_table([pair], 13)], color=False, width=80).splitlines()
    rows = [line.split("│")[1:-1] for line in lines if line.startswith("│")]
    assert all("…" not in cell for row in rows for cell in row)
    assert "".join(row[0].strip() for row in rows) == first
    assert "".join(row[1].strip() for row in rows) == second
    assert "".join(row[2].strip() for row in rows).replace(" ", "") == "8(46.57kB)"
    assert max(map(len, lines)) <= 80
