"""``slim`` takes every TARGET kind the other commands take (a .metallib, a .whl, PACKAGE==VERSION,
a build folder), asks which library when a target holds several, and refuses a saved report."""

from __future__ import annotations

import fnmatch
import json
import zipfile
from collections.abc import Callable
from pathlib import Path

import pytest
from clirun import run_cli as run
from synthetic import synthetic_parts

from builder.metallib import library_bytes, open_metallib

pytestmark = pytest.mark.both_container_codes  # reads containers: both codes

WHEEL = "two-1.0-py3-none-macosx_14_0_arm64.whl"


def names_of(path: Path) -> list[str]:
    with open_metallib(path) as lib:
        return [fn.name for fn in lib.functions]


@pytest.fixture
def two_libraries(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> tuple[Path, Path, Path]:
    """A wheel holding two metallibs, and the same two as plain files (the reference)."""
    monkeypatch.setenv("METALLIB_BUILDER_CACHE", str(tmp_path / "cache"))
    first, second = tmp_path / "a.metallib", tmp_path / "b.metallib"
    first.write_bytes(library_bytes(synthetic_parts(4, seed=1)))
    second.write_bytes(library_bytes(synthetic_parts(7, seed=2)))
    wheel = tmp_path / WHEEL
    with zipfile.ZipFile(wheel, "w") as archive:
        archive.write(first, "two/lib/a.metallib")
        archive.write(second, "two/lib/b.metallib")
    return wheel, first, second


def test_a_wheel_of_several_metallibs_needs_member(
    two_libraries: tuple[Path, Path, Path], tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    wheel, _, second = two_libraries
    out_path = tmp_path / "out.metallib"
    code, _, err = run(["slim", str(wheel), "-o", str(out_path), "--keep", "*"], capsys)
    assert code == 2 and not out_path.exists()
    assert err.count("\n") == 1 and "--member" in err
    assert "two/lib/a.metallib" in err and "two/lib/b.metallib" in err
    code, _, err = run(
        ["slim", str(wheel), "-o", str(out_path), "--keep", "*", "--member", "two/lib/c.metallib"],
        capsys,
    )
    assert code == 2 and "'two/lib/c.metallib'" in err and "two/lib/b.metallib" in err
    code, out, _ = run(
        [
            "slim",
            str(wheel),
            "-o",
            str(out_path),
            "--keep",
            "*",
            "--member",
            "two/lib/b.metallib",
            "--format",
            "json",
        ],
        capsys,
    )
    assert code == 0 and json.loads(out)["target"] == str(wheel)
    # Keeping every function reproduces the member exactly: the wheel's b.metallib, not a.
    assert out_path.read_bytes() == second.read_bytes()


def test_a_build_folder_is_slimmed_through_its_manifest(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    build = tmp_path / "build"
    build.mkdir()
    library = build / "kernels.metallib"
    library.write_bytes(library_bytes(synthetic_parts(6, seed=5)))
    manifest = {"schema": 2, "metallib": "kernels.metallib", "host_library": None, "units": []}
    (build / "manifest.json").write_text(json.dumps(manifest))
    every = names_of(library)
    out_path = tmp_path / "small.metallib"
    code, _, err = run(["slim", str(build), "-o", str(out_path), "--drop", every[2]], capsys)
    assert code == 0, err
    assert names_of(out_path) == every[:2] + every[3:]
    code, _, err = run(
        ["slim", str(build), "-o", str(library), "--keep", "*", "--in-place"], capsys
    )
    assert code == 2 and "--in-place" in err and err.count("\n") == 1


def test_a_saved_report_cannot_be_slimmed(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    library = tmp_path / "lib.metallib"
    library.write_bytes(library_bytes(synthetic_parts(3, seed=9)))
    saved = tmp_path / "report.json"
    assert run(["report", str(library), "-o", str(saved)], capsys)[0] == 0
    out_path = tmp_path / "out.metallib"
    code, out, err = run(["slim", str(saved), "-o", str(out_path), "--keep", "*"], capsys)
    assert code == 2 and out == "" and not out_path.exists()
    assert err.count("\n") == 1 and "saved size report" in err and "Traceback" not in err


def test_package_spec_slims_the_real_wheel(
    mlx_metallib: Callable[[str, str], Path], tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    real = mlx_metallib("0.32.1", "macosx_14_0_arm64")  # cached (skips when the index is down)
    out_path = tmp_path / "copy.metallib"
    code, out, err = run(
        [
            "slim",
            "mlx-metal==0.32.1",
            "-o",
            str(out_path),
            "--keep",
            "gg1_copy*",
            "--format",
            "json",
        ],
        capsys,
    )
    assert code == 0, err
    expected = [name for name in names_of(real) if fnmatch.fnmatchcase(name, "gg1_copy*")]
    assert expected and names_of(out_path) == expected
    assert json.loads(out)["functions_before"] == len(names_of(real))
