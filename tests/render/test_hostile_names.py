"""Placeholders and hostile names in the HTML page: the template is filled in one pass, so a
target or function spelled like a placeholder (``{{DATA}}``, ``/*{{SCRIPT}}*/``) stays text, and
the page still holds exactly one data block whose names are the measured ones, byte for byte."""

from __future__ import annotations

import html
import json
import re
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest

from builder.cli.group import main
from builder.render.html import page

NAMES = [
    "x{{DATA}}y",
    "/*{{SCRIPT}}*/",
    "{{TITLE}}",
    "evil\x1b[31m\x07</title><script>alert(1)</script>",
    "v_copyfloat32float32",
]
DATA_BLOCK = re.compile(
    r'<script type="application/json" id="report-data">(.*?)</script>', re.DOTALL
)


def _title(text: str) -> str:
    match = re.search(r"<title>(.*?)</title>", text, re.DOTALL)
    assert match, "no <title>"
    return match.group(1)


def _data(text: str) -> dict[str, Any]:
    blocks = DATA_BLOCK.findall(text)
    assert len(blocks) == 1, f"{len(blocks)} data blocks"
    return json.loads(blocks[0])  # type: ignore[no-any-return]


def test_placeholder_text_in_the_title_or_data_stays_literal() -> None:
    title = "a {{DATA}} b /*{{STYLE}}*/ c /*{{SCRIPT}}*/ d {{TITLE}}"
    data: dict[str, object] = {"names": ["{{DATA}}", "{{TITLE}}", "/*{{SCRIPT}}*/", "</script>"]}
    text = page(title, data)
    assert _title(text) == html.escape(title)
    assert f'<h1 id="title">{html.escape(title)}</h1>' in text
    assert _data(text) == data
    assert text.count("<style>") == 1 and text.count("</style>") == 1
    assert text.count("</script>") == 2  # the data block and the program, nothing injected


def test_report_page_of_a_target_named_like_a_placeholder(
    write_metallib: Callable[..., Path], tmp_path: Path
) -> None:
    lib = write_metallib("x{{DATA}}y.metallib", [(n, 100 + 20 * i) for i, n in enumerate(NAMES)])
    out = tmp_path / "report.html"
    main(["report", str(lib), "--by", "function", "--format", "html", "-o", str(out)])
    text = out.read_text(encoding="utf-8")
    assert _title(text) == html.escape(f"Metallib size: {lib}")
    (library,) = _data(text)["libraries"]
    assert library["fn"]["name"] == NAMES  # names exact in the data (JSON escaping)
    assert library["label"] == str(lib)
    assert "<script>alert(1)" not in text


def test_compare_page_title_shows_saved_report_target_as_text(
    write_metallib: Callable[..., Path], tmp_path: Path
) -> None:
    lib = write_metallib("a.metallib", [(n, 100 + 20 * i) for i, n in enumerate(NAMES)])
    saved = tmp_path / "saved.json"
    main(["report", str(lib), "--format", "json", "-o", str(saved)])
    doc = json.loads(saved.read_text())
    target = "base{{DATA}}\x1b]0;pwned\x07</title><script>alert(1)</script>"
    doc["source"]["target"] = target
    saved.write_text(json.dumps(doc))
    out = tmp_path / "compare.html"
    main(["compare", str(saved), str(lib), "--format", "html", "-o", str(out)])
    text = out.read_text(encoding="utf-8")
    shown = "base{{DATA}}\\x1b]0;pwned\\x07</title><script>alert(1)</script>"
    assert _title(text) == html.escape(f"Metallib size change: {shown} → {lib}")
    (library,) = _data(text)["libraries"]
    assert library["base"]["label"] == target  # the data keeps the exact value
    assert "<script>alert(1)" not in text and "\x1b" not in text.split("<script")[0]


@pytest.mark.browser
def test_hostile_names_render_as_text_in_chromium(
    browser: Any, write_metallib: Callable[..., Path], tmp_path: Path
) -> None:
    lib = write_metallib("x{{DATA}}y.metallib", [(n, 100 + 20 * i) for i, n in enumerate(NAMES)])
    out = tmp_path / "report.html"
    main(["report", str(lib), "--by", "function", "--format", "html", "-o", str(out)])
    mark = len(browser.events)
    browser.open(out.as_uri())
    browser.wait_for("document.documentElement.getAttribute('data-painted') && window.__report")
    assert not [e for e in browser.events[mark:] if e["method"] == "Runtime.exceptionThrown"]
    assert browser.eval("document.title") == f"Metallib size: {lib}"
    assert browser.eval("document.querySelectorAll('script').length") == 2
    cells = browser.eval(
        "Array.from(document.querySelectorAll('#table td.name')).map(td => td.textContent)"
    )
    assert sorted(cells) == sorted(NAMES)
