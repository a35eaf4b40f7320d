"""``metallib-builder --cmake-dir``: the installed CMake package's folder, its version file, and
exit 2 when this code runs without an install that made one."""

from __future__ import annotations

import re
import subprocess
import sysconfig
from importlib import metadata
from pathlib import Path

import pytest
from clirun import run_cli
from cmake_build.conftest import cmake_exe
from consumer.installed import cmake_dir

import builder
from builder.cli import PACKAGE_CONFIG, cmake_package_dir

FILES = (PACKAGE_CONFIG, "MetallibBuilderConfigVersion.cmake", "MetallibBuilderTargets.cmake")


def test_the_folder_is_the_installed_package() -> None:
    folder = cmake_dir()
    for name in FILES:
        assert (folder / name).is_file(), name
    # An install's copy in this interpreter's site-packages, not the checkout's cmake/.
    assert folder.parents[2].resolve() == Path(sysconfig.get_paths()["platlib"]).resolve()
    # The distribution's own file list holds it: pip installed it, and uninstalls it.
    files = metadata.distribution("metallib-builder").files or []
    installed = {Path(str(f.locate())).resolve() for f in files}
    assert {folder / name for name in FILES} <= installed
    # The imported library's files are where the export says, relative to the config.
    assert (folder.parents[1] / "_data" / "metal_src/host/include/metal_jit/registry.h").is_file()
    assert any(folder.parents[1].glob("_lib/*metal_jit*"))


def test_the_version_file_states_the_package_version(tmp_path: Path) -> None:
    text = (cmake_dir() / "MetallibBuilderConfigVersion.cmake").read_text(encoding="utf-8")
    (version,) = re.findall(r'^set\(PACKAGE_VERSION "([^"]+)"\)$', text, re.MULTILINE)
    assert version == builder.__version__ == metadata.version("metallib-builder")
    # 0.x: another minor version is refused before the config is read.
    major, minor, _ = version.split(".")
    wanted = f"{major}.{int(minor) + 1}"
    (tmp_path / "CMakeLists.txt").write_text(
        "cmake_minimum_required(VERSION 3.25)\nproject(v LANGUAGES NONE)\n"
        f"find_package(MetallibBuilder {wanted} CONFIG REQUIRED)\n",
        encoding="utf-8",
    )
    done = subprocess.run(
        [
            cmake_exe(),
            "-S",
            str(tmp_path),
            "-B",
            str(tmp_path / "b"),
            f"-DMetallibBuilder_DIR={cmake_dir()}",
        ],
        capture_output=True,
        text=True,
        check=False,
    )
    said = " ".join(done.stderr.split())
    assert done.returncode != 0 and f"version: {version}" in said, said


def test_a_plain_install_finds_it_beside_the_package(monkeypatch: pytest.MonkeyPatch) -> None:
    """A wheel's layout: builder/__init__.py and builder/_data/cmake in one site-packages."""
    installed = cmake_dir()
    monkeypatch.setattr(builder, "__file__", str(installed.parents[1] / "__init__.py"))
    monkeypatch.setattr(metadata, "distribution", _not_installed)
    assert cmake_package_dir() == installed


def test_without_an_install_it_exits_2_saying_so(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    checkout = tmp_path / "checkout" / "builder"
    monkeypatch.setattr(builder, "__file__", str(checkout / "__init__.py"))
    monkeypatch.setattr(metadata, "distribution", _not_installed)
    code, out, err = run_cli(["--cmake-dir"], capsys)
    assert (code, out) == (2, "")
    assert err.startswith(f"error: no installed CMake package ({PACKAGE_CONFIG}) for the ")
    assert str(checkout) in err and "pip install" in err and len(err.splitlines()) == 1


def test_the_option_is_in_the_help(capsys: pytest.CaptureFixture[str]) -> None:
    code, out, _ = run_cli(["--help"], capsys)
    assert code == 0 and "--cmake-dir" in out and "MetallibBuilder_DIR" in out


def _not_installed(name: str) -> metadata.Distribution:
    raise metadata.PackageNotFoundError(name)
