"""The list / verify / slim commands: output, exit codes, and that inputs are never touched."""

from __future__ import annotations

import hashlib
import json
import os
import shutil
import subprocess
import sys
from collections.abc import Callable
from pathlib import Path

import pytest
from clirun import run_cli as run
from synthetic import synthetic_parts

from builder.metallib import Metallib, library_bytes, open_metallib

pytestmark = pytest.mark.both_container_codes  # reads containers: both codes


@pytest.fixture
def library(tmp_path: Path) -> Path:
    path = tmp_path / "lib.metallib"
    path.write_bytes(library_bytes(synthetic_parts(6, seed=11)))
    return path


def digest(path: Path) -> str:
    return hashlib.sha256(path.read_bytes()).hexdigest()


def test_list_json_matches_the_reader(library: Path, capsys: pytest.CaptureFixture[str]) -> None:
    code, out, _ = run(["list", str(library), "--format", "json"], capsys)
    assert code == 0
    doc = json.loads(out)
    lib = Metallib(library.read_bytes())
    assert doc["schema"] == 1
    assert doc["file_size"] == library.stat().st_size
    assert doc["format_version"] == "2.7"
    assert doc["function_count"] == len(lib.functions) == 6
    assert [(f["name"], f["type"], f["bitcode_bytes"]) for f in doc["functions"]] == [
        (fn.name, "kernel", fn.module.size) for fn in lib.functions
    ]


def test_list_table_sorted_by_size(library: Path, capsys: pytest.CaptureFixture[str]) -> None:
    code, out, _ = run(["list", str(library), "--sort", "size"], capsys)
    assert code == 0
    sizes = [int(line.split()[3]) for line in out.splitlines()[2:]]
    assert sizes == sorted(sizes, reverse=True) and len(sizes) == 6


def test_verify_exit_codes(
    library: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    assert run(["verify", str(library)], capsys)[0] == 0
    broken = tmp_path / "broken.metallib"
    data = bytearray(library.read_bytes())
    victim = Metallib(bytes(data)).functions[3]
    data[victim.module.offset + 24] ^= 0x55
    broken.write_bytes(bytes(data))
    code, out, err = run(["verify", str(broken)], capsys)
    assert code == 1
    assert victim.name in out and victim.name in err
    not_metallib = tmp_path / "x.metallib"
    not_metallib.write_bytes(b"\x7fELF" + bytes(200))
    code, _, err = run(["verify", str(not_metallib)], capsys)
    assert code == 2 and "byte offset 0" in err and "Traceback" not in err
    assert run(["verify", str(tmp_path / "missing.metallib")], capsys)[0] == 2


def test_verify_json_names_problems(
    library: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    data = bytearray(library.read_bytes())
    victim = Metallib(bytes(data)).functions[0]
    data[victim.module.offset + 21] ^= 1
    broken = tmp_path / "b.metallib"
    broken.write_bytes(bytes(data))
    code, out, _ = run(["verify", str(broken), "--format", "json"], capsys)
    doc = json.loads(out)
    assert code == 1 and doc["ok"] is False
    assert [p["function"] for p in doc["problems"]] == [victim.name]


def test_slim_writes_selection_and_reports_sizes(
    library: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    before = digest(library)
    out_path = tmp_path / "out.metallib"
    code, out, _ = run(
        ["slim", str(library), "-o", str(out_path), "--keep", "*float16", "--format", "json"],
        capsys,
    )
    assert code == 0
    doc = json.loads(out)
    with open_metallib(out_path) as slim:
        names = [fn.name for fn in slim.functions]
    assert names and all(name.endswith("float16") for name in names)
    assert doc["functions_after"] == len(names) and doc["functions_before"] == 6
    assert (
        doc["bytes_after"] == out_path.stat().st_size
        and doc["bytes_before"] == library.stat().st_size
    )
    assert digest(library) == before  # input untouched


def test_slim_keep_list_and_drop(
    library: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    keep = tmp_path / "keep.txt"
    keep.write_text("# kernels the app uses\nkernel_0_float16\nkernel_[34]_*  # two more\n\n")
    out_path = tmp_path / "out.metallib"
    code, out, _ = run(
        [
            "slim",
            str(library),
            "-o",
            str(out_path),
            "--keep-list",
            str(keep),
            "--drop",
            "kernel_4*",
        ],
        capsys,
    )
    assert code == 0, out
    with open_metallib(out_path) as slim:
        assert [fn.name for fn in slim.functions] == ["kernel_0_float16", "kernel_3_float32"]


@pytest.mark.parametrize(
    ("args", "message"),
    [
        (["--keep", "nothing_like_this*"], "no function name matches"),
        (["--drop", "*"], "keeps no function"),
        ([], "say what to keep"),
    ],
)
def test_slim_usage_errors(
    library: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str], args: list[str], message: str
) -> None:
    out_path = tmp_path / "out.metallib"
    code, _, err = run(["slim", str(library), "-o", str(out_path), *args], capsys)
    assert code == 2 and message in err
    assert not out_path.exists()
    assert [p.name for p in tmp_path.iterdir()] == [library.name]  # no temporary left behind


def test_slim_refuses_to_overwrite_input_without_in_place(
    library: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    before = digest(library)
    code, _, err = run(["slim", str(library), "-o", str(library), "--keep", "kernel_1*"], capsys)
    assert code == 2 and "--in-place" in err and digest(library) == before
    code, _, _ = run(
        ["slim", str(library), "-o", str(library), "--keep", "kernel_1*", "--in-place"], capsys
    )
    assert code == 0
    with open_metallib(library) as slim:
        assert [fn.name for fn in slim.functions] == ["kernel_1_float32"]


def test_slim_of_a_corrupt_input_leaves_no_output(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    bad = tmp_path / "bad.metallib"
    data = bytearray(library_bytes(synthetic_parts(3)))
    data[88:92] = (10**6).to_bytes(4, "little")
    bad.write_bytes(bytes(data))
    code, _, err = run(
        ["slim", str(bad), "-o", str(tmp_path / "o.metallib"), "--keep", "*"], capsys
    )
    assert code == 2 and "byte offset 88" in err
    assert sorted(p.name for p in tmp_path.iterdir()) == ["bad.metallib"]


def test_installed_console_script_runs_from_any_directory(tmp_path: Path) -> None:
    exe = shutil.which("metallib-builder")
    if exe is None:
        pytest.skip("metallib-builder is not installed on PATH (run scripts/setup.sh)")
    for flag in ("--version", "--help"):
        done = subprocess.run(
            [exe, flag], cwd=tmp_path, capture_output=True, text=True, check=False
        )
        assert done.returncode == 0, done.stderr
    assert "metallib-builder" in done.stdout and "slim" in done.stdout
    env = {**os.environ, "PYTHONPATH": ""}
    done = subprocess.run(
        [sys.executable, "-m", "builder", "--version"],
        cwd=tmp_path,
        env=env,
        capture_output=True,
        text=True,
        check=False,
    )
    assert done.returncode == 0 and "0.1.0" in done.stdout
    if os.environ.get("METALLIB_BUILDER_NATIVE") != "0":  # the installed package has its C reader
        assert "native container reader: on" in done.stdout, done.stdout


@pytest.mark.realdata
def test_real_slim_via_cli(
    mlx_metallib: Callable[[str, str], Path], tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    source = mlx_metallib("0.30.0", "macosx_14_0_arm64")
    out_path = tmp_path / "copy.metallib"
    code, out, _ = run(["slim", str(source), "-o", str(out_path), "--keep", "*copy*"], capsys)
    assert code == 0 and "before:" in out and "after:" in out
    assert run(["verify", str(out_path)], capsys)[0] == 0
