"""The quick subset's guard (tests/conftest.py QUICK): a run that selects ``-m quick`` stops with
a usage error naming a file of the subset that is gone, so the subset never shrinks unnoticed;
a run that does not select it is not stopped. Run on a copy of tests/conftest.py in a folder of
one tiny test file, where every file QUICK names is missing. The subset itself runs on an
installed sdist in test_artifacts.py."""

from __future__ import annotations

import shutil
import subprocess
import sys
from pathlib import Path

TESTS = Path(__file__).resolve().parents[1]


def test_a_quick_run_names_the_files_of_the_subset_that_are_gone(tmp_path: Path) -> None:
    tests = tmp_path / "tests"
    tests.mkdir()
    shutil.copy(TESTS / "conftest.py", tests / "conftest.py")
    (tests / "test_shown.py").write_text("def test_shown():\n    pass\n")
    (tmp_path / "pyproject.toml").write_text(
        f'[tool.pytest.ini_options]\ntestpaths = ["tests"]\npythonpath = ["{TESTS.as_posix()}"]\n'
        'addopts = ["-p", "no:cacheprovider", "--import-mode=importlib"]\n'
    )

    def pytest_run(*args: str) -> subprocess.CompletedProcess[str]:
        argv = [sys.executable, "-m", "pytest", "-n0", *args]
        return subprocess.run(argv, cwd=tmp_path, capture_output=True, text=True, check=False)

    quick = pytest_run("-m", "quick")
    assert quick.returncode == 4, quick.stdout + quick.stderr  # pytest.ExitCode.USAGE_ERROR
    said = quick.stdout + quick.stderr
    assert "tests/conftest.py QUICK names files that are gone: " in said
    assert "'metallib/test_native_contract.py'" in said and "'test_resources.py'" in said
    plain = pytest_run()
    assert plain.returncode == 0, plain.stdout + plain.stderr
