"""GitHub Actions files checked offline, as CI would check them: check-jsonschema's own copy of
GitHub's schema for the file (``--builtin-schema``), then zizmor's audits with no finding at all
(no template injection, every action pinned by commit, no persisted credentials, no broad
permissions). Both come with the test extra; actionlint is not used: its PyPI wrapper downloads
its binary from outside the package index."""

from __future__ import annotations

import shutil
import subprocess
import sys
from pathlib import Path

import pytest

__all__ = ["assert_lint_clean"]


def _lint(name: str, *args: str) -> subprocess.CompletedProcess[str]:
    found = shutil.which(name)
    if found is None and name == "zizmor" and sys.version_info < (3, 11):
        pytest.skip("zizmor's wheel needs Python 3.11 or later")
    assert found, f"{name} is missing: install the test extra (pip install -e '.[test]')"
    return subprocess.run([found, *args], capture_output=True, text=True, timeout=120, check=False)


def assert_lint_clean(path: Path, schema: str) -> None:
    """``path`` passes the built-in ``schema`` (``vendor.github-actions`` for an action.yml,
    ``vendor.github-workflows`` for a workflow) and zizmor reports nothing."""
    checked = _lint("check-jsonschema", "--builtin-schema", schema, str(path))
    assert checked.returncode == 0, checked.stdout + checked.stderr
    audit = _lint("zizmor", "--offline", "--no-progress", str(path))
    assert audit.returncode == 0 and "No findings" in audit.stdout, audit.stdout + audit.stderr
