"""Each build option is declared once (a setting, builder/settings/declared.py, held by a field of
BuildRequest); the files generated from it must be what the generator writes now."""

from __future__ import annotations

import shutil
import subprocess
import sys
from pathlib import Path

from builder.cmake_build.options import CMAKE_FILE, DOCS_FILE, cmake_text, docs_table, main
from builder.cmake_build.plan_model import request_settings

ROOT = Path(__file__).resolve().parents[2]


def test_generated_files_are_current() -> None:
    """Fails when a field changed and `python -m builder.cmake_build.options --write` was not
    run (the CMake file or the docs table is stale)."""
    assert (ROOT / CMAKE_FILE).read_text(encoding="utf-8") == cmake_text()
    assert docs_table() in (ROOT / DOCS_FILE).read_text(encoding="utf-8")
    assert main(["--check", "--root", str(ROOT)]) == 0


def test_check_names_a_stale_file(tmp_path: Path) -> None:
    for name in (CMAKE_FILE, DOCS_FILE, "cmake/MetalAot.cmake"):
        (tmp_path / name).parent.mkdir(parents=True, exist_ok=True)
        shutil.copy(ROOT / name, tmp_path / name)
    stale = tmp_path / CMAKE_FILE
    stale.write_text(stale.read_text().replace("METALLIB_SDK", "METALLIB_SDK_OLD"))
    run = [sys.executable, "-m", "builder.cmake_build.options", "--root", str(tmp_path)]
    done = subprocess.run([*run, "--check"], capture_output=True, text=True, check=False)
    assert done.returncode == 1 and f"{stale}: stale" in done.stderr
    assert subprocess.run([*run, "--write"], check=False).returncode == 0
    assert stale.read_text() == cmake_text()


def test_every_option_is_metallib_prefixed_and_documented() -> None:
    """No global METAL_* name reaches a cache; each cache variable has its row."""
    table = docs_table()
    for option in request_settings().values():
        if option.cmake:
            assert option.cmake.startswith("METALLIB_")
            assert f"`{option.cmake}`" in table and f"{option.cmake} " in cmake_text()
