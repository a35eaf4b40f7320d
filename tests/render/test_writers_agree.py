"""Every writer of every result prints its model's values, and JSON agrees with them.

Each result is made into tables (``builder.render.table``) as the CLI makes it; the test renders
them with each writer and reads every cell back: the terminal table, markdown and CSV must show
each row's value as its column's kind says (``cell_text``), in the model's order, and each key the
result's JSON shares with a column must hold the same number. A writer that computes a figure of
its own, drops a row or shifts a column fails here, for whichever result it happens in.
"""

from __future__ import annotations

import csv
import io
import json
import re
from collections.abc import Callable, Iterator
from dataclasses import replace
from pathlib import Path
from types import SimpleNamespace
from typing import TYPE_CHECKING, cast

import pytest

from builder.cmake_build.driver import PresetResult
from builder.publish.outputs import (
    budget_output,
    comparison_output,
    history_output,
    presets_output,
    report_output,
    sources_output,
    variants_output,
)
from builder.render.budget_tables import budget_table
from builder.render.build import presets_table
from builder.render.compare_tables import compare_tables
from builder.render.history_tables import history_tables, moves_table
from builder.render.library import sources_tables
from builder.render.report_tables import report_tables
from builder.render.table import Table, cell_text, markdown_tables
from builder.render.table_csv import csv_records
from builder.render.text import visible
from builder.render.variants import variants_tables
from builder.settings.validators import Limit
from builder.size.compare import compare_reports
from builder.size.history import library_histories, measure_history
from builder.size.host_strings import HostString
from builder.size.load import load_reports
from builder.size.verdicts import Gates, Verdict, evaluate_gates
from builder.subsets.coverage import JitSources
from builder.subsets.variant_plan import Plan, PlannedFile, Step
from builder.subsets.variants import Variant, VariantsInput, VariantsRun

if TYPE_CHECKING:
    from builder.cmake_build.driver import BuildOutcome

BASE = [
    ("v_copyfloat32float32", 300),
    ("v_copyfloat16float16", 200),
    ("vv_Addfloat32", 500),
    ("vv_Addfloat16", 450),
    ("steel_gemm_fused_nn_float16_float16_bm64_bn64", 2000),
    ("arange_float32", 120),
    ("rbits", 50),
]
HEAD = [*BASE[:4], ("steel_gemm_fused_nn_float16_float16_bm64_bn64", 2600), ("rope_float32", 333)]


def _text_blocks(out: str) -> Iterator[tuple[list[str], list[list[str]]]]:
    """Each rich table printed to a pipe: its headings and its rows' cells (boxed tables, and
    compact ones: a rule under the heading, cells apart by two spaces or more)."""
    header: list[str] = []
    rows: list[list[str]] = []
    lines = out.splitlines()
    compact = False
    for at, line in enumerate(lines):
        if line.startswith("┃"):
            header = [c.strip() for c in line.strip("┃").split("┃")]
        elif line.startswith("│"):
            rows.append([c.strip() for c in line.strip("│").split("│")])
        elif line.startswith("└"):
            yield header, rows
            header, rows = [], []
        elif line.strip().startswith("─") and at and set(line.strip()) == {"─"}:
            header, compact = re.split(r"\s{2,}", lines[at - 1].strip()), True
        elif compact and line.strip():  # an empty cell leaves no trace here: marked None
            rows.append([*re.split(r"\s{2,}", line.strip()), None])  # type: ignore[list-item]
        elif compact:
            yield header, rows
            header, rows, compact = [], [], False


def _md_blocks(out: str) -> Iterator[tuple[list[str], list[list[str]]]]:
    lines = out.splitlines()
    at = 0
    while at < len(lines):
        if lines[at].startswith("|") and at + 1 < len(lines) and lines[at + 1].startswith("|---"):
            header = [c.strip() for c in lines[at].split("|")[1:-1]]
            rows, at = [], at + 2
            while at < len(lines) and lines[at].startswith("|"):
                rows.append([c.strip() for c in re.split(r"(?<!\\)\|", lines[at])[1:-1]])
                at += 1
            yield header, rows
        at += 1


def _check_text(tables: list[Table], out: str) -> None:
    blocks = list(_text_blocks(out))
    assert len(blocks) == len(tables)
    for table, (header, cells) in zip(tables, blocks, strict=True):
        columns = [c for c in table.columns if "text" in c.media]
        assert header == [c.heading for c in columns]
        rows = [r for r in table.rows if "text" in r.media]
        expected = []
        for row in rows:
            line = [cell_text(c.kind, row.values[table.columns.index(c)], "text") for c in columns]
            line = [visible(cell) for cell in line]
            if row.depth:
                line[0] = "└ " + line[0]
            expected.append(line)
        if any(c and c[-1] is None for c in cells):  # compact: compare the cells that show
            cells = [c[:-1] for c in cells]
            expected = [[e for e in line if e] for line in expected]
        assert cells == expected


def _check_markdown(tables: list[Table], out: str) -> None:
    blocks = list(_md_blocks(out))
    assert len(blocks) == len(tables)
    for table, (header, cells) in zip(tables, blocks, strict=True):
        columns = [c for c in table.columns if "markdown" in c.media]
        assert header == [c.heading for c in columns]
        rows = [r for r in table.rows if "markdown" in r.media]
        assert len(cells) == len(rows)
        for row, printed in zip(rows, cells, strict=True):
            for column, cell in zip(columns, printed, strict=True):
                value = cell_text(column.kind, row.values[table.columns.index(column)], "markdown")
                assert _plain(cell.removeprefix("↳ ")) == _plain(value)


def _plain(cell: str) -> str:
    """A markdown cell without its emphasis and code marks."""
    return cell.replace("*", "").replace("`", "")


def _check_csv(tables: list[Table], out: str) -> None:
    records = list(csv.DictReader(io.StringIO(out)))
    expected = []
    for table in tables:
        rows = [r for r in table.rows if "csv" in r.media]
        parent = ""
        for at, row in enumerate(rows):
            if row.role == "total" and table.csv_total is None:
                continue
            name = table.csv_prefix + ("[rest]" if row.role == "rest" else str(row.values[0]))
            if at + 1 < len(rows) and rows[at + 1].depth > row.depth:
                parent = name
                continue  # a group written as its children
            fields = {
                c.key: cell_text(c.kind, v, "csv")
                for c, v in zip(table.columns, row.values, strict=True)
                if "csv" in c.media
            }
            key = table.columns[0].key
            fields[key] = (table.csv_total or "") if row.role == "total" else name
            if row.depth:
                fields[key], fields["subgroup"] = parent, name
            expected.append({**dict(table.context), **fields})
    assert len(records) == len(expected)
    for record, fields in zip(records, expected, strict=True):
        assert {k: record[k] for k in fields} == fields


def _check_json(tables: list[Table], objects: list[dict[str, object]]) -> None:
    """Each named row's numbers equal the JSON object of the same name, key by key."""
    by_name = {o["name"]: o for o in objects}
    checked = 0
    for table in tables:
        for row in table.rows:
            if row.role != "row" or row.depth:
                continue
            found = by_name[row.values[0]]
            for column, value in zip(table.columns, row.values, strict=True):
                if column.key in found and column.kind != "text":
                    assert found[column.key] == value, (row.values[0], column.key)
                    checked += 1
    assert checked


@pytest.fixture
def paths(write_metallib: Callable[..., Path]) -> tuple[str, str]:
    return str(write_metallib("a.metallib", BASE)), str(write_metallib("b.metallib", HEAD))


@pytest.mark.parametrize(
    ("by", "download", "top"),
    [
        ("kernel", False, 2),
        ("kernel,dtype", False, 1),
        ("function", True, 3),
        ("dtype", True, None),
        ("param", False, 1),
    ],
)
def test_every_report_format_prints_the_model(
    paths: tuple[str, str], by: str, download: bool, top: int | None
) -> None:
    reports = load_reports(paths[0], by=by, download=download)
    tables = report_tables(reports, top)
    _check_text(tables, report_output(reports, "table", top, False, None))
    _check_markdown(tables, report_output(reports, "markdown", top, False, None))
    _check_csv(tables, report_output(reports, "csv", top, False, None))
    doc = json.loads(report_output(reports, "json", top, False, None))
    _check_json(tables, doc["groups"])


@pytest.mark.parametrize("download", [False, True])
def test_every_comparison_format_prints_the_model(paths: tuple[str, str], download: bool) -> None:
    (base,) = load_reports(paths[0], download=download)
    (head,) = load_reports(paths[1], download=download)
    comparison = compare_reports(base, head)
    evaluated = [(comparison, evaluate_gates(comparison, Gates(max_growth=Limit(percent=1.0))))]
    tables = compare_tables(evaluated, 2)
    _check_text(tables, comparison_output(evaluated, "table", 2, False, None))
    _check_csv(compare_tables(evaluated, None), comparison_output(evaluated, "csv", 2, False, None))
    doc = json.loads(comparison_output(evaluated, "json", 2, False, None))
    _check_json(compare_tables(evaluated, None), doc["groups"])
    # the PR comment writes the same rows in its columns
    comment = comparison_output(evaluated, "markdown", None, False, None)
    (header, rows), *_ = _md_blocks(comment)
    table = compare_tables(evaluated, None)[0]
    assert header[:5] == [table.columns[0].heading, "base", "head", "delta", "delta %"]
    for row, printed in zip(table.rows, rows, strict=True):
        keys = ["base_bytes", "head_bytes", "delta_bytes", "delta_percent"]
        values = [
            cell_text(c.kind, table.value(row, c.key), "markdown")
            for c in table.columns
            if c.key in keys
        ]
        assert [c.strip("*") for c in printed[1:5]] == values


def test_every_cap_format_prints_the_model() -> None:
    verdicts = [
        Verdict("max-size", "mlx, macOS 26", 1_000, 1_500, measured_in=("a.metallib",)),
        Verdict("groups", "mlx, macOS 26", 600, 700, group="gemm", measured_in=("a.metallib",)),
        Verdict("max-functions", "mlx, macOS 26", 20, 12, measured_in=("a.metallib",)),
    ]
    table = budget_table(verdicts, "pyproject.toml")
    _check_text([table], budget_output(verdicts, "pyproject.toml", "table", False, None))
    _check_markdown([table], budget_output(verdicts, "pyproject.toml", "markdown", False, None))
    _check_csv([table], budget_output(verdicts, "pyproject.toml", "csv", False, None))
    doc = json.loads(budget_output(verdicts, "pyproject.toml", "json", False, None))
    for row, verdict in zip(table.rows, doc["verdicts"], strict=True):
        assert (table.value(row, "passed"), row.values[5], row.values[7]) == (
            verdict["passed"],
            verdict["limit"],
            verdict["value"],
        )


def test_every_history_format_prints_the_model(paths: tuple[str, str]) -> None:
    points = measure_history(list(paths), download=True)
    histories = library_histories(points, 3)
    tables = history_tables(histories, "kernel")
    moves = moves_table(histories[0], "kernel")  # the groups that moved most: not in CSV
    assert moves is not None
    _check_text([*tables, moves], history_output(histories, "kernel", "table", False, None))
    people = [*tables, moves]
    _check_markdown(people, history_output(histories, "kernel", "markdown", False, None))
    _check_csv(tables, history_output(histories, "kernel", "csv", False, None))
    doc = json.loads(history_output(histories, "kernel", "json", False, None))
    (table,) = tables
    for row, point in zip(table.rows, doc["points"], strict=True):
        groups = {g["name"]: g["bytes"] for g in point["groups"]}
        assert table.value(row, "bytes") == point["bytes"]
        assert table.value(row, "download_bytes") == point["download_bytes"]
        assert table.value(row, "function_count") == point["function_count"]
        for column in table.columns[5:]:
            assert table.value(row, column.key) == groups.get(column.key)


def test_every_sources_format_prints_the_model() -> None:
    found = [
        (
            "mlx/lib/libmlx.dylib",
            [
                HostString("mlx::core::metal::utils", "arm64", 0x1000, 0x2000, 4_000),
                HostString(None, "x86_64", 0x3000, 0x5000, 120),
            ],
        )
    ]
    tables = sources_tables("mlx-metal==0.32.0", found, None)
    _check_text(tables, sources_output("mlx-metal==0.32.0", found, None, "table", False, None))
    doc = json.loads(sources_output("mlx-metal==0.32.0", found, None, "json", False, None))
    (table,) = tables
    assert [table.value(r, "bytes") for r in table.rows[:-1]] == [
        s["bytes"] for s in doc["host_sources"]
    ]
    assert table.value(table.rows[-1], "bytes") == doc["bytes"]
    _check_markdown(tables, markdown_tables(tables))
    _check_csv(tables, csv_records(tables))


def test_a_group_named_like_markup_heads_a_history_column_inert(
    write_metallib: Callable[..., Path],
) -> None:
    """A history's group columns are headed by group names, untrusted like any name: in the
    terminal, markdown and CSV the heading is escaped as a cell is."""
    hostile = "=x[bold]\x1b[2J|y"
    path = str(write_metallib("h.metallib", [("kernel_a", 900), ("kernel_b", 300)]))
    points = measure_history([path], by="function")
    points = [replace(p, groups=[replace(g, name=hostile) for g in p.groups[:1]]) for p in points]
    histories = library_histories(points, 3)
    text = history_output(histories, "function", "table", False, None)
    assert "\x1b" not in text and "\\x1b[2J" in text and "[bold]" in text
    markdown = history_output(histories, "function", "markdown", False, None)
    assert "\x1b" not in markdown and "\\|y" in markdown and "\\[bold\\]" in markdown
    header = next(
        csv.reader(io.StringIO(history_output(histories, "function", "csv", False, None)))
    )
    assert header[-1] == "'" + hostile.replace("\x1b", "\\x1b")


def _variants_run(download: bool) -> VariantsRun:
    """A run of three variants as ``variants --from`` makes them: the input as it is, one with
    an entry file JIT (its plan moved it), one whose plan moved nothing."""
    sources = JitSources(
        text="",
        preambles=("utils",),
        files=1,
        embedded_bytes=4_321,
        compressed_bytes=1_234,
        storage="deduplicated",
        headers=(),
        embed_args=("embed", "unary.metal"),
        stored={},
    )
    moved = Plan(
        ceiling=9_000,
        all_aot_bytes=10_000,
        least_bytes=7_000,
        jit=("unary.metal",),
        metallib_bytes=8_500,
        kernels=21,
        embedded_bytes=4_321,
        start="greedy",
        steps=(Step("aot", "binary.metal", 4, 8_500),),
        files=(PlannedFile("unary.metal", 21, 1_500, 10_000),),
        exact_layouts=3,
    )
    kept = replace(moved, ceiling=20_000, jit=(), metallib_bytes=10_000, kernels=0, files=())

    def variant(name: str, jit: tuple[str, ...], size: int, plan: Plan | None) -> Variant:
        file = Path(f"out/{name}/jit_sources.cpp") if jit else None
        downloaded = size // 3 if download else None
        return Variant(
            name=name,
            description=f"{name} [of] `a`",
            metallib=Path(f"out/{name}/a.metallib"),
            metallib_bytes=size,
            function_count=7,
            sources_file=file,
            embedded_bytes=sources.embedded_bytes if jit else 0,
            embedded_storage=sources.storage if jit else None,
            embedded_compressed_bytes=sources.compressed_bytes if jit else 0,
            total_bytes=size + (sources.embedded_bytes if jit else 0),
            total_compressed_bytes=size + (sources.compressed_bytes if jit else 0),
            metallib_download_bytes=downloaded,
            total_download_bytes=None
            if downloaded is None
            else downloaded + (sources.compressed_bytes if jit else 0),
            jit=jit,
            aot=("binary.metal",),
            jit_kernels=21 if jit else 0,
            jit_kernels_discovered=21 if jit else 0,
            aot_kernels=4,
            other_kernels=0,
            preambles=sources.preambles if jit else (),
            embed_command=("metallib-builder", *sources.embed_args, "-o", str(file))
            if jit
            else None,
            overhead_bytes=144,
            plan=plan,
            sources=sources if jit else None,
        )

    source = VariantsInput(
        target="a.metallib",
        metallib=Path("a.metallib"),
        wheel=None,
        file_size=10_000,
        function_count=7,
        tree_root=Path("kernels"),
        tree_kind="tree",
        config=None,
        entry_files=2,
        tree_kernels=25,
        not_in_tree=0,
        missing=0,
    )
    variants = (
        variant("all-aot", (), 10_000, None),
        variant("planned", ("unary.metal",), 8_500, moved),
        variant("fits", (), 10_000, kept),
    )
    return VariantsRun(source, variants, Path("out"))


@pytest.mark.parametrize("download", [False, True])
def test_every_variants_format_prints_the_model(download: bool) -> None:
    run = _variants_run(download)
    tables = variants_tables(run)
    assert len(tables) == 2  # the variants, the plan that moved a file (the other says so)
    _check_text(tables, variants_output(run, "table"))
    _check_markdown(tables, variants_output(run, "markdown"))
    _check_csv(tables[:1], variants_output(run, "csv"))
    doc = json.loads(variants_output(run, "json"))
    _check_json(tables[:1], doc["variants"])
    (plan,) = [v["plan"] for v in doc["variants"] if v["plan"] and v["plan"]["files"]]
    for row, moved in zip(tables[1].rows, plan["files"], strict=True):
        assert {c.key: v for c, v in zip(tables[1].columns, row.values, strict=True)} == moved
    assert "Nothing moved to JIT" in variants_output(run, "markdown")


def test_every_presets_format_prints_the_model(paths: tuple[str, str]) -> None:
    """Two builds side by side: each column's rows are its report's groups and overhead, and
    add up to what the preset ships."""
    results = [
        PresetResult(
            name,
            f"{name} [build]",
            cast("BuildOutcome", SimpleNamespace(seconds=1.25)),
            None,
            report,
        )
        for name, path in (("one", paths[0]), ("two", paths[1]))
        for report in load_reports(path)
    ]
    results.append(PresetResult("three", "needs Metal", None, "no Metal compiler"))
    table = presets_table(results)
    _check_text([table], presets_output(results, "table"))
    _check_markdown([table], presets_output(results, "markdown"))
    _check_csv([table], presets_output(results, "csv"))
    doc = json.loads(presets_output(results, "json"))
    for preset in doc["presets"][:2]:
        name, report = preset["name"], preset["report"]
        sizes = {table.value(r, "group"): table.value(r, f"{name}_bytes") for r in table.rows}
        assert sizes["total shipped"] == preset["shipped_bytes"]
        for group in report["groups"]:
            assert sizes[group["name"]] == group["bytes"]
        assert sizes["[container overhead]"] == report["overhead_bytes"]
        rows = table.rows[: [r.role for r in table.rows].index("total")]  # the units, overhead
        column = [cast("int | None", table.value(r, f"{name}_bytes")) for r in rows]
        assert sum(size or 0 for size in column) == preset["shipped_bytes"]
    assert "not built: three" in presets_output(results, "table")
