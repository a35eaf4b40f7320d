"""One pass over a tree per build: each entry file goes through the host preprocessor once, counted
by a compiler wrapper (the preprocessor discovery runs is ``$CXX``), not by the tool's own word."""

from __future__ import annotations

import shutil
from collections import Counter
from pathlib import Path

import pytest

from .conftest import cli_without_metal

pytestmark = pytest.mark.cmake

WRAPPER = """#!/bin/sh
# Logs the tree files of every preprocessor run (-E), then runs the real compiler.
for a in "$@"; do
  if [ "$a" = "-E" ]; then
    for b in "$@"; do
      case "$b" in *.metal|*.h) printf '%s\\n' "$b" >> "{log}";; esac
    done
    break
  fi
done
exec "{real}" "$@"
"""


def _runs(log: Path, tree: Path) -> Counter[str]:
    """How often each file of ``tree`` was preprocessed (paths as the tree names them)."""
    counted: Counter[str] = Counter()
    if not log.exists():
        return counted
    for line in log.read_text().splitlines():
        name = line.removeprefix("./")  # relative: run in the tree (the tool's prelude is not)
        if not Path(name).is_absolute() and (tree / name).is_file():
            counted[name] += 1
    return counted


def test_each_entry_file_is_preprocessed_once_per_build(
    mlx_tree: Path, tmp_path: Path, cxx_available: None
) -> None:
    real = shutil.which("g++")
    assert real is not None  # scripts/setup.sh installs it
    log = tmp_path / "preprocessed.log"
    wrapper = tmp_path / "bin" / "g++"
    wrapper.parent.mkdir()
    wrapper.write_text(WRAPPER.format(log=log, real=real))
    wrapper.chmod(0o755)
    build_dir = tmp_path / "b"
    args = ["build", "--source-dir", str(mlx_tree), "--jit", "*", "--build-dir", str(build_dir)]
    env = {"CXX": str(wrapper)}
    entries = sorted(p.relative_to(mlx_tree).as_posix() for p in mlx_tree.rglob("*.metal"))
    entries = [e for e in entries if not e.startswith(".")]

    done = cli_without_metal(*args, env=env)
    assert done.returncode == 0, done.stderr
    fresh = _runs(log, mlx_tree)
    # planning, the host library's sources, the manifest and the printed report: one pass
    assert {e: fresh[e] for e in entries} == dict.fromkeys(entries, 1)
    assert set(fresh.values()) == {1}, fresh  # headers searched for run-time-only kernels too

    log.unlink()
    done = cli_without_metal(*args, env=env)
    assert done.returncode == 0, done.stderr
    assert _runs(log, mlx_tree) == Counter()  # nothing changed: discovery remembered

    log.unlink(missing_ok=True)
    header = mlx_tree / "fft.h"
    header.write_text(header.read_text() + "\n// edited\n")
    done = cli_without_metal(*args, env=env)
    assert done.returncode == 0, done.stderr
    assert _runs(log, mlx_tree) == fresh  # a file it read changed: the tree once more
