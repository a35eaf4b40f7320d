"""Running the host preprocessor within the bounds of ``builder.files.bounds``: its time, its
memory and the size of what it writes, the compiler and its children killed as one process
group; and the first diagnostic of a failed run, for the one line the user sees.
``builder.kernels.preprocess`` builds the command lines.

Finding the host C++ compiler that stands in for the Metal compiler on Linux.

``check`` and the CPU runner compile kernel sources as C++17 against the shim in
``metal_src/shim``. Any g++ >= 12 or clang >= 15 works (they have ``_Float16`` for ``half``). The
choice is explicit (``--compiler``), else ``$CXX``, else the first of g++, clang++, c++ on PATH.
"""

from __future__ import annotations

import os
import re
import resource
import select
import shutil
import signal
import subprocess
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import IO

from builder.errors import UsageError
from builder.files.bounds import PP_MEMORY, PP_OUTPUT, PP_TIMEOUT

__all__ = ["Compiler", "PreprocessError", "find_compiler", "first_diagnostic", "run_bounded"]


_ERROR_LINE = re.compile(r":\s*(?:fatal )?error:")


class PreprocessError(UsageError):
    """An entry file did not preprocess (exit 2): one line naming it and the first diagnostic."""


def first_diagnostic(stderr: str, entry: str | None = None) -> str:
    """The compiler's first error line (``file:line:col: error: ...``), else its last line.

    ``entry``: the file the compiler ran on. The compiler prints its name as it is, so a line
    break in the name (``n<newline>l.metal``) would cut the diagnostic in two and leave
    ``l.metal:1:2: error: ...``; the name is kept whole (the CLI shows it escaped)."""
    token = "\x00entry\x00"
    whole = entry if entry is not None and entry.splitlines() != [entry] else None
    if whole is not None:
        stderr = stderr.replace(whole, token)
    # Entry files were named ./NAME (operand): the diagnostic names them as the user does.
    lines = [line.strip().removeprefix("./") for line in stderr.splitlines() if line.strip()]
    found = next((line for line in lines if _ERROR_LINE.search(line)), None)
    line = found or (lines[-1] if lines else "no diagnostic printed")
    return line.replace(token, whole) if whole is not None else line


def _output_file() -> IO[bytes]:
    """An unnamed file for the compiler's output: in memory where Linux offers one (memfd),
    else an unlinked temporary file. Not a pipe: a pipe fills after 64 KiB and the compiler then
    waits until Python (holding the GIL while it parses another file) drains it."""
    if hasattr(os, "memfd_create"):
        try:
            fd = os.memfd_create("metallib-builder-pp", os.MFD_CLOEXEC)
        except OSError:
            pass
        else:
            try:
                return open(fd, "w+b")
            except BaseException:
                os.close(fd)  # not left open when the file object cannot be made
                raise
    import tempfile

    return tempfile.TemporaryFile()


_BOUNDED = 'ulimit -v "$1" && ulimit -f "$2" && shift 2 && exec "$@"'
"""Runs the preprocessor under /bin/sh with its address space (``-v``, KiB) and the size of any
file it writes (``-f``, 512-byte blocks: the output; past it the kernel stops the writer with
SIGXFSZ) bounded. A shell rather than ``preexec_fn``, which is unsafe with the threads discovery
runs."""


def _within_hard_limit(which: int, value: int, unit: int) -> int:
    """``value`` (in ``unit`` bytes) lowered to the hard resource limit ``which`` in force."""
    hard = resource.getrlimit(which)[1]
    return value if hard == resource.RLIM_INFINITY else min(value, hard // unit)


def run_bounded(cmd: Sequence[str], cwd: Path, entry: str) -> tuple[int, str, str]:
    """(exit status, stdout, stderr) of ``cmd`` run with the bounds of ``builder.files.bounds``
    (time, memory, output); PreprocessError if it cannot start, runs out of time or writes too
    much. The compiler and its children form their own process group, killed as a whole on
    timeout (cc1plus blocked on a FIFO it was told to include must not outlive the run)."""
    timeout = PP_TIMEOUT.value()
    memory = PP_MEMORY.value()
    output = PP_OUTPUT.value()
    blocks = -(-output // 512)
    # never above what this process may have itself: a shell cannot raise a hard limit
    kib = _within_hard_limit(resource.RLIMIT_AS, -(-memory // 1024), 1024)
    blocks = _within_hard_limit(resource.RLIMIT_FSIZE, blocks, 512)
    bounded = ["/bin/sh", "-c", _BOUNDED, "sh", str(kib), str(blocks), *cmd]
    with _output_file() as out, _output_file() as err:
        try:
            proc = subprocess.Popen(
                bounded,
                cwd=cwd,
                stdin=subprocess.DEVNULL,
                stdout=out,
                stderr=err,
                start_new_session=True,
            )
        except OSError as exc:
            raise PreprocessError(f"{entry}: cannot run {cmd[0]}: {exc.strerror or exc}") from None
        try:
            code = _wait(proc, timeout)
        except subprocess.TimeoutExpired:
            _kill_group(proc)
            raise PreprocessError(f"{entry}: {PP_TIMEOUT.exceeded(timeout)}") from None
        except BaseException:  # Ctrl-C: no compiler left running
            _kill_group(proc)
            raise
        if max(os.fstat(out.fileno()).st_size, os.fstat(err.fileno()).st_size) >= blocks * 512:
            raise PreprocessError(f"{entry}: {PP_OUTPUT.exceeded(output)}")
        out.seek(0)
        err.seek(0)
        stderr = err.read().decode("utf-8", "replace")
        if code != 0 and _OUT_OF_MEMORY.search(stderr):
            raise PreprocessError(
                f"{entry}: does not preprocess: {first_diagnostic(stderr, entry)}; "
                f"{PP_MEMORY.exceeded(memory)}"
            )
        return code, out.read().decode("utf-8", "replace"), stderr


def _wait(proc: subprocess.Popen[bytes], timeout: float) -> int:
    """``proc``'s exit status once it ends (TimeoutExpired after ``timeout`` seconds).

    ``Popen.wait(timeout)`` polls with sleeps that double up to 50 ms, so a compiler run was
    noticed up to 50 ms after it ended; on Linux the process's pidfd is waited on with
    ``poll()``, which returns when it ends."""
    try:
        pidfd = os.pidfd_open(proc.pid)
    except (AttributeError, OSError):  # not Linux 5.3+: Python's own wait
        return proc.wait(timeout=timeout)
    try:
        ended = select.poll()
        ended.register(pidfd, select.POLLIN)
        if not ended.poll(timeout * 1000):
            raise subprocess.TimeoutExpired(proc.args, timeout)
    finally:
        os.close(pidfd)
    return proc.wait()  # it has ended: this only reaps it


_OUT_OF_MEMORY = re.compile(
    r"out of memory|memory exhausted|bad_alloc|cannot allocate", re.IGNORECASE
)


def _kill_group(proc: subprocess.Popen[bytes]) -> None:
    try:
        os.killpg(proc.pid, signal.SIGKILL)
    except OSError:  # gone already
        pass
    proc.wait()


_CANDIDATES = ("g++", "clang++", "c++")


@dataclass(frozen=True)
class Compiler:
    """A located C++ compiler and the flags that make it behave like our Metal front end."""

    path: str
    is_clang: bool
    version: str

    def base_flags(self, include_dirs: list[Path]) -> list[str]:
        """Language, warnings and plain diagnostics (no colour, no caret) for parsing."""
        flags = ["-std=c++17", "-x", "c++", "-Wall", "-Wextra", "-Wno-unknown-pragmas"]
        flags += ["-fno-diagnostics-show-caret"]
        if self.is_clang:
            flags += ["-fno-color-diagnostics", "-ferror-limit=50", "-Wno-ignored-attributes"]
        else:
            flags += [
                "-fdiagnostics-color=never",
                "-fmax-errors=50",
                "-fno-diagnostics-show-line-numbers",
            ]
        # Joined and absolute: no folder name can be read as an option (docs/security.md).
        flags += [f"-I{os.path.abspath(directory)}" for directory in include_dirs]
        return flags


def find_compiler(explicit: str | None = None, env: Mapping[str, str] | None = None) -> Compiler:
    """Locate a compiler, or raise UsageError (exit 2) saying how to get one."""
    env = os.environ if env is None else env
    wanted = explicit or env.get("CXX")
    names = [wanted] if wanted else list(_CANDIDATES)
    for name in names:
        path = shutil.which(name)
        if path is None:
            continue
        try:
            proc = subprocess.run(
                [path, "--version"], capture_output=True, text=True, timeout=30, check=False
            )
        except (OSError, subprocess.TimeoutExpired):
            continue
        if proc.returncode == 0:
            first = proc.stdout.splitlines()[0] if proc.stdout else name
            return Compiler(path, "clang" in proc.stdout.lower(), first.strip())
    if wanted:
        raise UsageError(f"C++ compiler {wanted!r} not found or not runnable")
    raise UsageError(
        "no C++ compiler found (tried g++, clang++, c++); install g++ >= 12 or clang >= 15, "
        "or pass --compiler / set CXX"
    )
