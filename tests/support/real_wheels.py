"""Libraries of real wheels from the package index, downloaded once and cached; a test that
needs one is skipped, saying so, only when the index cannot be reached (any other refusal, such
as no wheel of that version, fails the test: a real-data path must not hide behind a skip)."""

from __future__ import annotations

import pytest

from builder.inputs import wheel_cache
from builder.inputs.targets import Library, resolve_target

_unreachable: dict[str, str] = {}


def libraries_or_skip(spec: str, platform: str) -> list[Library]:
    """The libraries ``spec`` (``PACKAGE==VERSION``) holds for ``platform``."""
    if spec in _unreachable:
        pytest.skip(_unreachable[spec])
    try:
        return resolve_target(spec, platform=platform)
    except wheel_cache.DownloadError as exc:
        if "cannot be reached" not in str(exc):
            raise
        _unreachable[spec] = f"PACKAGE INDEX UNREACHABLE, real-data test skipped: {exc}"
        pytest.skip(_unreachable[spec])
