"""CMake and Ninja behind two objects: the located tools and a configured build tree.

``BuildTree`` configures the CMake project (``request.project_dir``) for a build request
(``builder.cmake_build.request``: its ``cmake_args`` are the ``-D`` arguments), skipped when the
tree was configured with the same request: Ninja re-runs CMake itself when a CMake input changes)
and builds with Ninja, feeding its status lines to a callback. Every subprocess goes through
:func:`run`. One run at a time uses a build folder (:func:`build_folder_lock`).
"""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
from collections.abc import Callable, Iterator, Mapping, Sequence
from contextlib import contextmanager
from dataclasses import asdict, dataclass
from pathlib import Path

from builder.cmake_build.plan import PLAN_FILE
from builder.cmake_build.progress import NINJA_STATUS, NinjaOutput, Status
from builder.cmake_build.request import BuildRequest, cmake_args, project_dir
from builder.errors import BuilderError, OutputError, UsageError
from builder.files.atomic import make_dirs, write_atomic
from builder.files.bounds import MAX_JSON
from builder.files.reading import read_text

__all__ = [
    "BuildFailed",
    "BuildTree",
    "RunResult",
    "build_folder_lock",
    "find_tool",
    "run",
]

LOCK_FILE = ".metallib-builder.lock"
"""Held (``builder.files.locks``) while a run configures, builds and measures a build folder."""
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
    from builder.files.locks import exclusive_lock

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
    """A build directory configured from ``request``: configure once, build many times."""

    def __init__(
        self,
        request: BuildRequest,
        env: Mapping[str, str] | None = None,
        compiler: str | None = None,
    ) -> None:
        self.request = request
        self.compiler = compiler
        self.env = dict(env or {})
        self.cmake = find_tool("cmake")
        self.ninja = find_tool("ninja")

    @property
    def build_dir(self) -> Path:
        return self.request.build_dir

    def _settings_key(self) -> str:
        """Everything the configuration depends on, but not the interpreter that asks: running
        ``metallib-builder`` and ``python -m builder`` by turns must not reconfigure."""
        data = asdict(self.request)
        data["cmake_args"] = cmake_args(self.request, self.compiler)
        return json.dumps(data, default=str, sort_keys=True)

    def is_configured(self, plan: str | None = None) -> bool:
        """True when the tree exists and was configured with exactly this request (and, when
        given, the plan CMake wrote then is ``plan``: entry files come and go unseen by CMake)."""
        marker = self.build_dir / SETTINGS_FILE
        try:
            same = read_text(marker, "the build's settings") == self._settings_key()
            if same and plan is not None:
                same = read_text(self.build_dir / PLAN_FILE, "the build plan", MAX_JSON) == plan
        except UsageError:  # missing, or not a file: configure again
            return False
        return same and (self.build_dir / "build.ninja").is_file()

    def configure(
        self, on_line: Callable[[str], None] | None = None, plan: str | None = None
    ) -> None:
        """Run CMake (Ninja generator) unless already configured the same way."""
        if self.is_configured(plan):
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
            *cmake_args(self.request, self.compiler),
        ]
        result = run(cmd, env=self.env, on_line=on_line)
        if result.returncode != 0:
            text = "\n".join(line for line in result.lines if line.strip())
            raise UsageError(f"CMake configuration failed in {self.build_dir}:\n{text}")
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
            raise BuildFailed(f"build failed in {self.build_dir}:\n{output.failure_text()}")
        return output
