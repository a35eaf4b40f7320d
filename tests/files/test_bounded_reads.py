"""Every file the tool is told to read, made hostile: a FIFO, a link to /dev/zero, a file past its
bound (issue 24 items 1, 2, 3 and 12).

A FIFO used to hang ``list``, ``verify``, ``budget`` and ``slim --keep-list``; a link to
``/dev/zero`` made ``budget`` and ``slim --keep-list`` grow until the kernel killed them; a
tree's ``metallib.toml`` that was either was taken for "no settings". Each case here runs the
CLI in its own process, with its address space capped and a deadline, so a regression fails
(MemoryError, or a kill at the deadline) instead of hanging or exhausting the machine; what must
come out is exit 2 and one line naming the file.
"""

from __future__ import annotations

import os
import resource
import signal
import subprocess
import sys
import time
import zipfile
from dataclasses import dataclass
from pathlib import Path

import pytest
from support.hostile import assert_one_error_line, library_with

DEADLINE_S = 60.0
"""Far above a refusal (about a second of interpreter start); a FIFO read blocks forever."""
ADDRESS_SPACE = 1 << 30
"""RLIMIT_AS of the child: reading /dev/zero to its end fails here, not at 23 GB."""
PEAK_RSS = 128 << 20
"""What a refusal may cost at most (measured: 23 to 25 MiB, the interpreter and its imports)."""


@dataclass(frozen=True)
class Run:
    code: int
    out: str
    err: str
    peak_rss: int
    """The CLI's own peak resident memory in bytes (``ru_maxrss`` from ``wait4``, in the
    launcher below)."""


def _limit() -> None:
    resource.setrlimit(resource.RLIMIT_AS, (ADDRESS_SPACE, ADDRESS_SPACE))
    for sig in (signal.SIGHUP, signal.SIGINT, signal.SIGTERM, signal.SIGPIPE):
        signal.signal(sig, signal.SIG_DFL)  # whatever the test runner's own dispositions


# ``ru_maxrss`` of a process counts the memory of the one it was forked from (Linux keeps the
# larger high-water mark across fork and exec), so a child of a pytest worker that has grown past
# PEAK_RSS would "use" the worker's memory. The CLI is therefore started by a small launcher (no
# site, no imports but os and sys): the launcher's child is forked from the launcher, and the
# launcher writes that child's own peak to a file, then exits as the child did.
_LAUNCHER = """
import os, sys
report, argv = sys.argv[1], sys.argv[2:]
pid = os.fork()
if pid == 0:
    os.execv(argv[0], argv)
_, status, usage = os.wait4(pid, 0)
with open(report, "w") as f:
    f.write(str(usage.ru_maxrss))
if os.WIFSIGNALED(status):
    os.kill(os.getpid(), os.WTERMSIG(status))
sys.exit(os.waitstatus_to_exitcode(status))
"""


def run_bounded(args: list[object], cwd: Path, **env: str) -> Run:
    """``metallib-builder ARGS`` in a child process under ``ADDRESS_SPACE``, killed at
    ``DEADLINE_S``; fails the test when it is killed (a read that blocked)."""
    out, err, peak = cwd / ".stdout", cwd / ".stderr", cwd / ".peak"
    command = [sys.executable, "-m", "builder", *map(str, args)]
    with out.open("wb") as stdout, err.open("wb") as stderr:
        proc = subprocess.Popen(
            [sys.executable, "-S", "-c", _LAUNCHER, str(peak), *command],
            cwd=cwd,
            stdin=subprocess.DEVNULL,
            stdout=stdout,
            stderr=stderr,
            env={**os.environ, **env},
            start_new_session=True,  # the launcher and the CLI are killed together
            preexec_fn=_limit,  # noqa: PLW1509 (setrlimit and signal only, before exec)
        )
    start = time.monotonic()
    while proc.poll() is None:
        if time.monotonic() - start > DEADLINE_S:
            os.killpg(proc.pid, signal.SIGKILL)
            proc.wait()
            pytest.fail(f"metallib-builder {args} still running after {DEADLINE_S:.0f} s: hung")
        time.sleep(0.02)
    text = err.read_text(encoding="utf-8", errors="replace")
    return Run(proc.returncode, out.read_text(), text, int(peak.read_text()) * 1024)


def refused(run: Run, *words: str) -> str:
    """Exit 2, one line holding ``words``, within the memory bound (a run past ``DEADLINE_S``
    has failed the test already, in :func:`run_bounded`: a hang guard, not a bound on speed)."""
    line = assert_one_error_line(run.code, run.err, *words)
    assert run.peak_rss < PEAK_RSS, f"peak RSS {run.peak_rss:,} bytes"
    return line


def _hostile(path: Path, kind: str) -> Path:
    """``path`` made a FIFO (no writer ever comes) or a symbolic link to /dev/zero."""
    path.parent.mkdir(parents=True, exist_ok=True)
    if kind == "fifo":
        os.mkfifo(path)
    else:
        path.symlink_to("/dev/zero")
    return path


KINDS = [("fifo", "FIFO"), ("zero", "device")]


@pytest.fixture
def library(tmp_path: Path) -> Path:
    path = tmp_path / "lib.metallib"
    path.write_bytes(library_with(["alpha", "beta"]))
    return path


def _tree(root: Path) -> Path:
    """A kernel tree of one entry file (it is never preprocessed: the settings are refused)."""
    root.mkdir(parents=True, exist_ok=True)
    (root / "k.metal").write_text("kernel void k() {}\n")
    return root


# -- item 1: files named on the command line or found in a folder --------------------------------
@pytest.mark.parametrize(("kind", "word"), KINDS)
def test_budget_file(tmp_path: Path, kind: str, word: str) -> None:
    _hostile(tmp_path / "metallib-size.toml", kind)
    run = run_bounded(["budget", "metallib-size.toml"], tmp_path)
    refused(run, "metallib-size.toml", "not a regular file", word)


@pytest.mark.parametrize(("kind", "word"), KINDS)
def test_keep_list(tmp_path: Path, library: Path, kind: str, word: str) -> None:
    keep = _hostile(tmp_path / "keep.txt", kind)
    run = run_bounded(["slim", library, "-o", "out.metallib", "--keep-list", keep], tmp_path)
    refused(run, "keep.txt", "keep list", "not a regular file", word)
    assert not (tmp_path / "out.metallib").exists()


@pytest.mark.parametrize(("kind", "word"), KINDS)
def test_config_option(tmp_path: Path, kind: str, word: str) -> None:
    tree = _tree(tmp_path / "tree")
    config = _hostile(tmp_path / "settings.toml", kind)
    run = run_bounded(["kernels", "--source-dir", tree, "--config", config], tmp_path)
    refused(run, "settings.toml", "not a regular file", word)


@pytest.mark.parametrize(("kind", "word"), KINDS)
def test_rules_file(tmp_path: Path, library: Path, kind: str, word: str) -> None:
    rules = _hostile(tmp_path / "my.rules", kind)
    run = run_bounded(["report", library, "--rules", rules], tmp_path)
    refused(run, "my.rules", "rule file", "not a regular file", word)


@pytest.mark.parametrize(("kind", "word"), KINDS)
def test_saved_report_and_wheel(tmp_path: Path, kind: str, word: str) -> None:
    report, wheel = _hostile(tmp_path / "r.json", kind), _hostile(tmp_path / "w.whl", kind)
    refused(run_bounded(["report", report], tmp_path), "r.json", "not a regular file", word)
    refused(run_bounded(["compare", report, report], tmp_path), "r.json", word)
    refused(run_bounded(["report", wheel], tmp_path), "w.whl", "not a regular file", word)


@pytest.mark.parametrize(("kind", "word"), KINDS)
def test_build_manifest(tmp_path: Path, kind: str, word: str) -> None:
    _hostile(tmp_path / "build" / "manifest.json", kind)
    run = run_bounded(["report", "build"], tmp_path)
    refused(run, "manifest.json", "build manifest", "not a regular file", word)


@pytest.mark.parametrize(("kind", "word"), KINDS)
def test_github_event(tmp_path: Path, library: Path, kind: str, word: str) -> None:
    event = _hostile(tmp_path / "event.json", kind)
    run = run_bounded(
        ["compare", library, library, "--github-comment"],
        tmp_path,
        GITHUB_TOKEN="t",
        GITHUB_REPOSITORY="o/r",
        GITHUB_API_URL="https://api.github.com",
        GITHUB_EVENT_PATH=str(event),
    )
    refused(run, "event.json", "GITHUB_EVENT_PATH", "not a regular file", word)


def test_a_file_past_its_bound_is_refused_naming_the_variable(
    tmp_path: Path, library: Path
) -> None:
    """Regular files are bounded too: ``METALLIB_BUILDER_MAX_TEXT`` (set low here) stops a keep
    list one byte past it."""
    keep = tmp_path / "keep.txt"
    keep.write_text("alpha\n" * 200)  # 1,200 bytes
    args = ["slim", library, "-o", "out.metallib", "--keep-list", keep]
    line = refused(
        run_bounded(args, tmp_path, METALLIB_BUILDER_MAX_TEXT="1199"), "keep.txt", "1,199 bytes"
    )
    assert "METALLIB_BUILDER_MAX_TEXT" in line
    assert run_bounded(args, tmp_path, METALLIB_BUILDER_MAX_TEXT="1200").code == 0


# -- item 2: the container commands share one check ---------------------------------------------
@pytest.mark.parametrize("command", ["list", "verify", "report"])
@pytest.mark.parametrize(("kind", "word"), KINDS)
def test_container_commands(tmp_path: Path, command: str, kind: str, word: str) -> None:
    path = _hostile(tmp_path / "x.metallib", kind)
    line = refused(run_bounded([command, path], tmp_path), "x.metallib", "not a regular file", word)
    assert "no such file" not in line


@pytest.mark.parametrize(("kind", "word"), KINDS)
def test_slim_input(tmp_path: Path, kind: str, word: str) -> None:
    path = _hostile(tmp_path / "x.metallib", kind)
    run = run_bounded(["slim", path, "-o", "out.metallib", "--keep", "*"], tmp_path)
    refused(run, "x.metallib", "not a regular file", word)


# -- item 3: a tree's own settings and catalog ---------------------------------------------------
@pytest.mark.parametrize("name", ["metallib.toml", "catalog.json"])
@pytest.mark.parametrize(("kind", "word"), KINDS)
def test_tree_settings_are_not_ignored(tmp_path: Path, name: str, kind: str, word: str) -> None:
    tree = _tree(tmp_path / "tree")
    _hostile(tree / name, kind)
    run = run_bounded(["kernels", "--source-dir", tree], tmp_path)
    refused(run, name, "not a regular file", word)


def test_a_dangling_tree_settings_link_is_refused(tmp_path: Path) -> None:
    tree = _tree(tmp_path / "tree")
    (tree / "metallib.toml").symlink_to(tmp_path / "nowhere.toml")
    run = run_bounded(["kernels", "--source-dir", tree], tmp_path)
    refused(run, "metallib.toml", "No such file")


# -- item 12: the wheel cache keeps only usable results ------------------------------------------
def test_a_member_that_is_not_a_metallib_leaves_nothing_in_the_cache(tmp_path: Path) -> None:
    """A wheel whose ``*.metallib`` member is 64 MB of zeros (a few KB deflated): after the
    refusal, neither the extraction nor the wheel's digest record is left in the cache."""
    wheel = tmp_path / "fake-1.0-py3-none-macosx_14_0_arm64.whl"
    with zipfile.ZipFile(wheel, "w", zipfile.ZIP_DEFLATED) as archive:
        archive.writestr("fake/lib/fake.metallib", bytes(64 << 20))
        archive.writestr("fake-1.0.dist-info/METADATA", "Name: fake\nVersion: 1.0\n")
    cache = tmp_path / "cache"
    run = run_bounded(["report", wheel], tmp_path, METALLIB_BUILDER_CACHE=str(cache))
    refused(run, wheel.name, "fake/lib/fake.metallib", "not a metallib", "byte offset 0")
    left = [p.relative_to(cache) for p in cache.rglob("*") if not p.is_dir()]
    assert left == []
    assert list((cache / "metallibs").iterdir()) == []
