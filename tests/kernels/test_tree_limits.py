"""Entry files that are not files, and preprocessing that would never end.

A FIFO named ``f.metal`` used to hang ``kernels``; ``z.metal -> /dev/zero`` drove the
preprocessor to 18 GB. Entry files must be regular files (named in one line otherwise), and every
preprocessor run is bounded in time, address space and output (builder.files.bounds; the tests set
the
bounds small so that each attack ends in a second or two).

No test asserts how long a refusal takes (benchmarks/bench_refusals.py times them): a run that
would never end fails at a generous ``deadline`` instead of hanging the suite.
"""

from __future__ import annotations

import json
import os
import time
from pathlib import Path

import pytest
from support.deadline import deadline
from support.hostile import Cli, assert_one_error_line

HANG = 120
"""Seconds after which a run counts as never ending: a hang guard, far past any refusal's time
on a loaded machine, not a bound on speed."""


def _tree(tmp_path: Path) -> Path:
    tree = tmp_path / "tree"
    tree.mkdir()
    (tree / "a.metal").write_text("kernel void ka() {}\n")
    return tree


def _processes_in(folder: Path, wait_s: float = 3.0) -> list[int]:
    """Processes still alive whose working directory is ``folder`` (a preprocessor left
    running), once those killed a moment ago have had ``wait_s`` to finish dying."""
    until = time.monotonic() + wait_s
    while True:
        found = []
        for entry in Path("/proc").iterdir():
            try:
                alive = entry.name.isdigit() and Path(os.readlink(entry / "cwd")) == folder
                if alive and (entry / "stat").read_text().rpartition(")")[2].split()[0] != "Z":
                    found.append(int(entry.name))
            except OSError:
                continue
        if not found or time.monotonic() > until:
            return found
        time.sleep(0.05)


def test_a_fifo_entry_file_is_named_not_waited_for(tmp_path: Path, cli: Cli) -> None:
    tree = _tree(tmp_path)
    os.mkfifo(tree / "f.metal")
    with deadline(HANG):  # opening it would wait for a writer forever
        code, _, err = cli("kernels", "--source-dir", tree)
    assert_one_error_line(code, err, "f.metal", "not a regular file", "FIFO")


@pytest.mark.parametrize("device", ["/dev/zero", "/dev/null"])
def test_an_entry_file_linked_to_a_device_is_refused(device: str, tmp_path: Path, cli: Cli) -> None:
    tree = _tree(tmp_path)
    (tree / "z.metal").symlink_to(device)
    code, _, err = cli("kernels", "--source-dir", tree)
    assert_one_error_line(code, err, "z.metal", "not a regular file", "device")


def test_a_header_that_never_ends_stops_at_the_memory_bound(
    tmp_path: Path, cli: Cli, monkeypatch: pytest.MonkeyPatch
) -> None:
    tree = _tree(tmp_path)
    (tree / "zero.h").symlink_to("/dev/zero")
    (tree / "b.metal").write_text('#include "zero.h"\nkernel void kb() {}\n')
    monkeypatch.setenv("METALLIB_BUILDER_PP_MEMORY", "1GiB")
    with deadline(HANG):
        code, _, err = cli("kernels", "--source-dir", tree)
    line = assert_one_error_line(code, err, "b.metal", "METALLIB_BUILDER_PP_MEMORY")
    assert "1,073,741,824 bytes" in line


def test_a_header_that_blocks_stops_at_the_time_bound(
    tmp_path: Path, cli: Cli, monkeypatch: pytest.MonkeyPatch
) -> None:
    tree = _tree(tmp_path)
    os.mkfifo(tree / "wait.h")  # opening it for reading blocks until a writer comes: never
    (tree / "b.metal").write_text('#include "wait.h"\nkernel void kb() {}\n')
    monkeypatch.setenv("METALLIB_BUILDER_PP_TIMEOUT", "1")
    with deadline(HANG):  # without the time bound the preprocessor waits forever
        code, _, err = cli("kernels", "--source-dir", tree, "-j", "1")
    assert_one_error_line(code, err, "b.metal", "exceeds 1 seconds", "METALLIB_BUILDER_PP_TIMEOUT")
    assert _processes_in(tree) == []  # the compiler and its front end were killed, as a group


def test_output_past_the_bound_is_one_line(
    tmp_path: Path, cli: Cli, monkeypatch: pytest.MonkeyPatch
) -> None:
    tree = _tree(tmp_path)
    (tree / "big.h").write_text("int filler;\n" * 20_000)  # 240 kB, included 20 times: 4.8 MB
    (tree / "b.metal").write_text('#include "big.h"\n' * 20 + "kernel void kb() {}\n")
    monkeypatch.setenv("METALLIB_BUILDER_PP_OUTPUT", "1MB")
    code, _, err = cli("kernels", "--source-dir", tree)
    assert_one_error_line(
        code, err, "b.metal", "output exceeds 1,000,000 bytes", "METALLIB_BUILDER_PP_OUTPUT"
    )
    monkeypatch.setenv("METALLIB_BUILDER_PP_OUTPUT", "64MB")  # the same tree, allowed more
    code, out, err = cli("kernels", "--source-dir", tree)
    assert code == 0 and "2 kernels" in out, err


@pytest.mark.parametrize("value", ["0", "-5", "lots", "1e999GB"])
def test_a_bad_bound_is_one_line(
    value: str, tmp_path: Path, cli: Cli, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("METALLIB_BUILDER_PP_OUTPUT", value)
    code, _, err = cli("kernels", "--source-dir", _tree(tmp_path))
    assert_one_error_line(code, err, "METALLIB_BUILDER_PP_OUTPUT", "positive number")


def test_headers_no_entry_file_reaches_are_scanned_only_when_they_are_files(
    tmp_path: Path, cli: Cli, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The run-time-only scan reads headers itself: a FIFO, a link to /dev/zero and a header past
    METALLIB_BUILDER_MAX_SOURCE are passed over (no kernels in them), and the tree's kernels
    are still listed."""
    tree = _tree(tmp_path)
    os.mkfifo(tree / "wait.h")
    (tree / "zero.h").symlink_to("/dev/zero")
    (tree / "big.h").write_text("kernel void big() {}\n" + "//" * 600 + "\n")
    (tree / "lone.h").write_text("template <typename T> [[kernel]] void lone(device T* x) {}\n")
    monkeypatch.setenv("METALLIB_BUILDER_MAX_SOURCE", "1KB")
    with deadline(HANG):  # reading wait.h or zero.h would never end
        code, out, err = cli("kernels", "--source-dir", tree, "--format", "json")
    assert code == 0, err
    doc = json.loads(out)
    assert [k["name"] for k in doc["kernels"]] == ["ka"]
    assert doc["runtime_only"] == [{"template": "lone", "source": "lone.h"}]


def test_embed_refuses_an_include_that_is_not_a_file(tmp_path: Path, cli: Cli) -> None:
    tree = _tree(tmp_path)
    (tree / "zero.h").symlink_to("/dev/zero")
    (tree / "k.h").write_text('#include "zero.h"\nint k;\n')
    code, _, err = cli("embed", tree / "k.h", "-I", tree, "-o", tmp_path / "out.cpp")
    assert_one_error_line(code, err, "zero.h")  # a device is no header: not found
    assert not (tmp_path / "out.cpp").exists()
