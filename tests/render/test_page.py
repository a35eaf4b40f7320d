"""The HTML report as a file: self-contained, deterministic, safe to embed any name, small.

What the page draws is tested in a real browser (``test_browser.py``); these tests read the
file itself and the data it embeds.
"""

from __future__ import annotations

import json
import os
import re
from collections.abc import Callable
from pathlib import Path

import pytest

from builder.cli.group import main
from builder.render.html import compare_html, report_html
from builder.size.compare import compare_reports
from builder.size.load import load_reports
from builder.size.verdicts import Gates, evaluate_gates

FUNCTIONS = [
    ("v_copyfloat32float32", 300),
    ("v_copyfloat16float16", 200),
    ("vv_Addfloat32", 500),
    ("steel_gemm_fused_nn_float16_float16_bm64_bn64", 2000),
]
MAX_BYTES = 5_000_000
EXTERNAL = re.compile(r"""(?:src|href|action|srcset)\s*=\s*["']?\s*(?:https?:)?//""", re.IGNORECASE)


def embedded(page: str) -> dict:  # type: ignore[type-arg]
    match = re.search(
        r'<script type="application/json" id="report-data">(.*?)</script>', page, re.DOTALL
    )
    assert match, "no embedded data block"
    return json.loads(match.group(1))  # type: ignore[no-any-return]


def assert_self_contained(page: str) -> None:
    assert not EXTERNAL.search(page), EXTERNAL.search(page)
    assert "<link" not in page and "<script src" not in page and "@import" not in page
    assert "default-src 'none'" in page  # the CSP forbids any fetch even if a URL slipped in


def test_report_page_embeds_every_measured_function(
    write_metallib: Callable[..., Path], tmp_path: Path
) -> None:
    path = write_metallib("a.metallib", FUNCTIONS)
    reports = load_reports(str(path))
    page = report_html(reports)
    assert_self_contained(page)
    assert page == report_html(load_reports(str(path)))  # same input, same bytes
    data = embedded(page)
    (lib,) = data["libraries"]
    report = reports[0]
    assert lib["fn"]["name"] == [f.name for f in report.functions]
    assert lib["fn"]["bytes"] == [f.bytes for f in report.functions]
    assert [lib["groups"][g] for g in lib["fn"]["group"]] == [f.group for f in report.functions]
    # every byte of the file is in the page: functions plus named overhead
    assert sum(lib["fn"]["bytes"]) + sum(b for _, b in lib["overhead"]) == os.path.getsize(path)
    assert lib["origin"]["metallib"] == str(path)
    assert lib["provenance"]["library"]["format_version"] == report.format_version
    assert lib["provenance_line"].startswith("measured by metallib-builder")


def test_names_cannot_break_out_of_the_data_block(
    write_metallib: Callable[..., Path],
) -> None:
    hostile = "x</script><script>alert(1)</script><!--"
    path = write_metallib("evil.metallib", [(hostile, 100), ("v_copyfloat32float32", 100)])
    page = report_html(load_reports(str(path)))
    assert "<script>alert(1)" not in page
    assert page.count("</script>") == 2  # the data block and the program
    assert hostile in embedded(page)["libraries"][0]["fn"]["name"]


def test_compare_page_marks_added_and_removed(write_metallib: Callable[..., Path]) -> None:
    base = load_reports(str(write_metallib("b.metallib", FUNCTIONS)))[0]
    head_fns = [*FUNCTIONS[1:], ("rope_float32", 700)]
    head = load_reports(str(write_metallib("h.metallib", head_fns)))[0]
    comparison = compare_reports(base, head)
    gates = evaluate_gates(comparison, Gates(max_size=1))
    page = compare_html([(comparison, gates)])
    assert_self_contained(page)
    (lib,) = embedded(page)["libraries"]
    fn = lib["fn"]
    rows = dict(zip(fn["name"], zip(fn["base"], fn["bytes"])))
    assert rows["rope_float32"][0] == -1  # added: absent in base
    assert rows["v_copyfloat32float32"][1] == -1  # removed: absent in head
    assert lib["counts"] == {"added": 1, "removed": 1, "changed": len(comparison.changed)}
    assert lib["delta"] == head.file_size - base.file_size
    assert not lib["gates"][0]["passed"] and "--max-size" in lib["gates"][0]["message"]
    assert sum(b for b in fn["bytes"] if b > 0) + head.overhead_bytes == head.file_size
    assert sum(b for b in fn["base"] if b > 0) + base.overhead_bytes == base.file_size


def test_cli_writes_html_atomically(
    write_metallib: Callable[..., Path], tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    path = write_metallib("a.metallib", FUNCTIONS)
    out = tmp_path / "out" / "size.html"
    out.parent.mkdir()
    main(["report", str(path), "--format", "html", "-o", str(out)])
    text = out.read_text(encoding="utf-8")
    assert text.startswith("<!DOCTYPE html>") and text == report_html(load_reports(str(path)))
    assert capsys.readouterr().out == ""  # the page went to the file, not stdout
    assert [p.name for p in out.parent.iterdir()] == ["size.html"]  # no temporary left behind
    main(["compare", str(path), str(path), "--format", "html", "-o", str(out)])
    assert embedded(out.read_text(encoding="utf-8"))["mode"] == "compare"


@pytest.mark.realdata
@pytest.mark.parametrize(
    ("version", "platform"), [("0.30.0", "macosx_14_0_arm64"), ("0.32.0", "macosx_26_0_arm64")]
)
def test_real_library_page_stays_small(
    mlx_metallib: Callable[[str, str], Path], version: str, platform: str
) -> None:
    path = mlx_metallib(version, platform)
    (report,) = load_reports(str(path))
    page = report_html([report])
    size = len(page.encode("utf-8"))
    assert size <= MAX_BYTES, f"{size:,} bytes for {report.function_count:,} functions"
    assert_self_contained(page)
    lib = embedded(page)["libraries"][0]
    assert len(lib["fn"]["name"]) == report.function_count
    assert lib["provenance"]["library"]["compilers"], "no compiler identity found"


@pytest.mark.slow
def test_twenty_thousand_functions_stay_under_the_bound(
    write_metallib: Callable[..., Path],
) -> None:
    # long MLX-like names, so the name column is as large as a real library's at 20,000 functions
    functions = [
        (f"steel_gemm_fused_nn_bfloat16_bfloat16_bm64_bn64_bk32_wm2_wn2_{i}", 40)
        for i in range(20_000)
    ]
    page = report_html(load_reports(str(write_metallib("big.metallib", functions))))
    assert len(page.encode("utf-8")) <= MAX_BYTES


def test_every_page_has_the_one_head(write_metallib: Callable[..., Path], tmp_path: Path) -> None:
    """The report and the history page are the one shell's: the same head lines, each with its
    own title and Content-Security-Policy (the history page runs no script, so allows none)."""
    lib = write_metallib("a.metallib", FUNCTIONS)
    report = report_html(load_reports(str(lib)))
    history_file = tmp_path / "history.html"
    main(["history", str(lib), str(lib), "-o", str(history_file)])
    history = history_file.read_text(encoding="utf-8")
    heads = [page[: page.index("<body>")] for page in (report, history)]
    policy = re.compile(r'<meta http-equiv="Content-Security-Policy" content="([^"]*)">')
    scripted = "default-src 'none'; style-src 'unsafe-inline'; script-src 'unsafe-inline'"
    assert [policy.findall(head) for head in heads] == [
        [scripted + "; img-src data:"],
        ["default-src 'none'; style-src 'unsafe-inline'"],
    ]
    own = re.compile(
        r"<title>.*?</title>|<style>.*?</style>|content=\"default-src[^\"]*\"", re.DOTALL
    )
    assert own.sub("", heads[0]) == own.sub("", heads[1])
    assert '<meta name="viewport"' in heads[1] and "<script" not in history


def test_history_chart_points_are_the_files_sizes(
    write_metallib: Callable[..., Path], tmp_path: Path
) -> None:
    """The total chart is drawn from the history's rows: each point's tooltip names the size of
    its target's file, in the order given."""
    libs = [write_metallib(f"r{n}.metallib", FUNCTIONS[: n + 2]) for n in range(3)]
    page = tmp_path / "history.html"
    main(["history", *map(str, libs), "-o", str(page)])
    total_chart = page.read_text(encoding="utf-8").split("</svg>")[0]
    points = re.findall(r"<title>metallib size, [^<]*\(([\d,]+) bytes\)</title>", total_chart)
    assert [int(p.replace(",", "")) for p in points] == [lib.stat().st_size for lib in libs]
