"""``scripts/mutate.py`` on a tiny project made here (a module, a conftest that imports it, two
tests): a mutant that breaks collection is killed, any module of a checkout can be named, and
what a mutant's tests see does not depend on the length of the caller's temporary folder's path.

Each run starts pytest a few times (the unmutated copy, then one per mutant), so each test
names only the mutants it is about with ``--only``."""

from __future__ import annotations

import json
import os
import re
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest

ROOT = Path(__file__).resolve().parents[2]
SCRIPT = ROOT / "scripts" / "mutate.py"

TINY = """\
LIMIT = 3
RANGE = range(LIMIT)  # read at import: without LIMIT the module cannot be imported


def clamp(x: int) -> int:
    return min(x, LIMIT)


def label(path: object) -> str:
    return f"wrote {path}"
"""
CONFTEST = "import pkg.tiny  # noqa: F401  (a mutant that cannot be imported breaks collection)\n"
TESTS = """\
import textwrap

from pkg.tiny import clamp, label


def test_clamp():
    assert (clamp(5), clamp(2)) == (3, 2)


def test_label(tmp_path):
    # as a table on a pipe shows it: wrapped at 80 columns, a long word broken
    shown = textwrap.fill(label(tmp_path / "out.bin"), 80)
    assert str(tmp_path / "out.bin") in shown
"""


def _project(tmp_path: Path) -> Path:
    root = tmp_path / "proj"
    for name, text in {
        "pkg/tiny.py": TINY,
        "tests/conftest.py": CONFTEST,
        "tests/test_tiny.py": TESTS,
    }.items():
        (root / name).parent.mkdir(parents=True, exist_ok=True)
        (root / name).write_text(text)
    return root


def _mutate(
    root: Path, *args: str, env: dict[str, str] | None = None
) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, str(SCRIPT), "--root", str(root), *args],
        capture_output=True,
        text=True,
        check=False,
        env={**os.environ, **(env or {})},
    )


def _outcomes(report: Path) -> dict[str, tuple[str, int | None]]:
    results = json.loads(report.read_text())["results"]
    return {r["id"]: (r["outcome"], r["exit"]) for r in results}


def test_a_mutant_that_breaks_collection_is_killed(tmp_path: Path) -> None:
    """Deleting ``LIMIT = 3`` makes the module fail at import, so the conftest that imports it
    cannot load and pytest exits 4: the mutant is killed (``broken``), and the run goes on to
    the next mutants instead of stopping."""
    root = _project(tmp_path)
    report = tmp_path / "results.json"
    done = _mutate(
        root, "pkg/tiny.py", "--tests", "tests", "--only", "tiny:1", "--json", str(report)
    )
    assert done.returncode == 0, done.stdout + done.stderr
    assert _outcomes(report) == {
        "tiny:1:0:delete": ("broken", pytest.ExitCode.USAGE_ERROR),
        "tiny:1:8:plus1": ("failed", 1),
        "tiny:1:8:minus1": ("failed", 1),
    }
    assert re.search(r"^  BROKEN +tiny:1:0:delete ", done.stdout, re.MULTILINE)
    assert re.search(r"^pkg/tiny.py +3 +3 +100%$", done.stdout, re.MULTILINE), done.stdout


def test_a_survivor_is_reported_and_the_exit_status_says_so(tmp_path: Path) -> None:
    """A mutant no test looks at (``label`` returning None once ``test_label`` is gone)
    survives: it is named, and the run exits 1."""
    root = _project(tmp_path)
    (root / "tests" / "test_tiny.py").write_text(TESTS.split("\n\n\ndef test_label")[0] + "\n")
    report = tmp_path / "results.json"
    done = _mutate(
        root, "pkg/tiny.py", "--tests", "tests", "--only", "tiny:10", "--json", str(report)
    )
    assert done.returncode == 1, done.stdout + done.stderr
    assert _outcomes(report) == {"tiny:10:4:return": ("passed", 0)}
    assert "survivors (1):" in done.stdout and "tiny:10:4:return" in done.stdout


def test_results_do_not_depend_on_the_temporary_folders_path(tmp_path: Path) -> None:
    """``test_label`` fails when its tmp_path is longer than a line (as a path in a table
    would wrap): the unmutated copy must pass and the mutant be killed the same way with a
    short and with a 200-character TMPDIR."""
    root = _project(tmp_path)
    long = tmp_path / ("t" * 200)
    long.mkdir()
    seen = []
    for temp in (tmp_path, long):
        report = tmp_path / "results.json"
        done = _mutate(
            root,
            "pkg/tiny.py",
            "--tests",
            "tests/test_tiny.py::test_label",
            "--only",
            "tiny:10",
            "--json",
            str(report),
            env={"TMPDIR": str(temp)},
        )
        assert done.returncode == 0, done.stdout + done.stderr
        seen.append(_outcomes(report))
    assert seen[0] == seen[1] == {"tiny:10:4:return": ("failed", 1)}


@pytest.mark.parametrize(
    ("module", "tests", "words"),
    [
        ("pkg/nothing.py", "tests", "pkg/nothing.py: not a Python file of"),
        ("tests/conftest.py", "nowhere", "--tests: nowhere: no such file or folder in"),
        ("../outside.py", "tests", "../outside.py: not a Python file of"),
    ],
)
def test_a_module_or_test_it_cannot_use_is_one_line(
    tmp_path: Path, module: str, tests: str, words: str
) -> None:
    root = _project(tmp_path)
    (tmp_path / "outside.py").write_text("X = 1\n")
    done = _mutate(root, module, "--tests", tests, "--list")
    assert done.returncode == 2 and done.stdout == ""
    assert words in done.stderr and "Traceback" not in done.stderr


@pytest.fixture(scope="module")
def script() -> Any:
    """scripts/mutate.py as a module."""
    import importlib.util

    spec = importlib.util.spec_from_file_location("mutate_script", SCRIPT)
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    sys.modules[spec.name] = module  # its dataclasses look their module up there
    try:
        spec.loader.exec_module(module)
    finally:
        del sys.modules[spec.name]
    return module


def test_no_version_of_a_module_can_be_taken_for_another(tmp_path: Path, script: Any) -> None:
    """The copy's runs share compiled modules (one PYTHONPYCACHEPREFIX for the session), and
    Python reuses a compiled module whose source has the same size and modification second. A
    mutant of its original's size (``LIMIT = 4`` for ``LIMIT = 3``) written within the second
    would be run as the original and survive: each version the copy writes has a second of
    its own, after the original's."""
    root = _project(tmp_path)
    copy = script.Copy(root, tmp_path / "scratch")
    assert "PYTHONDONTWRITEBYTECODE" not in copy.env
    assert copy.env["PYTHONPYCACHEPREFIX"] == str(tmp_path / "scratch" / "pyc")
    at = TINY.index("3")
    plus = script.Mutant("tiny:1:8:plus1", "pkg/tiny.py", 1, at, at + 1, "4", "3 -> 4")
    minus = script.Mutant("tiny:1:8:minus1", "pkg/tiny.py", 1, at, at + 1, "2", "3 -> 2")
    written = copy.root / "pkg" / "tiny.py"
    seen = [(written.stat().st_size, int(written.stat().st_mtime))]
    for mutant in (plus, None, minus, None, plus):
        copy.apply(mutant, "pkg/tiny.py")
        seen.append((written.stat().st_size, int(written.stat().st_mtime)))
    assert len({size for size, _ in seen}) == 1  # every version the same size
    assert [second for _, second in seen] == sorted({second for _, second in seen})
    assert written.read_text() == TINY.replace("LIMIT = 3", "LIMIT = 4")


def test_every_module_and_test_file_of_modules_exists(script: Any) -> None:
    """Every module of MODULES and each test file its row names is in the checkout (a renamed
    file would make the default run stop). Read from the script itself, without making every
    module's mutants as ``--list`` does (that took 23 s; ``--list`` is run on one module below)."""
    missing = [
        path
        for module, tests in script.MODULES.items()
        for path in (module, *tests)
        if not (ROOT / path).is_file()
    ]
    assert missing == []
    stems = {Path(module).stem for module in script.MODULES}
    assert {"host_strings", "platforms", "confinement", "writer", "preamble"} <= stems


def test_any_module_of_the_checkout_can_be_named() -> None:
    """A builder module outside MODULES is listed (its tests default to its package's folder);
    ids are ``stem:line:column:operator`` and every one points into the module's source."""
    done = subprocess.run(
        [sys.executable, str(SCRIPT), "builder/kernels/platforms.py", "--list"],
        capture_output=True,
        text=True,
        check=False,
    )
    assert done.returncode == 0, done.stderr
    ids = [line.split()[0] for line in done.stdout.splitlines()]
    assert len(ids) > 35 and all(i.startswith("platforms:") for i in ids)
    lines = (ROOT / "builder/kernels/platforms.py").read_text().splitlines()
    assert all(int(i.split(":")[1]) <= len(lines) for i in ids)
