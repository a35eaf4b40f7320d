"""The compare page of two releases whose libraries do not all pair, in headless Chromium: a
library on one side only draws without a script error and says so first (``added library``:
not in base; ``removed library``: not in head). Skipped loudly when Chromium is not installed."""

from __future__ import annotations

import shutil
from pathlib import Path
from typing import Any

import pytest
from binaries import link_dylib
from synthetic import synthetic_bytes

from builder.cli.group import main

pytestmark = [pytest.mark.slow, pytest.mark.browser]

PAINTED = "document.documentElement.getAttribute('data-painted') && window.__report"


def test_added_and_removed_libraries_draw_and_say_so(browser: Any, tmp_path: Path) -> None:
    blobs = {}
    for name, spec in (
        ("old", [("old_k", 900)]),
        ("kept", [("kept_k", 1200)]),
        ("new", [("new_k", 1500), ("new_j", 300)]),
    ):
        blobs[name] = tmp_path / f"{name}.metallib"
        blobs[name].write_bytes(synthetic_bytes(spec))
    dylibs = []
    for version, first in ((1, "old"), (2, "new")):
        (tmp_path / f"r{version}").mkdir()
        dylibs.append(
            link_dylib(
                tmp_path / f"r{version}" / "libk.dylib",
                [
                    ("__TEXT,__const", f"_{first}", blobs[first]),
                    ("__TEXT,metal", None, blobs["kept"]),
                ],
            )
        )
    page = tmp_path / "compare.html"
    main(["compare", *map(str, dylibs), "--format", "html", "-o", str(page)])
    # the pairs in compare's order: the paired one, then the added, then the removed one
    expected = [
        None,
        f"{dylibs[1]}#_new (added library): not in base.",
        f"{dylibs[0]}#_old (removed library): not in head.",
    ]
    for index, start in enumerate(expected):
        copy = tmp_path / f"page{index}.html"  # a page of its own: a new hash reloads nothing
        shutil.copyfile(page, copy)
        mark = len(browser.events)
        browser.open(copy.as_uri() + f"#lib={index}")
        browser.wait_for(PAINTED)
        errors = [e for e in browser.events[mark:] if e["method"] == "Runtime.exceptionThrown"]
        assert not errors, errors
        summary = browser.eval("document.getElementById('summary').textContent")
        if start is None:
            assert "not in" not in summary
        else:
            assert summary.startswith(start), summary
