"""The bundled tree comes from the checkout the tool runs in, so edits there take effect."""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest
from clirun import run_cli

from builder import resources

ROOT = Path(__file__).resolve().parents[1]


def _checkout(where: Path) -> Path:
    """A copy of this checkout's kernel tree and CMake files, as a second checkout would have."""
    where.mkdir()
    shutil.copytree(ROOT / "metal_src", where / "metal_src")
    shutil.copytree(ROOT / "cmake", where / "cmake")
    shutil.copy(ROOT / "CMakeLists.txt", where)
    shutil.copy(ROOT / "pyproject.toml", where)
    return where


def test_checkout_holding_the_working_directory_wins(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    other = _checkout(tmp_path / "other")
    (other / "metal_src" / "unary").mkdir(exist_ok=True)
    monkeypatch.chdir(other / "metal_src" / "unary")  # any folder inside the checkout
    assert resources.project_root() == other
    assert resources.metal_src_dir() == other / "metal_src"
    assert resources.cmake_dir() == other / "cmake"
    # what vendor copies is the running package's own (its checkout's or the wheel's copy),
    # never the working checkout's
    own = resources.own_cmake_dir()
    assert other not in own.parents and (own / "MetallibEmbed.cmake").is_file()


def test_vendor_run_in_another_checkout_writes_the_running_package_cmake(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    """A vendored copy is one version: run inside another checkout whose MetallibEmbed.cmake
    differs, vendor still writes the running package's function (the Python modules it copies
    are the running package's too)."""
    other = _checkout(tmp_path / "other")
    embed = other / "cmake" / "MetallibEmbed.cmake"
    embed.write_text(embed.read_text(encoding="utf-8") + "# edited in another checkout\n")
    monkeypatch.chdir(other)
    code, _, err = run_cli(["vendor", str(tmp_path / "vendored")], capsys)
    assert code == 0, err
    written = (tmp_path / "vendored" / "MetallibEmbed.cmake").read_text(encoding="utf-8")
    assert "edited in another checkout" not in written
    code, _, err = run_cli(["vendor", "--check", str(tmp_path / "vendored")], capsys)
    assert code == 0, err


def _installed(site: Path, cwd: Path) -> list[str]:
    """project_root() and metal_src_dir() of a copy of the package installed in ``site``, run from
    ``cwd`` (-S: no site-packages, so the editable install of this checkout stays out of it)."""
    code = (
        "from builder import resources; print(resources.project_root()); "
        "print(resources.metal_src_dir())"
    )
    done = subprocess.run(
        [sys.executable, "-S", "-c", code],
        cwd=cwd,
        env={**os.environ, "PYTHONPATH": str(site)},
        capture_output=True,
        text=True,
        check=True,
    )
    return done.stdout.splitlines()


def test_installed_package_outside_a_checkout_uses_its_own_copy(tmp_path: Path) -> None:
    site = tmp_path / "site-packages"
    shutil.copytree(
        ROOT / "builder", site / "builder", ignore=shutil.ignore_patterns("__pycache__", "*.so")
    )
    (tmp_path / "work").mkdir()
    assert _installed(site, tmp_path / "work") == [
        "None",
        str(site / "builder" / "_data" / "metal_src"),
    ]
    # a folder with a metal_src/ of some other project is not a checkout of this one
    _checkout(tmp_path / "foreign")
    (tmp_path / "foreign" / "pyproject.toml").write_text('[project]\nname = "other"\n')
    assert _installed(site, tmp_path / "foreign")[0] == "None"
    # ... while a checkout of this project holding the working directory wins over the copy
    ours = _checkout(tmp_path / "ours")
    assert _installed(site, ours / "metal_src") == [str(ours), str(ours / "metal_src")]


def test_edited_catalog_in_the_working_checkout_reaches_the_kernels_command(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    other = _checkout(tmp_path / "other")
    catalog_path = other / "metal_src" / "catalog.json"
    catalog = json.loads(catalog_path.read_text())
    dropped, _ = catalog["families"].popitem()
    catalog_path.write_text(json.dumps(catalog))
    monkeypatch.chdir(other)
    code, out, err = run_cli(["kernels", "--format", "json"], capsys)
    assert code == 0, err
    families = {k["family"] for k in json.loads(out)["instantiations"]}
    assert dropped not in families and families
