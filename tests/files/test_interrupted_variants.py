"""``variants --from -o OUT`` stopped half way (issue 17): kill -9 at several moments of a second
run into the same OUT, SIGTERM and SIGHUP, a full disk, a swap left half done. OUT must always be
one complete run's output, byte for byte (the two runs' outputs are recorded first and each
checked against its variants.json, every metallib verified), and the next run removes whatever a
killed one left beside it.

The run is stopped at each kill moment (``support.spawn.Pause``: it says so on a pipe, and the
folder is checked to show it), so a kill lands there however busy the machine is: the new folder
made, its first metallib half written, the second variant begun, the last metallib written
(what remains: measuring it, variants.json, the swap), OUT swapped; then three kills at random
times (fixed seed).
"""

from __future__ import annotations

import json
import os
import random
import resource
import shutil
import signal
import subprocess
import sys
import time
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path

import pytest
from clirun import run_cli
from mlx_tree import MLX_PLATFORM, MLX_VERSION
from support.mounts import fill, mounted
from support.spawn import Child, Pause, start, wait_paused
from support.variants_out import (
    RUN_A,
    RUN_B,
    TEMP,
    Snapshot,
    check_described,
    snapshot,
    variants_args,
)

pytestmark = [pytest.mark.realdata, pytest.mark.slow]


@dataclass
class Runs:
    """OUT (``parent/out``) and the two complete outputs a run can leave there."""

    library: Path
    headers: Path
    parent: Path
    a: Snapshot
    b: Snapshot

    @property
    def out(self) -> Path:
        return self.parent / "out"

    def args(self, *extra: str, out: Path | None = None) -> list[str]:
        return variants_args(self.library, self.headers, out or self.out, *extra)

    def run(self, *extra: str) -> subprocess.CompletedProcess[str]:
        proc = start(self.args(*extra))
        out, err = proc.communicate(timeout=300)
        return subprocess.CompletedProcess(proc.args, proc.returncode, out, err)

    def restore_a(self) -> None:
        """OUT holds run A's output, and nothing a killed run left stays beside it: a run of A,
        or when OUT is A already, a run that fails after cleaning up (--ceiling 1: exit 1)."""
        if snapshot(self.out) != self.a:
            done = self.run(*RUN_A)
            assert done.returncode == 0, done.stderr
        elif os.listdir(self.parent) != ["out"]:
            done = self.run(*RUN_A, "--ceiling", "1")
            assert done.returncode == 1, done.stderr
        assert snapshot(self.out) == self.a
        assert os.listdir(self.parent) == ["out"]

    def staged(self) -> Path | None:
        """The new folder a run is writing (None before it exists)."""
        for name in os.listdir(self.parent):
            match = TEMP.match(name)
            if match and match["name"] == "out" and name.endswith(".tmp"):
                return self.parent / name
        return None


@pytest.fixture(scope="module")
def runs(
    mlx_metallib: Callable[[str, str], Path],
    mlx_headers: Path,
    tmp_path_factory: pytest.TempPathFactory,
) -> Runs:
    library = mlx_metallib(MLX_VERSION, MLX_PLATFORM)
    found = Runs(library, mlx_headers, tmp_path_factory.mktemp("runs"), {}, {})
    for extra, names in ((RUN_B, ["all-aot", "aot-1", "jit-1"]), (RUN_A, ["all-aot", "jit-1"])):
        done = found.run(*extra)
        assert done.returncode == 0, done.stderr
        doc = check_described(found.out)  # exactly what variants.json lists, each verified
        assert [v["name"] for v in doc["variants"]] == names
        assert json.loads(done.stdout) == doc
        if extra == RUN_B:
            found.b = snapshot(found.out)
        else:
            found.a = snapshot(found.out)
    assert found.a != found.b and os.listdir(found.parent) == ["out"]
    return found


def _kill(proc: subprocess.Popen[str], signum: int = signal.SIGKILL) -> None:
    try:
        os.killpg(proc.pid, signum)
    except ProcessLookupError:
        pass  # it had finished


MOMENTS = {
    "new folder made": Pause("builder.metallib.writer:write_to"),
    "first metallib half written": Pause(
        "builder.metallib.writer:OutputSink._flush_run", 1, "after"
    ),
    "second variant begun": Pause("builder.metallib.writer:write_to", 2),
    "last metallib written": Pause("builder.subsets.variant_library:VariantWriter.measure", 3),
    "OUT swapped": Pause("builder.files.output_folder:_swap", 1, "after"),
}
"""Where run B (three metallibs: all-aot, aot-1, jit-1) is stopped for each kill."""


def _reached(runs: Runs, moment: str) -> bool:
    """What the file system shows at ``moment`` (checked once the run has paused there)."""
    staged = runs.staged()
    if moment == "OUT swapped":
        return snapshot(runs.out) == runs.b
    if staged is None:
        return False
    if moment == "first metallib half written":
        return any(TEMP.match(p.name) for p in staged.glob("*/.*.tmp"))
    if moment == "second variant begun":
        return len([p for p in staged.iterdir() if p.is_dir()]) > 1
    if moment == "last metallib written":
        return (staged / "jit-1" / "mlx.metallib").exists()
    return True


def _paused(runs: Runs, moment: str) -> Child:
    """Run B into OUT, paused at ``moment``."""
    proc = start(runs.args(*RUN_B), pause=MOMENTS[moment])
    wait_paused(proc)
    if not _reached(runs, moment):
        _kill(proc)
        proc.communicate()
        raise AssertionError(f"paused at {moment!r}, but the folder does not show it")
    return proc


def test_kill_9_during_a_second_run_leaves_one_complete_output(runs: Runs) -> None:
    rng = random.Random(17)
    runs.restore_a()
    started = time.monotonic()
    assert runs.run(*RUN_B).returncode == 0
    took = time.monotonic() - started  # random moments fall inside a run, however fast it is
    for moment in MOMENTS:
        runs.restore_a()  # also: the previous kill's leftovers are gone after the next run
        proc = _paused(runs, moment)
        _kill(proc)
        proc.communicate(timeout=60)
        assert proc.returncode == -signal.SIGKILL, moment
        after = snapshot(runs.out)
        assert after == (runs.b if moment == "OUT swapped" else runs.a), moment
    for delay in (rng.uniform(0.1, 0.8) * took for _ in range(3)):
        runs.restore_a()
        proc = start(runs.args(*RUN_B))
        time.sleep(delay)  # a kill at a moment nobody chose: wherever it lands, OUT is whole
        _kill(proc)
        proc.communicate(timeout=60)
        assert snapshot(runs.out) in (runs.a, runs.b), f"killed after {delay:.2f} s"
    done = runs.run(*RUN_B)  # the next run into OUT completes and cleans up
    assert done.returncode == 0, done.stderr
    assert snapshot(runs.out) == runs.b and os.listdir(runs.parent) == ["out"]


@pytest.mark.parametrize("signum", [signal.SIGTERM, signal.SIGHUP])
def test_sigterm_and_sighup_remove_the_new_folder(runs: Runs, signum: int) -> None:
    runs.restore_a()
    proc = _paused(runs, "first metallib half written")
    os.kill(proc.pid, signum)  # the command only, as `kill` would
    _, err = proc.communicate(timeout=60)
    assert proc.returncode == -signum, err
    assert snapshot(runs.out) == runs.a
    assert os.listdir(runs.parent) == ["out"]  # no new folder, no temporary file, no lock


def test_a_file_size_limit_half_way_leaves_the_old_output(runs: Runs) -> None:
    """EFBIG past RLIMIT_FSIZE (any user): all-aot's 130 MB metallib stops at 64 MB."""
    runs.restore_a()
    limit = 64 << 20

    def setup() -> None:
        signal.signal(signal.SIGXFSZ, signal.SIG_IGN)
        resource.setrlimit(resource.RLIMIT_FSIZE, (limit, limit))

    done = subprocess.run(
        [sys.executable, "-m", "builder", *runs.args(*RUN_B)],
        capture_output=True,
        text=True,
        preexec_fn=setup,
        timeout=300,
        check=False,
    )
    assert done.returncode == 2
    assert done.stderr == f"error: cannot write {runs.out}/all-aot/mlx.metallib: File too large\n"
    assert snapshot(runs.out) == runs.a and os.listdir(runs.parent) == ["out"]


@pytest.fixture(scope="module")
def small_library(runs: Runs, tmp_path_factory: pytest.TempPathFactory) -> Path:
    """The real library cut to the tree's kernels and a few not-in-tree ones (2.5 MB)."""
    from kernels.discovery.expected import BY_FILE

    folder = tmp_path_factory.mktemp("small")
    keep = folder / "keep.txt"
    keep.write_text("".join(f"{n}\n" for names in BY_FILE.values() for n in sorted(names)))
    path = folder / "small.metallib"
    done = subprocess.run(
        [
            sys.executable,
            "-m",
            "builder",
            "slim",
            str(runs.library),
            "-o",
            str(path),
            "--keep-list",
            str(keep),
            "--keep",
            "gemv_*float32*",
        ],
        capture_output=True,
        text=True,
        check=False,
    )
    assert done.returncode == 0, done.stderr
    return path


def test_a_full_disk_half_way_leaves_the_old_output(
    runs: Runs, small_library: Path, tmp_path: Path
) -> None:
    """A 16 MiB tmpfs with 1 MiB left after run A: run B's first metallib (2.5 MB) hits ENOSPC."""
    disk = tmp_path / "disk"
    disk.mkdir()
    with mounted(disk, ["-t", "tmpfs", "-o", "size=16m", "tmpfs"]):
        out = disk / "out"
        args = variants_args(small_library, runs.headers, out)
        done = subprocess.run(
            [sys.executable, "-m", "builder", *args, *RUN_A],
            capture_output=True,
            text=True,
            check=False,
        )
        assert done.returncode == 0, done.stderr
        check_described(out)
        before = snapshot(out)
        fill(disk, leave=1 << 20)
        done = subprocess.run(
            [sys.executable, "-m", "builder", *args, *RUN_B],
            capture_output=True,
            text=True,
            check=False,
        )
        assert done.returncode == 2
        assert done.stderr == (
            f"error: cannot write {out}/all-aot/small.metallib: No space left on device\n"
        )
        assert snapshot(out) == before
        assert sorted(os.listdir(disk)) == ["filler", "out"]


def _half_done(runs: Runs, *, with_new: bool) -> None:
    """The state a kill between the two renames of a swap leaves (docs/outputs.md): no OUT,
    run A's output moved aside as .old and, ``with_new``, run B's complete one as .tmp."""
    token = "0123456789ab"
    old, new = runs.parent / f".out.{token}.old", runs.parent / f".out.{token}.tmp"
    if with_new:
        aside = runs.parent.parent / f"{runs.parent.name}-b"  # (a run into OUT would remove it)
        for extra in (RUN_B, RUN_A):  # B's output copied aside, then OUT back to A
            done = runs.run(*extra)
            assert done.returncode == 0, done.stderr
            if extra == RUN_B:
                shutil.copytree(runs.out, aside)  # its variants.json names OUT's paths, as a run's
        os.rename(aside, new)
    os.rename(runs.out, old)


@pytest.mark.parametrize("with_new", [True, False], ids=["finish", "undo"])
def test_a_swap_left_half_done_is_settled_by_the_next_run(runs: Runs, with_new: bool) -> None:
    """The next run into OUT first finishes the swap (B's folder becomes OUT) or, without the
    new folder, puts the old one back; this run then fails (--ceiling 1: nothing written) and
    leaves that OUT."""
    runs.restore_a()
    _half_done(runs, with_new=with_new)
    done = runs.run(*RUN_A, "--ceiling", "1")
    assert done.returncode == 1 and "least reachable" in done.stderr, done.stderr
    assert snapshot(runs.out) == (runs.b if with_new else runs.a)
    assert os.listdir(runs.parent) == ["out"]


def test_two_renames_where_the_system_cannot_swap(
    runs: Runs, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    runs.restore_a()
    monkeypatch.setattr("builder.files.output_folder.exchange_paths", lambda first, second: False)
    code, out, err = run_cli(runs.args(*RUN_B), capsys)
    assert code == 0, err
    assert snapshot(runs.out) == runs.b and os.listdir(runs.parent) == ["out"]
    assert json.loads(out) == json.loads((runs.out / "variants.json").read_text())


def test_only_our_own_leftovers_are_removed(runs: Runs, tmp_path: Path) -> None:
    """A killed run's new folder and temporary file go; look-alike names and a link stay."""
    runs.restore_a()
    dead = runs.parent / ".out.0123456789ab.tmp"
    (dead / "all-aot").mkdir(parents=True)
    (dead / "all-aot" / ".mlx.metallib.0123456789ab.tmp").write_bytes(b"half")
    dead_file = runs.parent / ".out.fedcba987654.tmp"
    dead_file.write_bytes(b"a killed atomic write")
    kept_folder = tmp_path / "not ours"
    kept_folder.mkdir()
    (kept_folder / "data").write_text("keep")
    alike = [
        ".out.tmp",
        ".out.0123456789AB.tmp",
        ".out.01234.tmp",
        ".out.0123456789ab.tmp.x",
        ".other.0123456789ab.tmp",
        "out.0123456789ab.tmp",
        ".out.0123456789ab.old.d",
        ".out.aaaaaaaaaaaa.old",
    ]
    for name in alike[:-1]:
        (runs.parent / name).mkdir()
    (runs.parent / alike[-1]).write_text("a file named like a moved-aside folder")
    (runs.parent / ".out.bbbbbbbbbbbb.tmp").symlink_to(kept_folder)
    done = runs.run(*RUN_B)
    assert done.returncode == 0, done.stderr
    assert snapshot(runs.out) == runs.b
    assert sorted(os.listdir(runs.parent)) == sorted(["out", *alike, ".out.bbbbbbbbbbbb.tmp"])
    assert (kept_folder / "data").read_text() == "keep"
    for name in [*alike, ".out.bbbbbbbbbbbb.tmp"]:
        path = runs.parent / name
        path.unlink() if path.is_symlink() or path.is_file() else path.rmdir()
