"""The HTML report with download figures (``--download``): the data it embeds, and in headless
Chromium the treemap sized by download bytes (``Size by``, ``#measure=download``). A small
synthetic library whose modules are incompressible except one that compresses to almost nothing,
so the two measures order the functions differently."""

from __future__ import annotations

import hashlib
import json
import re
from pathlib import Path
from typing import Any

import pytest
from synthetic import new_function, new_library

from builder.cli.group import main
from builder.metallib import library_bytes
from builder.render.text import human_size
from builder.size.load import load_reports

PAINTED = "document.documentElement.getAttribute('data-painted') && window.__report"


@pytest.fixture
def library(tmp_path: Path) -> Path:
    """``zeros_float32`` is the largest file-wise and the cheapest to download."""
    parts = [new_function("zeros_float32", bytes(60_000))]
    for name, size in (("noise_a_float16", 20_000), ("noise_b_int32", 30_000)):
        parts.append(new_function(name, hashlib.shake_256(name.encode()).digest(size)))
    path = tmp_path / "lib.metallib"
    path.write_bytes(library_bytes(new_library(parts)))
    return path


def _page(library: Path, out: Path) -> tuple[Path, Any]:
    main(
        [
            "report",
            str(library),
            "--download",
            "--by",
            "function",
            "--format",
            "html",
            "-o",
            str(out),
        ]
    )
    (report,) = load_reports(str(library), by="function", download=True)
    return out, report


def test_page_embeds_the_download_shares(library: Path, tmp_path: Path) -> None:
    page, report = _page(library, tmp_path / "r.html")
    match = re.search(r'id="report-data">(.*?)</script>', page.read_text(), re.DOTALL)
    assert match
    lib = json.loads(match.group(1))["libraries"][0]
    assert lib["fn"]["download"] == report.download.functions
    assert lib["download"]["total"] == report.download.total
    assert sum(lib["fn"]["download"]) + sum(d for _, d in lib["download"]["overhead"]) == (
        report.download.total
    )
    assert 'id="measure-pick" hidden' in page.read_text()  # shown by the script when there is data


@pytest.mark.slow
@pytest.mark.browser
def test_treemap_and_table_follow_the_chosen_measure(
    browser: Any, library: Path, tmp_path: Path
) -> None:
    page, report = _page(library, tmp_path / "r.html")
    browser.open(page.as_uri() + "#measure=download")
    browser.wait_for(PAINTED)
    assert browser.eval("document.getElementById('measure-pick').hidden") is False
    assert f"({human_size(report.download.total)})" in browser.eval(
        "document.getElementById('crumbs').textContent"
    )
    first = browser.eval("document.querySelector('#table tbody td.name').textContent")
    by_download = max(zip(report.download.functions, (f.name for f in report.functions)))[1]
    assert first == by_download != "zeros_float32"
    header = "Array.from(document.querySelectorAll('#table thead th')).map(t => t.textContent)"
    note = "document.getElementById('table-note').textContent"
    assert "download bytes" in browser.eval(header)  # the column says what its numbers are
    assert "download bytes modelled from" in browser.eval(note)
    browser.eval(
        "var s = document.getElementById('measure'); s.value = 'bytes';"
        "s.dispatchEvent(new Event('change'))"
    )
    crumbs = browser.wait_for("document.getElementById('crumbs').textContent")
    assert f"({human_size(report.file_size)})" in crumbs
    assert (
        browser.eval("document.querySelector('#table tbody td.name').textContent")
        == "zeros_float32"
    )
    assert "download bytes" not in browser.eval(header) and "bytes" in browser.eval(header)
    assert "bytes measured in" in browser.eval(note)
    assert "measure" not in browser.eval("location.hash")
