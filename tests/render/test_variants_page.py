"""The ``variants --from --format html`` page in headless Chromium: a bar per variant split by
entry file, bar lengths in proportion to what ships, the search box highlighting an entry file's
segments and filtering the table, a shared ``#search=`` link, and no request beyond the file.
Expected values come from the JSON the same run wrote (OUTDIR/variants.json). Skipped loudly when
Chromium is not installed.
"""

from __future__ import annotations

import json
import sys
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import pytest
from mlx_tree import DATA, MLX_PLATFORM, MLX_VERSION
from render.chromium import Browser, chromium_path
from support.shared import shared_folder

from builder.cli.group import main

pytestmark = [pytest.mark.realdata, pytest.mark.browser]

PAINTED = "document.documentElement.getAttribute('data-painted') && window.__variants"


@pytest.fixture(scope="module")
def browser() -> Iterator[Browser]:
    if chromium_path() is None:
        pytest.skip(
            "CHROMIUM NOT INSTALLED: the variants page was not rendered in a browser "
            "(apt-get install chromium)"
        )
    with Browser(width=1400, height=1000) as b:
        yield b


@pytest.fixture(scope="session")
def page(
    mlx_metallib: Callable[[str, str], Path],
    mlx_headers: Path,
    tmp_path_factory: pytest.TempPathFactory,
) -> tuple[Path, dict[str, Any]]:
    """The page of one ``variants --from`` run, written once for all workers."""

    def make(tmp: Path) -> None:
        argv = [
            "variants",
            "--from",
            str(mlx_metallib(MLX_VERSION, MLX_PLATFORM)),
            "--source-dir",
            str(DATA),
            "-I",
            str(mlx_headers),
            "-o",
            str(tmp / "out"),
            "--jit",
            "unary_subset.metal,binary_subset.metal",
            "--aot",
            "arange_subset.metal",
            "--format",
            "html",
        ]
        stdout = sys.stdout
        with open(tmp / "variants.html", "w", encoding="utf-8") as sys.stdout:  # the page: stdout
            try:
                main(argv)
            finally:
                sys.stdout = stdout

    tmp = shared_folder(tmp_path_factory, "variants-page", make)
    return tmp / "variants.html", json.loads((tmp / "out" / "variants.json").read_text())


def _open(browser: Browser, url: str) -> dict[str, Any]:
    mark = len(browser.events)
    browser.open(url)
    state: dict[str, Any] = browser.wait_for(PAINTED)
    new = browser.events[mark:]
    assert not [e for e in new if e["method"] == "Runtime.exceptionThrown"]
    urls = [
        e["params"]["request"]["url"] for e in new if e["method"] == "Network.requestWillBeSent"
    ]
    assert urls and all(u.startswith("file://") for u in urls), urls
    return state


def test_a_bar_per_variant_split_by_entry_file(
    browser: Browser, page: tuple[Path, dict[str, Any]]
) -> None:
    html, doc = page
    variants = doc["variants"]
    state = _open(browser, html.as_uri())
    assert state["bars"] == len(variants) == 3
    segments = browser.eval(
        "Array.from(document.querySelectorAll('.vbar')).map(b => b.children.length)"
    )
    expected = [len(v["bytes_by_source"]) + 1 + (v["embedded_bytes"] > 0) for v in variants]
    assert segments == expected  # entry files (+ not in tree), overhead, embedded source
    widths = browser.eval(
        "Array.from(document.querySelectorAll('.vbar')).map(b => b.getBoundingClientRect().width)"
    )
    largest = max(v["total_bytes"] for v in variants)
    for width, v in zip(widths, variants):
        assert abs(width / max(widths) - v["total_bytes"] / largest) < 0.01, v["name"]


def test_search_highlights_an_entry_file_and_filters_the_table(
    browser: Browser, page: tuple[Path, dict[str, Any]]
) -> None:
    html, doc = page
    _open(browser, html.as_uri())
    browser.type_text("#search", "unary")
    status = browser.wait_for("document.getElementById('matches').textContent")
    assert status == "1 of 7 entry files match"
    hits = browser.eval(
        "Array.from(document.querySelectorAll('.vbar'))"
        ".map(b => b.querySelectorAll('i.hit').length)"
    )
    expected = [
        any(r["source"] == "unary_subset.metal" for r in v["bytes_by_source"])
        + ("unary_subset.metal" in v["jit_sources"])
        for v in doc["variants"]
    ]
    assert hits == expected and sum(hits) == 3
    cells = browser.eval(
        "Array.from(document.querySelectorAll('#table tbody tr')).map("
        "r => Array.from(r.children).map(c => c.textContent))"
    )
    row = ["unary_subset.metal"]
    for v in doc["variants"]:
        aot = {r["source"]: r["bytes"] for r in v["bytes_by_source"]}
        row.append(
            "JIT" if "unary_subset.metal" in v["jit_sources"] else f"{aot['unary_subset.metal']:,}"
        )
    assert cells == [row]
    assert browser.eval("location.hash") == "#search=unary"
    _open(browser, html.as_uri() + "#search=unary")  # a shared link shows the same
    assert browser.wait_for("document.getElementById('matches').textContent") == status
    assert browser.eval("document.querySelectorAll('i.hit').length") == 3
