"""CMake and Ninja behind two objects: the located tools and a configured build tree.

``BuildSettings`` (frozen) is everything a build depends on; ``cmake_args`` turns it into typed
``-D`` arguments in one place. ``BuildTree`` configures (skipped when the tree was configured with
the same settings: Ninja re-runs CMake itself when a CMake input changes) and builds with Ninja,
feeding its status lines to a callback. Every subprocess goes through :func:`run`.
"""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
from collections.abc import Callable, Mapping, Sequence
from dataclasses import asdict, dataclass, field
from pathlib import Path

from builder.cmake_build.progress import NINJA_STATUS, NinjaOutput, Status
from builder.errors import BuilderError, OutputError, UsageError
from builder.fileio import make_dirs, write_atomic

__all__ = [
    "BuildFailed",
    "BuildSettings",
    "BuildTree",
    "RunResult",
    "cmake_args",
    "find_tool",
    "run",
]

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
            list(cmd), cwd=cwd, env=full_env, stdout=subprocess.PIPE, stderr=subprocess.STDOUT,
            stdin=subprocess.DEVNULL, text=True, errors="replace", bufsize=1,
        )  # fmt: skip
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


@dataclass(frozen=True, kw_only=True)
class BuildSettings:
    """What one build is: the tree, the selection, the modes and the toolchain."""

    source_dir: Path
    build_dir: Path
    jit: bool
    kernels: tuple[str, ...] = ()
    """Families to build; empty means all."""
    jit_kernels: tuple[str, ...] = ()
    """Families built JIT whatever ``jit`` says; the others AOT."""
    dtypes: tuple[str, ...] = ()
    metal_compiler: str | None = None
    metallib_linker: str | None = None
    chunk_size: int | None = None
    compress: bool = False
    kernel_dir: Path | None = None
    """Kernel tree (METAL_SOURCE_DIR); None: the one beside the CMakeLists."""
    extra: tuple[tuple[str, str], ...] = field(default=())

    @property
    def needs_aot(self) -> bool:
        """True when some family would be compiled AOT (CMake decides the exact set)."""
        if self.jit_kernels:
            return not self.kernels or set(self.kernels) - set(self.jit_kernels) != set()
        return not self.jit


def cmake_args(settings: BuildSettings) -> list[str]:
    """The typed ``-D`` arguments for ``settings`` (the one place that knows their names)."""
    defs: list[tuple[str, str, str]] = [
        ("METAL_JIT", "BOOL", "ON" if settings.jit else "OFF"),
        ("METAL_KERNELS", "STRING", ";".join(settings.kernels)),
        ("METAL_JIT_KERNELS", "STRING", ";".join(settings.jit_kernels)),
        ("METAL_DTYPES", "STRING", ";".join(settings.dtypes)),
        ("METAL_JIT_COMPRESS", "BOOL", "ON" if settings.compress else "OFF"),
        ("Python3_EXECUTABLE", "FILEPATH", sys.executable),
        ("CMAKE_BUILD_TYPE", "STRING", "Release"),
    ]
    if settings.chunk_size is not None:
        defs.append(("METAL_AOT_CHUNK_SIZE", "STRING", str(settings.chunk_size)))
    if settings.metal_compiler:
        defs.append(("METAL_COMPILER", "FILEPATH", settings.metal_compiler))
    if settings.metallib_linker:
        defs.append(("METALLIB_LINKER", "FILEPATH", settings.metallib_linker))
    if settings.kernel_dir is not None:
        defs.append(("METAL_SOURCE_DIR", "PATH", str(settings.kernel_dir)))
    defs += [(k, "STRING", v) for k, v in settings.extra]
    return [f"-D{name}:{type_}={value}" for name, type_, value in defs]


class BuildTree:
    """A build directory configured from ``settings``: configure once, build many times."""

    def __init__(self, settings: BuildSettings, env: Mapping[str, str] | None = None) -> None:
        self.settings = settings
        self.env = dict(env or {})
        self.cmake = find_tool("cmake")
        self.ninja = find_tool("ninja")

    @property
    def build_dir(self) -> Path:
        return self.settings.build_dir

    def _settings_key(self) -> str:
        data = asdict(self.settings)
        data["cmake_args"] = cmake_args(self.settings)
        return json.dumps(data, default=str, sort_keys=True)

    def is_configured(self) -> bool:
        """True when the tree exists and was configured with exactly these settings."""
        marker = self.build_dir / SETTINGS_FILE
        try:
            same = marker.read_text(encoding="utf-8") == self._settings_key()
        except OSError:
            return False
        return same and (self.build_dir / "build.ninja").is_file()

    def configure(self, on_line: Callable[[str], None] | None = None) -> None:
        """Run CMake (Ninja generator) unless already configured the same way."""
        if self.is_configured():
            return
        marker = make_dirs(self.build_dir) / SETTINGS_FILE
        try:
            marker.unlink(missing_ok=True)
        except OSError as exc:
            raise OutputError(f"cannot write {marker}: {exc.strerror or exc}") from exc
        cmd = [self.cmake, "-S", str(self.settings.source_dir), "-B", str(self.build_dir),
               "-G", "Ninja", f"-DCMAKE_MAKE_PROGRAM:FILEPATH={self.ninja}",
               *cmake_args(self.settings)]  # fmt: skip
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

        cmd = [self.ninja, "-C", str(self.build_dir)] + ([f"-j{jobs}"] if jobs else [])
        result = run(cmd, env={**self.env, "NINJA_STATUS": NINJA_STATUS}, on_line=feed)
        if result.returncode != 0:
            raise BuildFailed(f"build failed in {self.build_dir}:\n{output.failure_text()}")
        return output
