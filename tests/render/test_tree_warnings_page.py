"""The HTML pages of ``report`` and ``compare`` carry a library's warnings (issue 35, item 7): a
kernel tree that does not match the library is said above the treemap, as on stderr, in headless
Chromium. The tree is tests/data/mlx_style over mlx-metal 0.32.0's real kernel headers."""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest
from clirun import run_cli
from kernels.discovery.expected import BY_FILE

pytestmark = [pytest.mark.slow, pytest.mark.browser, pytest.mark.realdata]

PAINTED = "document.documentElement.getAttribute('data-painted') && window.__report"
TREE = sorted({name for names in BY_FILE.values() for name in names})


def _shown(browser: Any, page: Path) -> str:
    mark = len(browser.events)
    browser.open(page.as_uri())
    browser.wait_for(PAINTED)
    assert not [e for e in browser.events[mark:] if e["method"] == "Runtime.exceptionThrown"]
    text: str = browser.eval("document.getElementById('gates').textContent")
    return text


def test_the_pages_say_what_stderr_says_of_a_tree_that_does_not_match(
    browser: Any,
    tmp_path: Path,
    write_metallib: Callable[..., Path],
    mlx_style: Path,
    mlx_headers: Path,
    capsys: pytest.CaptureFixture[str],
) -> None:
    base = write_metallib("base.metallib", [(n, 300) for n in TREE])
    head = write_metallib("head.metallib", [*((n, 300) for n in TREE[1:]), ("stray", 900)])
    tree = ["--source-dir", str(mlx_style), "-I", str(mlx_headers)]
    report, compare = tmp_path / "report.html", tmp_path / "compare.html"
    code, _, err = run_cli(["report", str(head), *tree, "-o", str(report)], capsys)
    assert code == 0, err
    said = [line.split(": ", 2)[2] for line in err.splitlines() if line.startswith("warning: ")]
    assert len(said) == 2  # the stray function, and the tree's kernel the library lacks
    shown = _shown(browser, report)
    assert all(f"warning: {w}" in shown for w in said), (said, shown)
    code, _, err = run_cli(["compare", str(base), str(head), *tree, "-o", str(compare)], capsys)
    assert code == 0, err
    shown = _shown(browser, compare)
    assert all(f"warning: head: {w}" in shown for w in said), (said, shown)
