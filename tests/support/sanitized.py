"""Compiling generated C++ with AddressSanitizer and UBSan into one program and reading back the
texts it writes (tests/jit/test_roundtrip.py for preambles, tests/jit/test_whole_file.py for
entry files embedded whole)."""

from __future__ import annotations

import os
import struct
import subprocess
from collections.abc import Mapping, Sequence
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

from builder.kernels.bounded_run import find_compiler
from builder.resources import metal_src_dir

__all__ = ["EMIT", "SANITIZE", "compile_and_run", "texts"]

HOST = metal_src_dir() / "host"
SANITIZE = ["-fsanitize=address,undefined", "-fno-sanitize-recover=all"]
RUN_ENV = {**os.environ, "ASAN_OPTIONS": "detect_leaks=0", "UBSAN_OPTIONS": "print_stacktrace=1"}

EMIT = """#include <cstdint>
#include <cstdio>
#include <string_view>
static void emit(std::string_view text) {
  std::uint64_t size = text.size();
  std::fwrite(&size, sizeof size, 1, stdout);
  std::fwrite(text.data(), 1, text.size(), stdout);
}
"""


def compile_and_run(
    workdir: Path,
    sources: dict[str, str],
    extra: Sequence[str] = (),
    flags: Mapping[str, Sequence[str]] | None = None,
) -> bytes:
    """Compile ``sources`` (name -> text) with the sanitizers, two at a time (``flags``: more
    options for some of them), link them with ``extra`` (objects, libraries), run the program;
    its standard output."""
    cxx = find_compiler().path
    workdir.mkdir(parents=True, exist_ok=True)
    include = ["-I", str(HOST / "include")]

    def build(name: str) -> Path:
        (workdir / name).write_text(sources[name], encoding="utf-8")
        obj = workdir / f"{name}.o"
        run = subprocess.run(
            [
                cxx,
                "-std=c++17",
                "-O0",
                *SANITIZE,
                *include,
                *(flags or {}).get(name, ()),
                "-c",
                str(workdir / name),
                "-o",
                str(obj),
            ],
            capture_output=True,
            text=True,
            check=False,
        )
        assert run.returncode == 0, f"{name}: {run.stderr[-3000:]}"
        return obj

    with ThreadPoolExecutor(max_workers=2) as pool:
        objects = list(pool.map(build, sorted(sources, key=lambda n: -len(sources[n]))))
    exe = workdir / "roundtrip"
    link = subprocess.run(
        [cxx, *SANITIZE, *map(str, objects), *extra, "-o", str(exe)],
        capture_output=True,
        text=True,
        check=False,
    )
    assert link.returncode == 0, link.stderr[-3000:]
    run = subprocess.run([str(exe)], capture_output=True, env=RUN_ENV, check=False)
    assert run.returncode == 0, run.stderr.decode("utf-8", "replace")[:3000]  # the report's head
    return run.stdout


def texts(output: bytes) -> list[str]:
    """The texts the program emitted, in order."""
    out, at = [], 0
    while at < len(output):
        (size,) = struct.unpack_from("=Q", output, at)
        out.append(output[at + 8 : at + 8 + size].decode("utf-8"))
        at += 8 + size
    return out
