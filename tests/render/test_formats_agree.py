"""Every format of one result holds the same numbers, and they are the right ones.

Two kinds of test:

* against a reference: a synthetic metallib is measured by the library's reader (each function's
  bytes, the file's size), the groups, shares, cumulative shares and deltas are computed here,
  independently of ``builder.size`` and ``builder.render``, and every format the CLI writes
  (table, markdown, CSV, JSON, the HTML page's data, the PR comment) is parsed and held against
  them, for ``report`` and ``compare``;
* against the model: for every result made into tables (``builder.render.table``), every cell
  each writer prints is the row's value as its column's kind says, so no two formats of any
  result can disagree.
"""

from __future__ import annotations

import csv
import io
import json
import os
import re
from collections.abc import Callable
from pathlib import Path

import pytest
from clirun import run_cli

from builder.metallib import Piece, open_metallib
from builder.render.text import human_delta, human_size

# Sizes chosen so no two functions tie and the rest row folds several.
BASE = [
    ("kernel_alpha", 1900),
    ("kernel_beta", 1500),
    ("kernel_gamma", 1450),
    ("kernel_delta", 700),
    ("kernel_epsilon", 420),
    ("kernel_zeta", 160),
]
HEAD = [
    ("kernel_alpha", 1200),
    ("kernel_beta", 2600),
    ("kernel_gamma", 1450),
    ("kernel_delta", 705),
    ("kernel_eta", 880),
    ("kernel_zeta", 160),
]
TOP = 3


def _reference(path: Path) -> tuple[int, dict[str, int]]:
    """The file's size and each function's bytes, read by the container reader."""
    with open_metallib(path) as lib:
        sizes = {fn.name: sum(len(fn.stored(piece)) for piece in Piece) for fn in lib.functions}
    return os.path.getsize(path), sizes


def _pct(part: int, whole: int) -> str:
    return f"{100.0 * part / whole:.1f}%"


def _text_rows(out: str) -> list[list[str]]:
    """The body rows of the first rich table of ``out`` (box characters as printed to a pipe)."""
    rows = []
    for line in out.splitlines():
        if line.startswith("│"):
            rows.append([c.strip() for c in line.strip("│").split("│")])
        elif line.startswith("└"):
            break
    return rows


def _md_rows(out: str, header: str) -> list[list[str]]:
    """The rows of the markdown table whose header line starts with ``header``."""
    lines = out.splitlines()
    start = next(i for i, line in enumerate(lines) if line.startswith(header))
    rows = []
    for line in lines[start + 2 :]:
        if not line.startswith("|"):
            break
        rows.append([c.strip() for c in re.split(r"(?<!\\)\|", line)[1:-1]])
    return rows


@pytest.fixture
def libraries(write_metallib: Callable[..., Path]) -> tuple[Path, Path]:
    return write_metallib("base.metallib", BASE), write_metallib("head.metallib", HEAD)


def test_every_format_of_a_report_holds_the_reference(
    libraries: tuple[Path, Path], capsys: pytest.CaptureFixture[str]
) -> None:
    path = libraries[1]
    whole, sizes = _reference(path)
    ordered = sorted(sizes.items(), key=lambda item: (-item[1], item[0]))
    shown, rest = ordered[:TOP], ordered[TOP:]
    overhead = whole - sum(sizes.values())
    running, cumulative = 0, []
    for _, size in [*shown, ("rest", sum(s for _, s in rest))]:
        running += size
        cumulative.append(_pct(running, whole))
    args = ["report", str(path), "--by", "function", "--top", str(TOP), "--format"]

    # the terminal table: name, functions, size, bytes, share, cumulative
    code, out, err = run_cli([*args, "table"], capsys)
    assert code == 0, err
    rows = _text_rows(out)
    expected = [
        [name, "1", human_size(size), f"{size:,}", _pct(size, whole), cumulative[i]]
        for i, (name, size) in enumerate(shown)
    ]
    rest_bytes = sum(s for _, s in rest)
    expected.append(
        [
            f"rest ({len(rest)} groups)",
            str(len(rest)),
            human_size(rest_bytes),
            f"{rest_bytes:,}",
            _pct(rest_bytes, whole),
            cumulative[-1],
        ]
    )
    expected.append(
        ["[container overhead]", "", human_size(overhead), f"{overhead:,}"]
        + [_pct(overhead, whole), "100.0%"]
    )
    expected.append(["total", str(len(sizes)), human_size(whole), f"{whole:,}", "100.0%", ""])
    assert rows == expected

    # markdown: the same rows without the exact bytes, names as code
    code, out, err = run_cli([*args, "markdown"], capsys)
    assert code == 0, err
    md = _md_rows(out, "| function |")
    assert md == [
        [
            f"`{r[0]}`" if i < TOP else r[0] if i < len(expected) - 1 else "**total**",
            *r[1:3],
            *r[4:],
        ]
        for i, r in enumerate(expected)
    ]

    # CSV: every group (no --top for machines unless asked), share of the file with six places
    code, out, err = run_cli([*args, "csv"], capsys)
    assert code == 0, err
    records = list(csv.DictReader(io.StringIO(out)))
    groups = {r["group"]: r for r in records if r["by"] == "function"}
    assert list(groups) == [n for n, _ in shown] + ["[rest]", "[container overhead]"]
    for name, size in shown:
        assert groups[name]["bytes"] == str(size)
        assert groups[name]["share"] == f"{size / whole:.6f}"
        assert groups[name]["function_count"] == "1"
    assert groups["[rest]"]["bytes"] == str(rest_bytes)
    assert groups["[rest]"]["share"] == f"{rest_bytes / whole:.6f}"
    assert groups["[container overhead]"]["bytes"] == str(overhead)
    code, out, err = run_cli(["report", str(path), "--by", "function", "--format", "csv"], capsys)
    every = {r["group"]: r for r in csv.DictReader(io.StringIO(out))}
    for name, size in sizes.items():
        assert every[name]["bytes"] == str(size)
        assert every[name]["share"] == f"{size / whole:.6f}"
    assert sum(int(r["bytes"]) for r in every.values()) == whole

    # JSON: every group's bytes and count, the overhead, the file
    code, out, err = run_cli(["report", str(path), "--by", "function", "--format", "json"], capsys)
    doc = json.loads(out)
    assert [(g["name"], g["bytes"], g["function_count"]) for g in doc["groups"]] == [
        (name, size, 1) for name, size in ordered
    ]
    assert (doc["file_size"], doc["overhead_bytes"]) == (whole, overhead)

    # the HTML page's data: every function's bytes
    code, out, err = run_cli(["report", str(path), "--by", "function", "--format", "html"], capsys)
    data = json.loads(
        re.search(
            r'<script type="application/json" id="report-data">(.*?)</script>', out, re.DOTALL
        )[1]  # type: ignore[index]
    )
    (lib,) = data["libraries"]
    assert dict(zip(lib["fn"]["name"], lib["fn"]["bytes"])) == sizes
    assert lib["file_size"] == whole


def test_every_format_of_a_comparison_holds_the_reference(
    libraries: tuple[Path, Path], capsys: pytest.CaptureFixture[str]
) -> None:
    base_path, head_path = libraries
    base_whole, base = _reference(base_path)
    head_whole, head = _reference(head_path)
    names = dict.fromkeys([*base, *head])
    deltas = {n: head.get(n, 0) - base.get(n, 0) for n in names}
    ordered = sorted(names, key=lambda n: (-abs(deltas[n]), -head.get(n, 0), n))
    shown, rest = ordered[:TOP], ordered[TOP:]

    def percent(b: int, h: int) -> str:
        return "new" if b == 0 else f"{100.0 * (h - b) / b:+.1f}%"

    args = ["compare", str(base_path), str(head_path), "--by", "function", "--top", str(TOP)]
    code, out, err = run_cli([*args, "--format", "table"], capsys)
    assert code == 0, err
    rows = _text_rows(out)
    for row, name in zip(rows, shown, strict=False):
        b, h = base.get(name, 0), head.get(name, 0)
        assert row == [
            name,
            str(int(name in base)),
            str(int(name in head)),
            human_size(b),
            human_size(h),
            human_delta(h - b),
            percent(b, h),
        ]
    rest_b = sum(base.get(n, 0) for n in rest)
    rest_h = sum(head.get(n, 0) for n in rest)
    assert rows[TOP][0] == f"rest ({len(rest)} groups)"
    assert rows[TOP][3:] == [
        human_size(rest_b),
        human_size(rest_h),
        human_delta(rest_h - rest_b),
    ] + [percent(rest_b, rest_h)]
    total = rows[-1]
    assert total[3:] == [
        human_size(base_whole),
        human_size(head_whole),
        human_delta(head_whole - base_whole),
        percent(base_whole, head_whole),
    ]

    # the PR comment (compare's markdown): base, head, delta, delta % of the same rows
    code, out, err = run_cli([*args, "--format", "markdown"], capsys)
    md = _md_rows(out, "| function | base |")
    for row, name in zip(md, shown, strict=False):
        b, h = base.get(name, 0), head.get(name, 0)
        assert row == [f"`{name}`", human_size(b), human_size(h), human_delta(h - b), percent(b, h)]
    assert md[-1] == [
        "**total**",
        human_size(base_whole),
        human_size(head_whole),
        f"**{human_delta(head_whole - base_whole)}**",
        percent(base_whole, head_whole),
    ]

    # CSV and JSON: every group, exact
    code, out, err = run_cli([*args[:-2], "--format", "csv"], capsys)
    records = {r["group"]: r for r in csv.DictReader(io.StringIO(out))}
    code, out, err = run_cli([*args[:-2], "--format", "json"], capsys)
    groups = {g["name"]: g for g in json.loads(out)["groups"]}
    for name in names:
        b, h = base.get(name, 0), head.get(name, 0)
        record = records[name]
        assert (int(record["base_bytes"]), int(record["head_bytes"])) == (b, h)
        assert int(record["delta_bytes"]) == h - b
        assert record["delta_percent"] == ("" if b == 0 else f"{100.0 * (h - b) / b:.4f}")
        g = groups[name]
        assert (g["base_bytes"], g["head_bytes"], g["delta_bytes"]) == (b, h, h - b)
    assert records["[total]"]["delta_bytes"] == str(head_whole - base_whole)
