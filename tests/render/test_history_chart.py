"""The ``history`` page in headless Chromium: it draws without scripts or requests, every point
sits where its size puts it, and the picture has the lines' colours (what a person would see)."""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest

from builder.cli.group import main

pytestmark = [pytest.mark.slow, pytest.mark.browser]

RELEASES = [  # three "releases" of one library, each larger than the last
    [("vv_Addfloat32", 4000), ("v_copyfloat32float32", 3000)],
    [("vv_Addfloat32", 6000), ("v_copyfloat32float32", 3000), ("rope_float32", 2000)],
    [("vv_Addfloat32", 9000), ("v_copyfloat32float32", 2500), ("rope_float32", 5000)],
]


def test_history_chart_draws_each_point_at_its_size(
    browser: Any, tmp_path: Path, write_metallib: Callable[..., Path]
) -> None:
    from render.png import decode_png

    libs = [write_metallib(f"r{n}.metallib", fns) for n, fns in enumerate(RELEASES)]
    page = tmp_path / "history.html"
    main(["history", *map(str, libs), "-o", str(page)])
    mark = len(browser.events)
    browser.open(page.as_uri())
    assert [u for u in browser.requests()[mark:] if u != page.as_uri()] == []
    assert browser.exceptions() == []
    # the total chart's points: screen y grows downwards, so larger files sit higher
    points = browser.eval(
        "Array.from(document.querySelector('svg').querySelectorAll('circle'))"
        ".map(c => { const r = c.getBoundingClientRect(); "
        "return [r.x + r.width / 2, r.y + r.height / 2]; })"
    )
    sizes = [lib.stat().st_size for lib in libs]
    assert len(points) == 3 and sizes == sorted(sizes)
    xs, ys = [p[0] for p in points], [p[1] for p in points]
    assert xs == sorted(xs) and ys == sorted(ys, reverse=True)
    axis = browser.eval(
        "(() => { const g = document.querySelector('svg').querySelectorAll("
        "'line.grid'); const a = g[0].getBoundingClientRect(), "
        "b = g[g.length - 1].getBoundingClientRect(); return [a.y, b.y]; })()"
    )
    zero, top = axis  # grid lines from 0 to the axis maximum
    rises = [(zero - y) / (zero - top) for y in ys]  # share of the axis each point reaches
    ratio = [r / rises[0] for r in rises]
    assert ratio == pytest.approx([s / sizes[0] for s in sizes], rel=0.01)
    box = browser.eval(
        "(() => { const r = document.querySelector('svg')"
        ".getBoundingClientRect(); return {x: r.x, y: r.y, width: r.width, "
        "height: r.height}; })()"
    )
    width, _, bpp, rows = decode_png(browser.screenshot(box))
    blue = sum(
        row[i : i + 3] == b"\x1f\x77\xb4" for row in rows for i in range(0, width * bpp, bpp)
    )
    assert blue > 200  # the total's line and markers are drawn in its colour


def test_compare_table_starts_with_what_changed_most(
    browser: Any, tmp_path: Path, write_metallib: Callable[..., Path]
) -> None:
    """The comparison page's function table: largest absolute delta first, unchanged last."""
    base = write_metallib(
        "base.metallib",
        [
            ("v_copyfloat32float32", 9000),
            ("vv_Addfloat32", 500),
            ("arange_float32", 6000),
            ("rope_float32", 100),
        ],
    )
    head = write_metallib(
        "head.metallib",
        [
            ("v_copyfloat32float32", 9000),
            ("vv_Addfloat32", 700),
            ("arange_float32", 2000),
            ("rope_float32", 1100),
        ],
    )
    page = tmp_path / "compare.html"
    main(["compare", str(base), str(head), "--format", "html", "-o", str(page)])
    browser.open(page.as_uri())
    rows = browser.wait_for(
        "document.querySelectorAll('#table tbody tr').length === 4 && "
        "Array.from(document.querySelectorAll('#table tbody tr'))"
        ".map(r => r.cells[0].textContent)"
    )
    assert rows == ["arange_float32", "rope_float32", "vv_Addfloat32", "v_copyfloat32float32"]
