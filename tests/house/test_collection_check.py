"""The suite's own guard: a whole run that leaves a ``test_*.py`` uncollected stops with a usage
error naming it, in one process and under pytest-xdist (where the workers collect and the
controller checks). Run on a copy of tests/conftest.py in a folder of two tiny test files."""

from __future__ import annotations

import shutil
import subprocess
import sys
from pathlib import Path

import pytest

TESTS = Path(__file__).resolve().parents[1]


@pytest.mark.parametrize("workers", ["0", "1"])  # one process; a controller and a worker
def test_an_uncollected_test_file_stops_the_run(tmp_path: Path, workers: str) -> None:
    tests = tmp_path / "tests"
    (tests / "build").mkdir(parents=True)  # "build": a folder pytest does not recurse into
    shutil.copy(TESTS / "conftest.py", tests / "conftest.py")
    (tests / "test_shown.py").write_text("def test_shown():\n    pass\n")
    (tests / "build" / "test_hidden.py").write_text("def test_hidden():\n    pass\n")
    (tmp_path / "pyproject.toml").write_text(
        f'[tool.pytest.ini_options]\ntestpaths = ["tests"]\npythonpath = ["{TESTS.as_posix()}"]\n'
        'addopts = ["-p", "no:cacheprovider", "--import-mode=importlib"]\n'
    )
    done = subprocess.run(
        [sys.executable, "-m", "pytest", "-n", workers],
        cwd=tmp_path,
        capture_output=True,
        text=True,
        check=False,
    )
    assert done.returncode == pytest.ExitCode.USAGE_ERROR, done.stdout + done.stderr
    assert "test files that pytest did not collect: build/test_hidden.py" in (
        done.stdout + done.stderr
    )
    if workers == "0":  # a partial run is the user's choice: no check
        partial = subprocess.run(
            [sys.executable, "-m", "pytest", "-n0", "tests/test_shown.py"],
            cwd=tmp_path,
            capture_output=True,
            text=True,
            check=False,
        )
        assert partial.returncode == 0, partial.stdout + partial.stderr
