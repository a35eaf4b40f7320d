"""Two runs on one build folder or one ``variants`` OUT at once (issue 18: both exited 0 and
printed the other's numbers). Real concurrent processes: the first is paused (SIGSTOP) as soon as
it holds the lock, so the second surely meets it; the second waits, saying so on stderr, or with
--no-wait stops with one line, exit 2. Each run's printed results are its own and the folder ends
as the last run left it.
"""

from __future__ import annotations

import fcntl
import json
import os
import signal
import subprocess
import sys
import time
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from pathlib import Path

import pytest
from mlx_tree import MLX_PLATFORM, MLX_VERSION
from support.variants_out import RUN_A, RUN_B, check_described, start, variants_args, wait_for


def _run(*args: object) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-m", "builder", *map(str, args)],
        capture_output=True,
        text=True,
        timeout=300,
        check=False,
    )


@contextmanager
def paused(proc: subprocess.Popen[str], lock: Path) -> Iterator[None]:
    """Stop ``proc`` once it holds ``lock`` (the file exists and holds its process id); resume
    it after the block."""
    assert wait_for(lambda: lock.read_text() == f"{proc.pid}\n", proc), "never took the lock"
    os.kill(proc.pid, signal.SIGSTOP)
    try:
        yield
    finally:
        os.kill(proc.pid, signal.SIGCONT)


def _waiting(stderr: Path, line: str, proc: subprocess.Popen[str]) -> None:
    """``proc`` says ``line`` on stderr (a file) and keeps waiting."""
    assert wait_for(lambda: line in stderr.read_text(), proc), stderr.read_text()
    time.sleep(0.5)
    assert proc.poll() is None  # still waiting for the paused run


@pytest.mark.realdata
def test_two_variants_runs_into_one_out(
    mlx_metallib: Callable[[str, str], Path], mlx_headers: Path, tmp_path: Path
) -> None:
    library = mlx_metallib(MLX_VERSION, MLX_PLATFORM)
    out = tmp_path / "out"
    first = start(variants_args(library, mlx_headers, out, *RUN_A))
    stderr = tmp_path / "second.err"
    with paused(first, tmp_path / ".out.lock"):
        refused = _run(*variants_args(library, mlx_headers, out, *RUN_B, "--no-wait"))
        assert refused.returncode == 2 and refused.stdout == ""
        assert refused.stderr == (
            f"error: output folder {out} is in use by another metallib-builder run "
            f"(pid {first.pid}); run again when it has finished (without --no-wait this run "
            "waits)\n"
        )
        with stderr.open("w") as err:
            second = start(variants_args(library, mlx_headers, out, *RUN_B), stderr=err)
        _waiting(
            stderr,
            f"waiting for another metallib-builder run (pid {first.pid}) to finish "
            f"with output folder {out} ...",
            second,
        )
    first_out, first_err = first.communicate(timeout=300)
    second_out, _ = second.communicate(timeout=300)
    assert first.returncode == 0, first_err
    assert second.returncode == 0, stderr.read_text()
    mine = json.loads(first_out)  # what the first run wrote, not a mix with the second's
    assert [(v["name"], v["jit_sources"]) for v in mine["variants"]] == [
        ("all-aot", []),
        ("jit-1", ["unary_subset.metal"]),
    ]
    assert check_described(out) == json.loads(second_out)  # the last run's, complete
    assert os.listdir(tmp_path) == ["out", "second.err"]  # lock released and removed


@pytest.mark.cmake
@pytest.mark.slow
def test_two_builds_in_one_build_folder(tmp_path: Path) -> None:
    build = tmp_path / "b"
    first = start(
        ["build", "--jit", "*", "--kernels", "unary", "--build-dir", str(build), "--format", "json"]
    )
    stderr = tmp_path / "second.err"
    second_args = [
        "build",
        "--jit",
        "*",
        "--kernels",
        "binary",
        "--build-dir",
        str(build),
        "--format",
        "json",
    ]
    with paused(first, build / ".metallib-builder.lock"):
        refused = _run(*second_args, "--no-wait")
        assert refused.returncode == 2 and refused.stdout == ""
        assert refused.stderr.startswith(
            f"error: build folder {build} is in use by another "
            f"metallib-builder run (pid {first.pid});"
        )
        assert refused.stderr.count("\n") == 1
        with stderr.open("w") as err:
            second = start(second_args, stderr=err)
        _waiting(
            stderr,
            f"waiting for another metallib-builder run (pid {first.pid}) to finish "
            f"with build folder {build} ...",
            second,
        )
    first_out, first_err = first.communicate(timeout=300)
    second_out, _ = second.communicate(timeout=300)
    assert first.returncode == 0, first_err
    assert second.returncode == 0, stderr.read_text()
    assert [f["name"] for f in json.loads(first_out)["jit_units"]] == ["unary"]
    assert [f["name"] for f in json.loads(second_out)["jit_units"]] == ["binary"]
    manifest = json.loads((build / "manifest.json").read_text())
    assert [f["name"] for f in manifest["units"]] == ["binary"]
    assert not (build / ".metallib-builder.lock").exists()


def test_presets_holds_its_whole_build_root(tmp_path: Path) -> None:
    """``presets --build-dir R`` locks R itself (each preset's build its sub-folder too), so a
    ``build`` or another ``presets`` in R meets the lock before building anything. The lock is
    held here by this test, as any process's flock would be."""
    root = tmp_path / "v"
    root.mkdir()
    with (root / ".metallib-builder.lock").open("w") as held:
        fcntl.flock(held, fcntl.LOCK_EX)
        for args in (
            ["presets", "--kernels", "arange", "--build-dir", root, "--no-wait"],
            ["build", "--jit", "*", "--kernels", "arange", "--build-dir", root, "--no-wait"],
        ):
            done = _run(*args)
            assert done.returncode == 2, done.stderr
            assert done.stderr.startswith(
                f"error: build folder {root} is in use by another metallib-builder run;"
            ), done.stderr
            assert done.stderr.count("\n") == 1
    assert os.listdir(root) == [".metallib-builder.lock"]  # nothing built
