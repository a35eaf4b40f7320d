"""Fixtures for the HTML report tests: a headless Chromium (skipped loudly when not installed).

The driver (``chromium.py``) and the PNG reader (``png.py``) sit beside this file, imported as
``render.chromium`` and ``render.png`` (tests/ is on ``sys.path``).
"""

from __future__ import annotations

from collections.abc import Iterator

import pytest
from render.chromium import Browser, chromium_path

NO_CHROMIUM = (
    "CHROMIUM NOT INSTALLED: the HTML report was not rendered in a browser "
    "(apt-get install chromium; .ci/run installs it)"
)


@pytest.fixture(scope="module")
def browser() -> Iterator[Browser]:
    """One headless Chromium per test module, 1400x1000 viewport."""
    if chromium_path() is None:
        pytest.skip(NO_CHROMIUM)
    with Browser(width=1400, height=1000) as b:
        yield b
