"""Outputs are written whole or not at all: write failures, permissions, symlinks, special files.

Every command that writes (``slim -o``, ``report -o``, ``embed -o``, ``build --build-dir``) goes
through one helper (``builder.files.atomic``). A failed write must end in exit 2 with one line
naming
the output and the system's reason, no traceback, no temporary file left, and an existing output
untouched. Failures are real where the machine allows: a resource limit on file size (any user),
a full tmpfs and a read-only bind mount (root; skipped otherwise, with the limit and the
monkeypatched read-only test covering the same paths). Permissions follow ``open(path, "w")``.
"""

from __future__ import annotations

import errno
import os
import resource
import selectors
import signal
import stat
import subprocess
import sys
from collections.abc import Callable
from pathlib import Path

import pytest
from clirun import run_cli
from support.mounts import fill, mounted
from synthetic import synthetic_parts

from builder.metallib import library_bytes, open_metallib

HEADER = "// a kernel header for embed\n" + "".join(
    f"constant int k{i} = {i};\n" for i in range(150)
)


def cli(
    *args: object,
    umask: int | None = None,
    file_limit: int | None = None,
    env: dict[str, str] | None = None,
) -> subprocess.CompletedProcess[str]:
    """``metallib-builder ARGS`` in a fresh process, optionally under a umask or a file-size
    limit."""

    def setup() -> None:
        if umask is not None:
            os.umask(umask)
        if file_limit is not None:  # writes past it fail with EFBIG instead of killing the process
            signal.signal(signal.SIGXFSZ, signal.SIG_IGN)
            resource.setrlimit(resource.RLIMIT_FSIZE, (file_limit, file_limit))

    return subprocess.run(
        [sys.executable, "-m", "builder", *map(str, args)],
        capture_output=True,
        text=True,
        preexec_fn=setup,
        env={**os.environ, "PYTHONDONTWRITEBYTECODE": "1", **(env or {})},
        timeout=120,
        check=False,
    )


def assert_write_error(code: int, err: str, path: Path, reason: str, verb: str = "write") -> None:
    """Exit 2 and exactly one line: the path and the reason (``build`` may say "Configuring"
    first: progress, before the folder is created)."""
    assert code == 2, err
    lines = [line for line in err.splitlines() if not line.startswith("Configuring ")]
    assert lines == [f"error: cannot {verb} {path}: {reason}"], err


def temporaries(folder: Path) -> list[str]:
    return sorted(p.name for p in folder.iterdir() if p.name.endswith(".tmp"))


@pytest.fixture
def library(tmp_path: Path) -> Path:
    path = tmp_path / "lib.metallib"
    path.write_bytes(library_bytes(synthetic_parts(6, seed=11)))  # 3,021 bytes
    return path


@pytest.fixture
def header(tmp_path: Path) -> Path:
    path = tmp_path / "kernels" / "k.h"
    path.parent.mkdir()
    path.write_text(HEADER)
    return path


def writers(library: Path, header: Path) -> dict[str, Callable[[Path], list[object]]]:
    """The output-writing commands, each as arguments for a given output path."""
    return {
        "slim": lambda out: ["slim", library, "-o", out, "--keep", "*"],
        "report": lambda out: [
            "report",
            library,
            "--by",
            "function",
            "--format",
            "json",
            "-o",
            out,
        ],
        "embed": lambda out: ["embed", header, "-I", header.parent, "-o", out],
    }


COMMANDS = ["slim", "report", "embed"]


def _existing_outputs(folder: Path) -> dict[str, bytes]:
    """Old outputs that a failed run must leave as they are."""
    old = {name: f"old {name} output\n".encode() for name in COMMANDS}
    for name, data in old.items():
        (folder / f"{name}.out").write_bytes(data)
    return old


# -- the write fails ---------------------------------------------------------------------------


@pytest.mark.parametrize("command", COMMANDS)
def test_output_in_a_missing_folder(
    command: str, library: Path, header: Path, tmp_path: Path
) -> None:
    out = tmp_path / "missing" / "dir" / "x.out"
    done = cli(*writers(library, header)[command](out))
    if command == "embed":  # a generator: it creates its output's folder (build trees need that)
        assert done.returncode == 0, done.stderr
        assert out.read_text().count("#line") >= 1
        return
    assert_write_error(done.returncode, done.stderr, out, "No such file or directory")
    assert not (tmp_path / "missing").exists()


@pytest.mark.parametrize("command", COMMANDS)
def test_output_under_a_file(command: str, library: Path, header: Path, tmp_path: Path) -> None:
    blocker = tmp_path / "a-file"
    blocker.write_text("not a folder")
    out = blocker / "x.out"
    done = cli(*writers(library, header)[command](out))
    assert_write_error(done.returncode, done.stderr, out, "Not a directory")
    assert blocker.read_text() == "not a folder"


@pytest.mark.parametrize("command", COMMANDS)
def test_file_size_limit_leaves_the_old_output(
    command: str, library: Path, header: Path, tmp_path: Path
) -> None:
    """A write that fails half way (EFBIG past RLIMIT_FSIZE: a real kernel error, any user)."""
    old = _existing_outputs(tmp_path)
    out = tmp_path / f"{command}.out"
    done = cli(*writers(library, header)[command](out), file_limit=1024)
    assert_write_error(done.returncode, done.stderr, out, "File too large")
    assert out.read_bytes() == old[command]
    assert temporaries(tmp_path) == []


@pytest.mark.parametrize("command", COMMANDS)
def test_full_disk(command: str, library: Path, header: Path, tmp_path: Path) -> None:
    """A 64 KiB tmpfs filled to the last byte: ENOSPC from the kernel."""
    disk = tmp_path / "disk"
    disk.mkdir()
    with mounted(disk, ["-t", "tmpfs", "-o", "size=64k", "tmpfs"]):
        old = _existing_outputs(disk)
        fill(disk)
        out = disk / f"{command}.out"
        done = cli(*writers(library, header)[command](out))
        assert_write_error(done.returncode, done.stderr, out, "No space left on device")
        assert out.read_bytes() == old[command]
        assert temporaries(disk) == []


@pytest.mark.parametrize("command", COMMANDS)
def test_read_only_mount(command: str, library: Path, header: Path, tmp_path: Path) -> None:
    """A read-only bind mount (chmod does not stop root, a read-only file system does)."""
    folder = tmp_path / "ro"
    folder.mkdir()
    old = _existing_outputs(folder)
    with mounted(folder, ["--bind", str(folder)], ["-o", "remount,bind,ro"]):
        out = folder / f"{command}.out"
        done = cli(*writers(library, header)[command](out))
        assert_write_error(done.returncode, done.stderr, out, "Read-only file system")
        assert out.read_bytes() == old[command]
        assert temporaries(folder) == []


def test_build_dir_on_a_read_only_mount(tmp_path: Path) -> None:
    folder = tmp_path / "ro"
    folder.mkdir()
    with mounted(folder, ["--bind", str(folder)], ["-o", "remount,bind,ro"]):
        done = cli("build", "--jit", "*", "--kernels", "unary", "--build-dir", folder / "build")
        assert_write_error(
            done.returncode, done.stderr, folder / "build", "Read-only file system", "create folder"
        )


def test_build_dir_that_cannot_be_created(tmp_path: Path) -> None:
    blocker = tmp_path / "a-file"
    blocker.write_text("not a folder")
    done = cli("build", "--jit", "*", "--kernels", "unary", "--build-dir", blocker / "build")
    assert_write_error(
        done.returncode, done.stderr, blocker / "build", "Not a directory", "create folder"
    )


@pytest.mark.parametrize("command", [*COMMANDS, "build"])
def test_read_only_by_monkeypatch(
    command: str,
    library: Path,
    header: Path,
    tmp_path: Path,
    monkeypatch: pytest.MonkeyPatch,
    capsys: pytest.CaptureFixture[str],
) -> None:
    """Without mount rights: EROFS from ``os.open`` and ``os.mkdir`` (what every file creation
    goes through) for paths in one folder, in an in-process CLI run."""
    folder = tmp_path / "ro"
    folder.mkdir()
    old = _existing_outputs(folder)
    real_open, real_mkdir = os.open, os.mkdir

    def guard(real: Callable[..., object]) -> Callable[..., object]:
        def call(path: object, *args: object, **kwargs: object) -> object:
            if str(path).startswith(f"{folder}{os.sep}"):
                raise OSError(errno.EROFS, os.strerror(errno.EROFS), str(path))
            return real(path, *args, **kwargs)

        return call

    monkeypatch.setattr(os, "open", guard(real_open))
    monkeypatch.setattr(os, "mkdir", guard(real_mkdir))
    if command == "build":
        out = folder / "build"
        code, _, err = run_cli(
            ["build", "--jit", "*", "--kernels", "unary", "--build-dir", str(out)], capsys
        )
        assert_write_error(code, err, out, "Read-only file system", "create folder")
        return
    out = folder / f"{command}.out"
    code, _, err = run_cli([str(a) for a in writers(library, header)[command](out)], capsys)
    assert_write_error(code, err, out, "Read-only file system")
    assert out.read_bytes() == old[command]
    assert temporaries(folder) == []


# -- permissions, symlinks, special files ----------------------------------------------------


def test_new_outputs_get_the_umask_mode(library: Path, header: Path, tmp_path: Path) -> None:
    for command, args in writers(library, header).items():
        for umask, mode in ((0o027, 0o640), (0o002, 0o664)):
            out = tmp_path / f"{command}-{umask:o}.out"
            done = cli(*args(out), umask=umask)
            assert done.returncode == 0, done.stderr
            assert stat.S_IMODE(os.stat(out).st_mode) == mode, (command, oct(umask))


def test_replaced_outputs_keep_their_mode(library: Path, header: Path, tmp_path: Path) -> None:
    for command, args in writers(library, header).items():
        for mode in (0o604, 0o600, 0o664):
            out = tmp_path / f"{command}.out"
            out.write_text("an older output")
            os.chmod(out, mode)
            done = cli(*args(out), umask=0o022)
            assert done.returncode == 0, done.stderr
            assert out.read_text(errors="replace") != "an older output"
            assert stat.S_IMODE(os.stat(out).st_mode) == mode, (command, oct(mode))


@pytest.mark.skipif(os.geteuid() != 0, reason="only root can give a file to another owner")
def test_replaced_outputs_keep_their_owner(library: Path, header: Path, tmp_path: Path) -> None:
    for command, args in writers(library, header).items():
        out = tmp_path / f"{command}.out"
        out.write_text("an older output")
        os.chown(out, 4321, 4322)
        done = cli(*args(out))
        assert done.returncode == 0, done.stderr
        info = os.stat(out)
        assert (info.st_uid, info.st_gid) == (4321, 4322), command


def test_slim_in_place_through_a_symlink_writes_the_target(library: Path, tmp_path: Path) -> None:
    os.chmod(library, 0o640)
    link = tmp_path / "link.metallib"
    link.symlink_to(library.name)
    done = cli("slim", link, "-o", link, "--keep", "kernel_1*", "--in-place", umask=0o022)
    assert done.returncode == 0, done.stderr
    assert link.is_symlink() and os.readlink(link) == library.name
    with open_metallib(library) as lib:
        assert [fn.name for fn in lib.functions] == ["kernel_1_float32"]
    assert stat.S_IMODE(os.stat(library).st_mode) == 0o640
    assert temporaries(tmp_path) == []


@pytest.mark.parametrize("command", COMMANDS)
def test_output_through_a_symlink(
    command: str, library: Path, header: Path, tmp_path: Path
) -> None:
    real = tmp_path / "outputs" / f"{command}.real"
    real.parent.mkdir()
    real.write_text("old")
    link = tmp_path / f"{command}.link"
    link.symlink_to(real)
    done = cli(*writers(library, header)[command](link))
    assert done.returncode == 0, done.stderr
    assert link.is_symlink() and link.resolve() == real.resolve()
    assert real.read_bytes() != b"old" and real.stat().st_size > 1000


def test_report_into_a_fifo_keeps_the_fifo(library: Path, tmp_path: Path) -> None:
    """A FIFO (or /dev/null, /dev/stdout) cannot be replaced by a rename: it is written directly."""
    expected = cli("report", library, "--by", "function", "--format", "json").stdout.encode()
    fifo = tmp_path / "pipe"
    os.mkfifo(fifo)
    reader = os.open(fifo, os.O_RDWR | os.O_NONBLOCK)  # read end open without waiting for a writer
    got = b""
    try:
        proc = subprocess.Popen(
            [
                sys.executable,
                "-m",
                "builder",
                "report",
                str(library),
                "--by",
                "function",
                "--format",
                "json",
                "-o",
                str(fifo),
            ],
            stderr=subprocess.PIPE,
            text=True,
        )
        with selectors.DefaultSelector() as sel:
            sel.register(reader, selectors.EVENT_READ)
            while len(got) < len(expected) and sel.select(timeout=30):
                got += os.read(reader, 1 << 16)
        _, err = proc.communicate(timeout=60)
    finally:
        os.close(reader)
    assert proc.returncode == 0, err
    assert stat.S_ISFIFO(os.lstat(fifo).st_mode)
    assert got == expected
