"""What ``slim`` checks before its output replaces anything, and what it lets pass with a warning.

- every kept module's SHA-256 against its HASH tag: a mismatch stops the run (exit 2, naming the
  function and its module's byte offset, output untouched) unless --allow-hash-mismatch, which
  copies them with a warning and lists them in the JSON;
- the written size against the layout, before the rename;
- --keep-list lines that match nothing are a warning (with the count), not an error, unless
  nothing at all is kept; --keep and --drop stay strict.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
from collections.abc import Callable
from pathlib import Path
from typing import BinaryIO

import pytest
from clirun import run_cli
from synthetic import synthetic_parts

from builder.metallib import Metallib, library_bytes, open_metallib

pytestmark = pytest.mark.both_container_codes  # reads containers: both codes


def cli(*args: object, env: dict[str, str] | None = None) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-m", "builder", *map(str, args)],
        capture_output=True,
        text=True,
        env={**os.environ, **(env or {})},
        timeout=120,
        check=False,
    )


def leftovers(folder: Path) -> list[str]:
    return sorted(p.name for p in folder.iterdir() if p.name.endswith(".tmp"))


@pytest.fixture
def library(tmp_path: Path) -> Path:
    path = tmp_path / "lib.metallib"
    path.write_bytes(library_bytes(synthetic_parts(6, seed=11)))
    return path


def corrupt(source: Path, dest: Path, *indices: int) -> list[tuple[str, int]]:
    """Copy ``source`` to ``dest`` with one bitcode byte flipped in each function at ``indices``
    (the wrapper stays valid, so only the hash tells); returns (name, module offset) of each."""
    data = bytearray(source.read_bytes())
    lib = Metallib(bytes(data))
    victims = []
    for index in indices:
        fn = lib.functions[index]
        data[fn.module.offset + 24] ^= 0x55
        victims.append((fn.name, fn.module.offset))
    dest.write_bytes(bytes(data))
    return victims


# -- module hashes -----------------------------------------------------------------------------


@pytest.mark.picks_container_code
@pytest.mark.parametrize("native", ["1", "0"])
def test_hash_mismatch_refuses_and_keeps_the_old_output(
    library: Path, tmp_path: Path, native: str
) -> None:
    bad = tmp_path / "bad.metallib"
    victims = corrupt(library, bad, 4, 1)
    out = tmp_path / "out.metallib"
    out.write_bytes(b"a good older output")
    done = cli("slim", bad, "-o", out, "--keep", "*", env={"METALLIB_BUILDER_NATIVE": native})
    assert done.returncode == 2, done.stderr
    lines = done.stderr.splitlines()
    assert len(lines) == 1 and lines[0].startswith("error: ") and "Traceback" not in done.stderr
    for name, offset in sorted(victims, key=lambda v: v[1]):  # named in file order
        assert f"{name} (byte offset {offset})" in lines[0]
    assert lines[0].index(victims[1][0]) < lines[0].index(victims[0][0])
    assert "2 kept function(s)" in lines[0] and "--allow-hash-mismatch" in lines[0]
    assert out.read_bytes() == b"a good older output"
    assert leftovers(tmp_path) == []


def test_only_kept_modules_are_checked(library: Path, tmp_path: Path) -> None:
    bad = tmp_path / "bad.metallib"
    [(name, _)] = corrupt(library, bad, 4)
    out = tmp_path / "out.metallib"
    done = cli("slim", bad, "-o", out, "--drop", name)
    assert done.returncode == 0, done.stderr
    assert done.stderr == ""
    assert cli("verify", out).returncode == 0


def test_allow_hash_mismatch_copies_with_a_warning(library: Path, tmp_path: Path) -> None:
    bad = tmp_path / "bad.metallib"
    [(name, offset)] = corrupt(library, bad, 2)
    out = tmp_path / "out.metallib"
    done = cli("slim", bad, "-o", out, "--keep", "*", "--allow-hash-mismatch", "--format", "json")
    assert done.returncode == 0, done.stderr
    [warning] = done.stderr.splitlines()
    assert (
        warning.startswith("warning: copied 1 function(s)")
        and f"{name} (byte offset {offset})" in warning
    )
    doc = json.loads(done.stdout)
    assert doc["hash_mismatches"] == [{"function": name, "offset": offset}]
    assert doc["unmatched_keep_list"] == []
    assert out.read_bytes() == bad.read_bytes()  # keeping everything copies the input exactly
    verdict = cli("verify", out)
    assert verdict.returncode == 1 and name in verdict.stdout


def test_json_lists_nothing_when_all_is_well(library: Path, tmp_path: Path) -> None:
    done = cli(
        "slim", library, "-o", tmp_path / "o.metallib", "--keep", "kernel_[12]*", "--format", "json"
    )
    assert done.returncode == 0, done.stderr
    doc = json.loads(done.stdout)
    assert doc["hash_mismatches"] == [] and doc["unmatched_keep_list"] == []
    assert doc["functions_after"] == 2


@pytest.mark.realdata
def test_real_library_hash_mismatch(
    mlx_metallib: Callable[[str, str], Path], tmp_path: Path
) -> None:
    """A real Apple-built library (a cut of mlx-metal 0.30.0) with one module damaged."""
    small = tmp_path / "copy.metallib"
    done = cli("slim", mlx_metallib("0.30.0", "macosx_14_0_arm64"), "-o", small, "--keep", "*copy*")
    assert done.returncode == 0, done.stderr
    bad = tmp_path / "bad.metallib"
    [(name, offset)] = corrupt(small, bad, 7)
    out = tmp_path / "out.metallib"
    done = cli("slim", bad, "-o", out, "--keep", "*")
    assert done.returncode == 2 and f"{name} (byte offset {offset})" in done.stderr
    assert not out.exists() and leftovers(tmp_path) == []
    verdict = cli("verify", bad, "--format", "json")
    assert [p["function"] for p in json.loads(verdict.stdout)["problems"]] == [name]


# -- the size check happens before the rename ----------------------------------------------------


def test_size_mismatch_leaves_the_old_output(
    library: Path,
    tmp_path: Path,
    monkeypatch: pytest.MonkeyPatch,
    capsys: pytest.CaptureFixture[str],
) -> None:
    """A writer whose bytes disagree with its layout (simulated: one byte too many)."""
    from builder.metallib import writer

    real = writer.write_to

    def one_byte_too_many(parts: object, out: BinaryIO) -> object:
        lay = real(parts, out)  # type: ignore[arg-type]
        out.write(b"\0")
        return lay

    monkeypatch.setattr(writer, "write_to", one_byte_too_many)
    out = tmp_path / "out.metallib"
    out.write_bytes(b"a good older output")
    code, _, err = run_cli(["slim", str(library), "-o", str(out), "--keep", "kernel_1*"], capsys)
    assert code == 2
    [line] = err.splitlines()
    assert line.startswith(f"error: {out}: wrote ") and "bytes, layout says" in line
    assert out.read_bytes() == b"a good older output"
    assert leftovers(tmp_path) == []


# -- keep lists ----------------------------------------------------------------------------------


def test_unmatched_keep_list_line_is_a_warning(library: Path, tmp_path: Path) -> None:
    keep = tmp_path / "keep.txt"
    keep.write_text("kernel_0_float16\nkernel_gone_in_this_version\nkernel_[34]_*\n")
    out = tmp_path / "out.metallib"
    done = cli("slim", library, "-o", out, "--keep-list", keep, "--format", "json")
    assert done.returncode == 0, done.stderr
    assert done.stderr.splitlines() == [
        f"warning: {keep}: 1 line(s) match no function in {library}: 'kernel_gone_in_this_version'"
    ]
    assert json.loads(done.stdout)["unmatched_keep_list"] == ["kernel_gone_in_this_version"]
    with open_metallib(out) as slim:
        assert [fn.name for fn in slim.functions] == [
            "kernel_0_float16",
            "kernel_3_float32",
            "kernel_4_float16",
        ]


def test_many_unmatched_lines_are_counted(library: Path, tmp_path: Path) -> None:
    gone = [f"old_kernel_{i}" for i in range(7)]
    keep = tmp_path / "keep.txt"
    keep.write_text("\n".join([gone[0], "kernel_2*", *gone[1:], gone[3]]) + "\n")  # one repeated
    done = cli(
        "slim", library, "-o", tmp_path / "out.metallib", "--keep-list", keep, "--format", "json"
    )
    assert done.returncode == 0, done.stderr
    [warning] = done.stderr.splitlines()
    assert f"{keep}: 7 line(s) match no function" in warning
    assert all(repr(name) in warning for name in gone[:5]) and repr(gone[6]) not in warning
    assert json.loads(done.stdout)["unmatched_keep_list"] == gone


def test_keep_list_that_keeps_nothing_is_an_error(library: Path, tmp_path: Path) -> None:
    keep = tmp_path / "keep.txt"
    keep.write_text("old_a\nold_b\n")
    out = tmp_path / "out.metallib"
    done = cli("slim", library, "-o", out, "--keep-list", keep)
    assert done.returncode == 2
    [line] = done.stderr.splitlines()
    assert "keeps no function" in line and "'old_a', 'old_b'" in line
    assert not out.exists() and leftovers(tmp_path) == []


@pytest.mark.parametrize("flag", ["--keep", "--drop"])
def test_command_line_patterns_stay_strict(library: Path, tmp_path: Path, flag: str) -> None:
    keep = tmp_path / "keep.txt"
    keep.write_text("kernel_1*\nkernel_gone\n")
    out = tmp_path / "out.metallib"
    done = cli("slim", library, "-o", out, "--keep-list", keep, flag, "kernle_1*")
    assert done.returncode == 2
    assert done.stderr.splitlines() == ["error: no function name matches 'kernle_1*'"]
    assert not out.exists()
