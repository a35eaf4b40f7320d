"""CMake and Ninja behind two objects, the located tools and a configured build tree, and Ninja's
output as progress.

``BuildTree`` configures the CMake project (``request.project_dir``) for a build plan: CMake
gets one option, ``-DMETALLIB_PLAN=<plan.json>``, and reads everything from the plan (skipped
when the tree was configured so already: Ninja re-runs CMake itself when plan.json or another
CMake input changes), and builds with Ninja, feeding its status lines to a callback. Every
subprocess goes through :func:`run`. One run at a time uses a build folder
(:func:`build_folder_lock`).

Ninja prints one status line per finished edge (``NINJA_STATUS``, set to ``[%f/%t] ``) and, when a
command fails, ``FAILED: <outputs>`` followed by the command and its output. ``NinjaOutput``
parses lines as they arrive; ``failure_text`` returns what a person needs to see when the build
stopped. The display (:func:`progress_display`) is a rich bar on a terminal and plain status
lines otherwise (CI logs).
"""

from __future__ import annotations

import os
import re
import shutil
import subprocess
import sys
from collections.abc import Callable, Iterator, Mapping, Sequence
from contextlib import contextmanager
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING

from builder.cmake_build.plan_model import project_dir
from builder.errors import BuilderError, OutputError, UsageError
from builder.files.atomic import make_dirs, write_atomic
from builder.files.reading import read_text

if TYPE_CHECKING:
    from rich.console import Console

__all__ = [
    "NINJA_STATUS",
    "BuildFailed",
    "BuildTree",
    "NinjaOutput",
    "RunResult",
    "Status",
    "build_folder_lock",
    "find_tool",
    "parse_status",
    "progress_display",
    "run",
]

NINJA_STATUS = "[%f/%t] "
_STATUS = re.compile(r"^\[(\d+)/(\d+)\] (.*)$")


@dataclass(frozen=True)
class Status:
    """One status line: edges finished, edges in total (may grow), and the edge's description."""

    done: int
    total: int
    description: str


def parse_status(line: str) -> Status | None:
    """The status in ``line``, or None for any other output."""
    match = _STATUS.match(line)
    if match is None:
        return None
    return Status(int(match.group(1)), int(match.group(2)), match.group(3).strip())


@dataclass
class NinjaOutput:
    """Everything Ninja printed, divided into status lines and the rest."""

    statuses: list[Status] = field(default_factory=list)
    other: list[str] = field(default_factory=list)

    def feed(self, line: str) -> Status | None:
        status = parse_status(line)
        if status is None:
            self.other.append(line)
        else:
            self.statuses.append(status)
        return status

    @property
    def edges_run(self) -> int:
        return len(self.statuses)

    def failure_text(self) -> str:
        """From the first ``FAILED:`` line on (the failing command and its output), else all."""
        for i, line in enumerate(self.other):
            if line.startswith("FAILED:"):
                return "\n".join(self.other[i:])
        return "\n".join(self.other[-40:])


@contextmanager
def progress_display(console: Console, title: str) -> Iterator[Callable[[Status], None]]:
    """The block's statuses as a rich bar (TTY) or plain lines (no TTY: CI logs)."""
    if not console.is_terminal:

        def line(status: Status) -> None:
            text = f"[{status.done}/{status.total}] {status.description}"
            console.print(text, markup=False, highlight=False, soft_wrap=True)

        yield line
        return
    from rich.progress import BarColumn, MofNCompleteColumn, Progress, TextColumn, TimeElapsedColumn

    bar = Progress(
        TextColumn("{task.description}"),
        BarColumn(),
        MofNCompleteColumn(),
        TimeElapsedColumn(),
        TextColumn("{task.fields[edge]}"),
        console=console,
        transient=False,
    )
    with bar:  # started, and stopped however the block ends
        task = bar.add_task(title, total=None, edge="")
        yield lambda s: bar.update(task, completed=s.done, total=s.total, edge=s.description)


LOCK_FILE = ".metallib-builder.lock"
"""Held (``builder.files.temporaries.exclusive_lock``) while a run configures, builds and
measures a build folder."""
SETTINGS_FILE = "metallib-builder-settings.json"


class BuildFailed(BuilderError):
    """CMake or Ninja ran and failed; the message carries the failing command's output."""

    exit_code = 1


@dataclass(frozen=True)
class RunResult:
    returncode: int
    lines: list[str]


def run(
    cmd: Sequence[str],
    *,
    cwd: Path | None = None,
    env: Mapping[str, str] | None = None,
    on_line: Callable[[str], None] | None = None,
) -> RunResult:
    """Run ``cmd`` with stdout and stderr merged, line by line; never raises on a bad exit."""
    full_env = {**os.environ, **(env or {})}
    try:
        proc = subprocess.Popen(
            list(cmd),
            cwd=cwd,
            env=full_env,
            stdout=subprocess.PIPE,
            stderr=subprocess.STDOUT,
            stdin=subprocess.DEVNULL,
            text=True,
            errors="replace",
            bufsize=1,
        )
    except OSError as exc:
        raise UsageError(f"cannot run {cmd[0]}: {exc}") from None
    lines: list[str] = []
    assert proc.stdout is not None
    with proc.stdout:
        for raw in proc.stdout:
            line = raw.rstrip("\n")
            lines.append(line)
            if on_line is not None:
                on_line(line)
    return RunResult(proc.wait(), lines)


@contextmanager
def build_folder_lock(
    build_dir: Path, *, wait: bool = True, on_wait: Callable[[str], None] | None = None
) -> Iterator[None]:
    """Create ``build_dir`` and hold its lock for the block: two runs building in one folder at
    once would each measure a mix of the other's configuration and outputs. The second waits
    (``on_wait`` gets a line to show) or, with ``wait=False``, stops: ``UsageError``, exit 2."""
    from builder.files.temporaries import exclusive_lock

    make_dirs(build_dir)
    with exclusive_lock(
        build_dir / LOCK_FILE, what=f"build folder {build_dir}", wait=wait, on_wait=on_wait
    ):
        yield


def find_tool(name: str) -> str:
    """``cmake`` or ``ninja``: from PATH, else from the PyPI package of that name."""
    found = shutil.which(name)
    if found:
        return found
    try:
        module = __import__(name)
        bin_dir = getattr(module, "CMAKE_BIN_DIR" if name == "cmake" else "BIN_DIR")
        candidate = Path(bin_dir) / name
        if candidate.is_file():
            return str(candidate)
    except (ImportError, AttributeError):
        pass
    raise UsageError(f"{name} not found: install it with `pip install {name}`")


class BuildTree:
    """A build directory configured for a plan file: configure once, build many times."""

    def __init__(
        self, build_dir: Path, plan_file: Path, env: Mapping[str, str] | None = None
    ) -> None:
        self.build_dir = build_dir
        self.plan_file = plan_file
        self.env = dict(env or {})
        self.cmake = find_tool("cmake")
        self.ninja = find_tool("ninja")

    def cmake_args(self) -> list[str]:
        """The ``-D`` arguments: the plan (CMake reads every option from it), the build type."""
        return [
            f"-DMETALLIB_PLAN:FILEPATH={os.path.abspath(self.plan_file)}",
            "-DCMAKE_BUILD_TYPE:STRING=Release",
        ]

    def _settings_key(self) -> str:
        """What the configuration depends on besides the plan (which CMake watches itself), but
        not the interpreter that asks: running ``metallib-builder`` and ``python -m builder`` by
        turns must not reconfigure."""
        return "\n".join([str(project_dir().resolve()), *self.cmake_args()])

    def is_configured(self) -> bool:
        """True when the tree exists and was configured for this plan file."""
        marker = self.build_dir / SETTINGS_FILE
        try:
            same = read_text(marker, "the build's settings") == self._settings_key()
        except UsageError:  # missing, or not a file: configure again
            return False
        return same and (self.build_dir / "build.ninja").is_file()

    def configure(
        self, on_line: Callable[[str], None] | None = None, *, again: bool = False
    ) -> None:
        """Run CMake (Ninja generator) unless already configured the same way; ``again``: run
        it anyway (the plan changed: its errors are configuration errors, exit 2, not a
        failed build)."""
        if not again and self.is_configured():
            return
        marker = make_dirs(self.build_dir) / SETTINGS_FILE
        try:
            marker.unlink(missing_ok=True)
        except OSError as exc:
            raise OutputError(f"cannot write {marker}: {exc.strerror or exc}") from exc
        # Absolute paths: a folder named like an option stays a folder.
        cmd = [
            self.cmake,
            "-S",
            os.path.abspath(project_dir()),
            "-B",
            os.path.abspath(self.build_dir),
            "-G",
            "Ninja",
            f"-DCMAKE_MAKE_PROGRAM:FILEPATH={self.ninja}",
            f"-DPython3_EXECUTABLE:FILEPATH={sys.executable}",
            *self.cmake_args(),
        ]
        result = run(cmd, env=self.env, on_line=on_line)
        if result.returncode != 0:
            text = "\n".join(line for line in result.lines if line.strip())
            raise UsageError(f"CMake configuration failed in {self.build_dir}:", detail=text)
        write_atomic(marker, self._settings_key())

    def build(
        self, jobs: int | None = None, on_status: Callable[[Status], None] | None = None
    ) -> NinjaOutput:
        """Run Ninja; statuses go to ``on_status``. BuildFailed (exit 1) with the failing output."""
        output = NinjaOutput()

        def feed(line: str) -> None:
            status = output.feed(line)
            if status is not None and on_status is not None:
                on_status(status)

        cmd = [self.ninja, "-C", os.path.abspath(self.build_dir)] + ([f"-j{jobs}"] if jobs else [])
        result = run(cmd, env={**self.env, "NINJA_STATUS": NINJA_STATUS}, on_line=feed)
        if result.returncode != 0:
            raise BuildFailed(f"build failed in {self.build_dir}:", detail=output.failure_text())
        return output
