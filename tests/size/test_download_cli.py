"""``report --download`` in every format and ``compare --download`` with its gates, on the saved
report of mlx-metal 0.28.0's wheel (computed once per session) and the 0.29.0 wheel.

Expected numbers come from the JSON the report saved (whose sums test_download.py checks against
the wheels) or from the zip directory, never from the output under test.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest
from clirun import run_cli

from builder.render.text import human_size

from .conftest import mlx_wheel, zip_members

pytestmark = pytest.mark.realdata


def _saved(download_report_28: tuple[Path, Path]) -> dict[str, Any]:
    doc: dict[str, Any] = json.loads(download_report_28[1].read_text())
    return doc


def test_table_shows_download_columns_the_model_line_and_the_wheels_files(
    download_report_28: tuple[Path, Path], capsys: pytest.CaptureFixture[str]
) -> None:
    wheel, saved = download_report_28
    doc = _saved(download_report_28)
    code, out, err = run_cli(["report", str(saved), "--top", "3"], capsys)
    assert code == 0, err
    assert "download" in out and "dl share" in out
    assert f"{doc['download_bytes']:,} bytes" in out  # the model's line
    member = doc["download_member"]["download_bytes"]
    assert f"{member:,} bytes compressed" in out
    assert str(wheel) in out.replace("\n", "")  # the files table names the wheel
    assert human_size(zip_members(wheel)["mlx/lib/libmlx.dylib"][1]) in out


def test_csv_and_markdown_carry_the_same_figures(
    download_report_28: tuple[Path, Path], capsys: pytest.CaptureFixture[str]
) -> None:
    wheel, saved = download_report_28
    doc = _saved(download_report_28)
    code, out, err = run_cli(["report", str(saved), "--format", "csv"], capsys)
    assert code == 0, err
    lines = out.splitlines()
    header = lines[0].split(",")
    assert header[-2:] == ["download_bytes", "download_share"]
    rows = [line.split(",") for line in lines[1:]]
    groups = {r[2]: int(r[6]) for r in rows if r[1] == "kernel" and r[2] != "[container overhead]"}
    assert groups == {g["name"]: g["download_bytes"] for g in doc["groups"]}
    files = {r[2]: (int(r[4]), int(r[6])) for r in rows if r[1] == "wheel file"}
    assert files == zip_members(wheel)
    code, out, err = run_cli(["report", str(saved), "--format", "markdown", "--top", "2"], capsys)
    assert code == 0, err
    assert "| download | dl share |" in out and "### Files in" in out
    assert f"{doc['download_bytes']:,} bytes" in out


def test_compare_shows_download_deltas_and_gates_on_them(
    download_report_28: tuple[Path, Path], capsys: pytest.CaptureFixture[str], tmp_path: Path
) -> None:
    _, saved = download_report_28
    head = tmp_path / "r29.json"
    code, _, err = run_cli(
        ["report", str(mlx_wheel("0.29.0")), "--download", "--format", "json", "-o", str(head)],
        capsys,
    )
    assert code == 0, err
    base_total, head_total = (
        _saved(download_report_28)["download_bytes"],
        json.loads(head.read_text())["download_bytes"],
    )
    growth = 100.0 * (head_total - base_total) / base_total
    assert 1 < growth < 10  # 0.29.0 grew by about 4%
    code, out, err = run_cli(
        ["compare", str(saved), str(head), "--format", "json", "--max-download-growth", "1%"],
        capsys,
    )
    assert code == 1 and "--max-download-growth 1%" in err
    doc = json.loads(out)
    assert doc["delta_download_bytes"] == head_total - base_total
    assert sum(g["delta_download_bytes"] for g in doc["groups"]) == head_total - base_total
    assert [g["passed"] for g in doc["gates"]] == [False]
    code, out, err = run_cli(
        [
            "compare",
            str(saved),
            str(head),
            "--format",
            "markdown",
            "--max-download-growth",
            "10%",
            "--max-download-size",
            str(head_total),
        ],
        capsys,
    )
    assert code == 0, err
    assert "download delta" in out and out.count("✅ pass") == 2
    code, _, err = run_cli(
        ["compare", str(saved), str(head), "--max-download-size", str(head_total - 1)], capsys
    )
    assert code == 1 and "--max-download-size" in err


def test_a_download_gate_without_download_figures_is_exit_2(
    download_report_28: tuple[Path, Path], capsys: pytest.CaptureFixture[str], tmp_path: Path
) -> None:
    doc = _saved(download_report_28)
    plain = {k: v for k, v in doc.items() if "download" not in k and k != "wheel"}
    plain["functions"] = [
        {k: v for k, v in f.items() if k != "download_bytes"} for f in doc["functions"]
    ]
    without = tmp_path / "plain.json"
    without.write_text(json.dumps(plain))
    code, out, err = run_cli(
        ["compare", str(without), str(download_report_28[1]), "--max-download-growth", "1%"], capsys
    )
    assert code == 2 and out == ""
    assert len(err.strip().splitlines()) == 1 and "without download figures" in err


def test_a_saved_report_whose_shares_do_not_add_up_is_refused(
    download_report_28: tuple[Path, Path], capsys: pytest.CaptureFixture[str], tmp_path: Path
) -> None:
    doc = _saved(download_report_28)
    doc["functions"][0]["download_bytes"] += 1000
    edited = tmp_path / "edited.json"
    edited.write_text(json.dumps(doc))
    code, _, err = run_cli(
        ["compare", str(edited), str(download_report_28[1]), "--max-download-growth", "1%"], capsys
    )
    assert code == 2 and "download_bytes says" in err
