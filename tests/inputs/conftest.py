"""Fixtures of the input tests."""

from __future__ import annotations

from pathlib import Path

import pytest
from support.shared import shared_folder

from .identity_releases import make_releases, releases


@pytest.fixture
def made(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, tmp_path_factory: pytest.TempPathFactory
) -> dict[str, Path]:
    """The two releases of ``identity_releases``, linked once per run (the tests only read
    them), and a cache of the test's own."""
    monkeypatch.setenv("METALLIB_BUILDER_CACHE", str(tmp_path / "cache"))
    return releases(shared_folder(tmp_path_factory, "identity-releases", make_releases))
