"""The HTML report of real mlx-metal libraries, rendered in headless Chromium.

Checks what a person would see: the treemap drew (a screenshot of it is far from blank), the
kernel families are labelled, the search box filters the table and highlights cells, a click
zooms, a shared link (``#search=``) restores the view, and the page asked the network for nothing
but its own file. Expected values come from the report the page was made from, never from the
page itself. Skipped loudly when Chromium is not installed.
"""

from __future__ import annotations

import json
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest

from builder.cli.group import main
from builder.size.compare import compare_reports
from builder.size.load import load_reports

pytestmark = [pytest.mark.realdata, pytest.mark.slow, pytest.mark.browser]

PAINTED = "document.documentElement.getAttribute('data-painted') && window.__report"


def _render(argv: list[str], out: Path) -> Path:
    main([*argv, "--format", "html", "-o", str(out)])
    return out


def _open(browser: Any, url: str) -> dict[str, Any]:
    mark = len(browser.events)
    browser.open(url)
    report: dict[str, Any] = browser.wait_for(PAINTED)
    new = browser.events[mark:]
    errors = [e for e in new if e["method"] == "Runtime.exceptionThrown"]
    assert not errors, errors
    urls = [
        e["params"]["request"]["url"] for e in new if e["method"] == "Network.requestWillBeSent"
    ]
    assert urls and all(u.startswith("file://") for u in urls), urls
    return report


def _non_blank(png: bytes) -> tuple[int, float]:
    """(distinct colours, share of non-white pixels) of a screenshot."""
    from render.png import decode_png

    width, height, bpp, rows = decode_png(png)
    colours: set[bytes] = set()
    coloured = 0
    for row in rows:
        for x in range(0, width * bpp, bpp):
            pixel = row[x : x + 3]
            colours.add(pixel)
            coloured += pixel != b"\xff\xff\xff"
    return len(colours), coloured / (width * height)


def _map_clip(browser: Any) -> dict[str, float]:
    box = browser.eval("JSON.stringify(document.getElementById('map').getBoundingClientRect())")
    rect = json.loads(box)
    return {
        "x": rect["x"],
        "y": rect["y"],
        "width": rect["width"],
        "height": rect["height"],
        "scale": 0.5,
    }


@pytest.fixture(scope="module")
def real_page(
    mlx_metallib: Callable[[str, str], Path], tmp_path_factory: pytest.TempPathFactory
) -> tuple[Path, Any]:
    path = mlx_metallib("0.32.0", "macosx_26_0_arm64")
    out = tmp_path_factory.mktemp("html") / "mlx-0.32.0-macos26.html"
    _render(["report", str(path)], out)
    (report,) = load_reports(str(path))
    return out, report


def test_treemap_draws_with_family_labels(browser: Any, real_page: tuple[Path, Any]) -> None:
    page, report = real_page
    state = _open(browser, page.as_uri())
    assert state["cells"] > 100
    assert browser.eval("document.querySelectorAll('#map svg rect').length") == state["cells"]
    heads = browser.eval(
        "Array.from(document.querySelectorAll('#map text.head')).map(t => t.textContent)"
    )
    labelled = {h.split("  ")[0] for h in heads}
    largest = [g.name for g in report.groups[:8]]
    assert set(largest) <= labelled, (largest, sorted(labelled))
    png = browser.screenshot(_map_clip(browser))
    (page.parent / "treemap.png").write_bytes(png)  # kept with the test's temporary files
    colours, coloured = _non_blank(png)
    assert colours >= 20, f"only {colours} colours in the treemap"
    assert coloured > 0.9, f"only {coloured:.0%} of the treemap area is drawn"
    title = browser.eval("document.getElementById('summary').textContent")
    assert f"{report.file_size:,} bytes" in title and str(report.source.path) in title


def test_search_box_filters_and_highlights(browser: Any, real_page: tuple[Path, Any]) -> None:
    page, report = real_page
    _open(browser, page.as_uri())
    query = "copy"
    expected = sum(query in f.name.lower() for f in report.functions)
    assert 0 < expected < report.function_count
    browser.type_text("#search", query)
    status = browser.wait_for("document.getElementById('matches').textContent")
    assert status.startswith(f"{expected:,} of {report.function_count:,} functions match")
    names = browser.eval(
        "Array.from(document.querySelectorAll('#table tbody td.name')).map(t => t.textContent)"
    )
    assert len(names) == min(expected, 300) and all(query in n.lower() for n in names)
    assert browser.eval("document.getElementById('map').classList.contains('searching')")
    assert browser.eval("document.querySelectorAll('#map rect.hit').length") > 0
    assert browser.eval("location.hash") == f"#search={query}"
    # the link restores the same view on a fresh load
    _open(browser, page.as_uri() + "#search=" + query)
    status = browser.wait_for("document.getElementById('matches').textContent")
    assert status.startswith(f"{expected:,} of")
    assert browser.eval("document.getElementById('search').value") == query


def test_click_zooms_into_a_family(browser: Any, real_page: tuple[Path, Any]) -> None:
    page, report = real_page
    _open(browser, page.as_uri())
    family = report.groups[0].name
    box = json.loads(
        browser.eval(
            "JSON.stringify(Array.from(document.querySelectorAll('#map text.head'))"
            f".find(t => t.textContent.split('  ')[0] === {json.dumps(family)})"
            ".getBoundingClientRect())"
        )
    )
    x, y = box["x"] + 2, box["y"] + box["height"] / 2
    for kind in ("mousePressed", "mouseReleased"):
        browser.page("Input.dispatchMouseEvent", type=kind, x=x, y=y, button="left", clickCount=1)
    crumbs = browser.wait_for(
        "document.getElementById('crumbs').textContent.includes('›') && "
        "document.getElementById('crumbs').textContent"
    )
    assert family in crumbs
    assert browser.eval("location.hash") == f"#zoom={family}"
    heads = browser.eval(
        "Array.from(document.querySelectorAll('#map text.head')).map(t => t.textContent)"
    )
    assert heads[0].startswith(family)  # the family now fills the map


def test_compare_page_lists_added_functions(
    browser: Any, mlx_metallib: Callable[[str, str], Path], tmp_path: Path
) -> None:
    base = mlx_metallib("0.29.0", "macosx_14_0_arm64")
    head = mlx_metallib("0.32.0", "macosx_14_0_arm64")
    page = _render(["compare", str(base), str(head)], tmp_path / "compare.html")
    comparison = compare_reports(load_reports(str(base))[0], load_reports(str(head))[0])
    state = _open(browser, page.as_uri() + "#status=added")
    assert state["matches"] == len(comparison.added)
    statuses = browser.eval(
        "Array.from(document.querySelectorAll('#table tbody tr')).map(r => r.className)"
    )
    assert statuses and set(statuses) == {"added"}
    png = browser.screenshot(_map_clip(browser))
    (tmp_path / "compare.png").write_bytes(png)
    colours, coloured = _non_blank(png)
    assert colours >= 10 and coloured > 0.9
    browser.eval(
        "var s = document.getElementById('status'); s.value = 'removed';"
        "s.dispatchEvent(new Event('change'))"
    )
    status = browser.wait_for("document.getElementById('matches').textContent")
    assert status.startswith(f"{len(comparison.removed):,} of")


def test_two_keys_nest_in_the_treemap(
    browser: Any, mlx_metallib: Callable[[str, str], Path], tmp_path: Path
) -> None:
    """``--by dtype,kernel``: zooming into a dtype shows its kernel families (without the second
    key a dtype holds functions directly, so the heads would be function names)."""
    path = mlx_metallib("0.32.0", "macosx_14_0_arm64")
    page = _render(["report", str(path), "--by", "dtype,kernel"], tmp_path / "nested.html")
    (report,) = load_reports(str(path), by="dtype,kernel")
    dtype = report.groups[0]
    _open(browser, page.as_uri() + "#zoom=" + dtype.name)
    heads = browser.wait_for(
        "document.getElementById('crumbs').textContent.includes('›') && "
        "Array.from(document.querySelectorAll('#map text.head')).map(t => t.textContent)"
    )
    assert heads[0].startswith(dtype.name)  # the dtype fills the map
    families = {h.split("  ")[0] for h in heads[1:]}
    largest = {child.name for child in dtype.children[:3]}
    assert largest <= families, (largest, sorted(families))
    assert not families & {f.name for f in report.functions}  # families, not functions


def test_a_family_holds_its_dtypes(browser: Any, real_page: tuple[Path, Any]) -> None:
    """One ``--by`` key: under a family the page draws the dtypes named in its functions' names
    (the level is called dtype in the table, never variant), then the functions."""
    page, report = real_page
    family = report.groups[0]
    names = {f.name for f in report.functions if f.group == family.name}
    _open(browser, page.as_uri() + "#zoom=" + family.name)
    heads = browser.wait_for(
        "document.getElementById('crumbs').textContent.includes('›') && "
        "Array.from(document.querySelectorAll('#map text.head')).map(t => t.textContent)"
    )
    dtypes = {h.split("  ")[0] for h in heads[1:]}
    assert dtypes and not dtypes & names  # dtypes, not functions
    mlx_dtypes = {"bool", "complex64", "bfloat16", "float16", "float32"}
    mlx_dtypes |= {f"{sign}int{bits}" for sign in ("", "u") for bits in (8, 16, 32, 64)}
    assert dtypes <= mlx_dtypes, sorted(dtypes)
    header = browser.eval(
        "Array.from(document.querySelectorAll('#table thead th')).map(t => t.textContent)"
    )
    assert header[:3] == ["function", "group", "dtype"], header
