"""``history``: sizes across releases, checked against the files themselves.

Three cached mlx-metal releases (macOS 14): each point's bytes must be ``os.stat`` of its cached
metallib, its groups those ``report`` measures, and the chart's line must be where those numbers
put it (its geometry is recomputed here from the SVG's own axis).
"""

from __future__ import annotations

import json
import os
import re
import zipfile
from collections.abc import Callable
from itertools import pairwise
from pathlib import Path
from typing import Any

import pytest
from clirun import run_cli

VERSIONS = ("0.30.0", "0.32.0", "0.32.4")
PLATFORM = "macosx_14_0_arm64"


def test_three_releases_give_their_true_sizes_and_a_chart(
    mlx_metallib: Callable[[str, str], Path], tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    files = [mlx_metallib(v, PLATFORM) for v in VERSIONS]  # cached: no download
    targets = [f"mlx-metal=={v}" for v in VERSIONS]
    page, doc = tmp_path / "history.html", tmp_path / "history.json"
    code, out, err = run_cli(["history", *targets, "-o", str(page), "-o", str(doc)], capsys)
    assert code == 0, err
    points = json.loads(doc.read_text())["points"]
    assert [p["target"] for p in points] == targets
    assert [p["bytes"] for p in points] == [os.stat(f).st_size for f in files]
    assert [p["measured_in"] for p in points] == [[str(f)] for f in files]
    for point, file in zip(points, files):
        _, report, _ = run_cli(["report", str(file), "--format", "json"], capsys)
        measured = json.loads(report)
        assert point["groups"] == [
            {"name": g["name"], "bytes": g["bytes"]} for g in measured["groups"]
        ]
        assert point["function_count"] == measured["function_count"]
    html = page.read_text()
    assert "http://" not in html.replace('xmlns="http://www.w3.org/2000/svg"', "")
    assert "https://" not in html and "<script" not in html
    sizes = [p["bytes"] for p in points]
    chart = html.split("<svg")[1]
    ticks = {
        float(y): text
        for y, text in re.findall(  # each grid line and the value it is labelled with
            r'y1="([\d.]+)"[^>]*class="grid"/><text[^>]*>([^<]+)<', chart
        )
    }
    zero_y, (top_y, top_text) = max(ticks), min(ticks.items())
    top_value = float(top_text.split()[0]) * {"MB": 1e6, "kB": 1e3}[top_text.split()[1]]
    line = re.search(r'<polyline points="([^"]+)"', chart)
    assert line is not None
    ys = [float(xy.split(",")[1]) for xy in line.group(1).split()]
    for y, size in zip(ys, sizes):  # y = zero_y - (zero_y - top_y) * size / top_value
        assert abs(y - (zero_y - (zero_y - top_y) * size / top_value)) < 0.1
    code, out, _ = run_cli(["history", *targets, "--top", "3"], capsys)
    for version, size in zip(VERSIONS, sizes):
        row = next(line for line in out.splitlines() if line.strip().startswith(version))
        assert f"{size / 1e6:.1f} MB" in row
    steps = json.loads(doc.read_text())["steps"]
    _steps_are_the_groups_that_moved_most(points, steps, out)
    page_moves = html.split("moved most", 1)[1]  # the page lists the same moves, in order
    cells = re.findall(r"<tr><td>[^<]*</td><td>([^<]*)</td>", page_moves)
    assert cells == [m["name"] for step in steps for m in step["moves"]]


def _steps_are_the_groups_that_moved_most(
    points: list[dict[str, Any]], steps: list[dict[str, Any]], text: str
) -> None:
    """Each step's moves: the 5 groups (history's default --top) whose bytes changed most from
    one point to the next, their deltas computed here from the points' groups (each checked
    against ``report`` above); a group that is not among the largest shows when it moved."""
    largest: set[str] = set()
    for point in points:
        largest |= {g["name"] for g in point["groups"][:5]}
    moved_outside_largest = []
    for step, (a, b) in zip(steps, pairwise(points), strict=True):
        assert (step["base"], step["head"]) == (a["target"], b["target"])
        assert step["delta_bytes"] == b["bytes"] - a["bytes"]
        before = {g["name"]: g["bytes"] for g in a["groups"]}
        after = {g["name"]: g["bytes"] for g in b["groups"]}
        deltas = {n: after.get(n, 0) - before.get(n, 0) for n in before.keys() | after.keys()}
        ranked = sorted(deltas.values(), key=abs, reverse=True)
        assert step["label_tokens"] is None  # MLX's groups explain the change as they are
        moves = [(m["name"], m["bytes"] - m["base_bytes"]) for m in step["moves"]]
        assert [d for _, d in moves] == ranked[:5]
        assert all(deltas[name] == d for name, d in moves)
        explained = sum(map(abs, ranked[:5])) / sum(map(abs, ranked))
        assert step["explained"] == pytest.approx(explained)
        moved_outside_largest += [name for name, _ in moves if name not in largest]
        assert f"{a['target'].split('==')[1]} → {b['target'].split('==')[1]}" in text
    assert moved_outside_largest  # growth outside the largest groups is shown


def test_download_size_is_the_deflate_size_a_zip_stores(
    write_metallib: Callable[..., Path], tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    old = write_metallib("old.metallib", [("vv_Addfloat32", 4000), ("v_copyfloat32float32", 900)])
    new = write_metallib("new.metallib", [("vv_Addfloat32", 5000), ("rope_float32", 2000)])
    expected = []
    for lib in (old, new):
        with zipfile.ZipFile(tmp_path / "ref.zip", "w", zipfile.ZIP_DEFLATED, compresslevel=6) as z:
            z.write(lib, lib.name)
        expected.append(zipfile.ZipFile(tmp_path / "ref.zip").getinfo(lib.name).compress_size)
    code, out, _ = run_cli(
        ["history", str(old), str(new), "--download", "--format", "json"], capsys
    )
    doc = json.loads(out)
    assert code == 0 and [p["download_bytes"] for p in doc["points"]] == expected
    assert doc["download_method"].startswith("modelled as report --download does: zlib level 6")
    assert [p["bytes"] for p in doc["points"]] == [old.stat().st_size, new.stat().st_size]
    code, out, _ = run_cli(["history", str(old), str(new), "--download"], capsys)
    assert "download" in out and "modelled as report --download does" in out


def test_history_mistakes(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    code, out, err = run_cli(["history", str(tmp_path / "none.metallib")], capsys)
    assert code == 2 and out == "" and "no such file" in err
    code, _, err = run_cli(["history", "x.metallib", "-o", str(tmp_path / "h.pdf")], capsys)
    assert code == 2 and "(use .md, .markdown, .html, .htm, .json, .csv, .txt" in err


def test_by_source_groups_every_target_by_the_trees_entry_files(
    mlx_metallib: Callable[[str, str], Path],
    mlx_style: Path,
    mlx_headers: Path,
    capsys: pytest.CaptureFixture[str],
) -> None:
    """``--source-dir`` (with -I as for report) names each function's entry file for every
    target; the reference sums ``list``'s per-function bytes by discovery's entry file."""
    from builder.kernels.discovery import load_tree

    versions = ("0.32.0", "0.32.4")
    files = [mlx_metallib(v, PLATFORM) for v in versions]
    code, out, err = run_cli(
        [
            "history",
            *(f"mlx-metal=={v}" for v in versions),
            "--source-dir",
            str(mlx_style),
            "-I",
            str(mlx_headers),
            "--format",
            "json",
        ],
        capsys,
    )
    assert code == 0, err
    entry_of = load_tree(mlx_style, include_dirs=[mlx_headers]).source_of()
    points = json.loads(out)["points"]
    for point, file in zip(points, files, strict=True):
        _, listed, _ = run_cli(["list", str(file), "--format", "json"], capsys)
        expected: dict[str, int] = {}
        for fn in json.loads(listed)["functions"]:
            source = entry_of.get(fn["name"], "other")
            expected[source] = expected.get(source, 0) + fn["bytes"]
        assert {g["name"]: g["bytes"] for g in point["groups"]} == expected
        assert {"arange_subset.metal", "unary_subset.metal"} <= set(expected)
    code, _, err = run_cli(["history", "mlx-metal==0.32.0", "--by", "source"], capsys)
    assert code == 2 and "--source-dir" in err and err.count("\n") <= 2
