"""Run a catalog kernel on the CPU through the Metal shim, to test its math against numpy.

``check`` proves kernels compile; this proves they compute the right thing. A small C++ harness
includes the family header, loads the argument buffers from files, calls the instantiated
template once per thread of the grid, and writes the buffers back.

Execution model (the shim's): every threadgroup has one thread and every SIMD-group one lane, so
barriers and shuffles are trivial and thread ``i`` of the grid is threadgroup ``i``. Kernels that
are correct for any threadgroup size (all of ours) give their exact results; ``softmax_block``
handles rows of at most ``WORK_PER_THREAD`` elements in this model.

Test support, not part of the package: it needs numpy (a test dependency) and only the tests
run it (``tests/kernels/test_cpu.py``).
"""

from __future__ import annotations

import hashlib
import os
import re
import subprocess
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any, Union

from builder.errors import UsageError
from builder.kernels.bounded_run import Compiler, find_compiler
from builder.kernels.catalog import Catalog, Instantiation, load_catalog
from builder.kernels.diagnostics import shim_dir_for
from builder.kernels.dtypes import METAL_TYPES

if TYPE_CHECKING:
    import numpy as np

__all__ = ["THREAD_ATTRIBUTES", "CpuRunner", "Typed", "bfloat16_bits", "bfloat16_values"]

# Metal thread attribute -> its value for thread `gid` in the one-thread-per-group model.
THREAD_ATTRIBUTES: dict[str, str] = {
    "thread_position_in_grid": "gid",
    "threadgroup_position_in_grid": "gid",
    "thread_position_in_threadgroup": "0u",
    "thread_index_in_threadgroup": "0u",
    "threads_per_threadgroup": "1u",
    "thread_index_in_simdgroup": "0u",
    "simdgroup_index_in_threadgroup": "0u",
    "threads_per_simdgroup": "1u",
    "simdgroups_per_threadgroup": "1u",
}


@dataclass(frozen=True)
class Typed:
    """An array passed as another element type of the same size: numpy has no bfloat16, so
    bfloat16 buffers travel as their uint16 bits (``Typed(bfloat16_bits(x), "bfloat16")``)."""

    array: np.ndarray[Any, Any]
    dtype: str


def bfloat16_bits(values: np.ndarray[Any, Any]) -> np.ndarray[Any, Any]:
    """float32 values -> bfloat16 bit patterns (uint16), rounded to nearest even."""
    import numpy as np

    u = np.ascontiguousarray(values, dtype=np.float32).view(np.uint32).astype(np.uint64)
    rounded = (u + 0x7FFF + ((u >> 16) & 1)) >> 16
    return rounded.astype(np.uint16)


def bfloat16_values(bits: np.ndarray[Any, Any]) -> np.ndarray[Any, Any]:
    """bfloat16 bit patterns (uint16) -> float32 values (exact)."""
    import numpy as np

    return (bits.astype(np.uint32) << 16).view(np.float32)


Arg = Union["np.ndarray[Any, Any]", "np.generic", Typed, str]

_PRELUDE = """\
#include <cstdio>
#include <cstdlib>
#include <string>
#include <vector>

static std::vector<unsigned char> load(const std::string& path) {
  std::FILE* f = std::fopen(path.c_str(), "rb");
  if (f == nullptr) { std::perror(path.c_str()); std::exit(3); }
  std::fseek(f, 0, SEEK_END);
  long n = std::ftell(f);
  std::fseek(f, 0, SEEK_SET);
  std::vector<unsigned char> data(static_cast<size_t>(n) + 8, 0);  // +8: whole trailing word
  if (n > 0 && std::fread(data.data(), 1, static_cast<size_t>(n), f) != static_cast<size_t>(n))\
 std::exit(3);
  std::fclose(f);
  data.resize(static_cast<size_t>(n) + 8);
  return data;
}

static void save(const std::string& path, const std::vector<unsigned char>& data, size_t n) {
  std::FILE* f = std::fopen(path.c_str(), "wb");
  if (f == nullptr || std::fwrite(data.data(), 1, n, f) != n) std::exit(4);
  std::fclose(f);
}
"""


@dataclass(frozen=True)
class _Plan:
    kinds: tuple[tuple[str, str], ...]  # (kind, C++ type or attribute) per argument


def _ctype(dtype_name: str) -> str:
    if dtype_name not in METAL_TYPES:
        raise UsageError(f"the CPU runner cannot pass numpy dtype {dtype_name}")
    return METAL_TYPES[dtype_name]


class CpuRunner:
    """Compiles (and caches) one harness per kernel and argument signature, and runs it."""

    def __init__(
        self,
        build_dir: Path,
        source_dir: Path | None = None,
        compiler: Compiler | str | None = None,
    ) -> None:
        self.catalog: Catalog = load_catalog(source_dir)
        self.compiler = compiler if isinstance(compiler, Compiler) else find_compiler(compiler)
        self.build_dir = Path(build_dir)
        self.build_dir.mkdir(parents=True, exist_ok=True)
        self._by_name = {i.host_name: i for i in self.catalog.expand()}

    def instantiation(self, host_name: str) -> Instantiation:
        """The catalog entry for ``host_name`` (UsageError when the catalog has none)."""
        try:
            return self._by_name[host_name]
        except KeyError:
            raise UsageError(f"no kernel named {host_name} in {self.catalog.path}") from None

    def _source(self, inst: Instantiation, plan: _Plan) -> str:
        loads, call, saves = [], [], []
        for k, (kind, what) in enumerate(plan.kinds):
            if kind == "attr":
                call.append(THREAD_ATTRIBUTES[what])
                continue
            loads.append(f'  std::vector<unsigned char> b{k} = load(dir + "/{k}.bin");')
            if kind == "array":
                call.append(f"reinterpret_cast<{what}*>(b{k}.data())")
                saves.append(f'  save(dir + "/{k}.out", b{k}, b{k}.size() - 8);')
            else:
                call.append(f"*reinterpret_cast<const {what}*>(b{k}.data())")
        func = f"{inst.template}<{', '.join(inst.template_args)}>"
        lines = [
            _PRELUDE,
            f'#include "{inst.header}"',
            "",
            "int main(int argc, char** argv) {",
            "  if (argc != 3) return 2;",
            "  const std::string dir = argv[1];",
            "  const uint grid = static_cast<uint>(std::strtoul(argv[2], nullptr, 10));",
            *loads,
            "  for (uint gid = 0; gid < grid; ++gid) {",
            f"    {func}({', '.join(call)});",
            "  }",
            *saves,
            "  return 0;",
            "}",
        ]
        return "\n".join(lines) + "\n"

    def _executable(self, source: str) -> Path:
        digest = hashlib.sha256(source.encode()).hexdigest()[:16]
        exe = self.build_dir / f"harness-{digest}"
        if exe.is_file():
            return exe
        src = self.build_dir / f"harness-{digest}.cpp"
        src.write_text(source, encoding="utf-8")
        self._compile([*self._precompiled(), "-o", str(exe), str(src)], src.name)
        return exe

    def _flags(self) -> list[str]:
        shim = shim_dir_for(self.catalog.source_dir)
        flags = self.compiler.base_flags([shim.resolve(), self.catalog.source_dir.resolve()])
        return [*flags, "-O0"]

    def _compile(self, args: list[str], what: str) -> None:
        proc = subprocess.run(
            [self.compiler.path, *self._flags(), *args],
            capture_output=True,
            text=True,
            env={**os.environ, "LC_ALL": "C"},
            check=False,
        )
        if proc.returncode != 0:
            raise UsageError(f"CPU harness {what} did not compile:\n{proc.stderr[-4000:]}")

    def _precompiled(self) -> list[str]:
        """GCC: the flags that read the harnesses' common headers (the standard ones of
        ``_PRELUDE`` and the Metal shim) precompiled, made once per runner with the harnesses'
        own flags (each harness then compiles in 0.24 s instead of 0.61 s). Only a speed-up:
        ``-Winvalid-pch`` plus the headers' own guards keep the text the same. Clang reads
        other files: none."""
        if self.compiler.is_clang:
            return []
        header = self.build_dir / "harness-common.h"
        if not header.with_name(header.name + ".gch").is_file():
            includes = re.findall(r"^#include <\w+>$", _PRELUDE, re.MULTILINE)
            header.write_text("\n".join([*includes, "#include <metal_stdlib>", ""]))
            gch = header.with_name(header.name + ".gch")
            self._compile(["-x", "c++-header", "-c", "-o", str(gch), str(header)], header.name)
        return ["-Winvalid-pch", "-include", str(header)]

    def run(self, host_name: str, args: Sequence[Arg], grid: int) -> list[np.ndarray[Any, Any]]:
        """Run ``host_name`` over ``grid`` threads; returns the array arguments after the run.

        ``args`` follow the kernel's parameters in order: numpy arrays for ``device`` pointers
        (and ``constant`` arrays), :class:`Typed` arrays for bfloat16 buffers (returned as their
        uint16 bits), numpy scalars for ``constant T&`` values, and Metal attribute names
        (``"thread_position_in_grid"``...) for the thread-position parameters.
        """
        import numpy as np

        inst = self.instantiation(host_name)
        kinds: list[tuple[str, str]] = []
        for arg in args:
            if isinstance(arg, str):
                if arg not in THREAD_ATTRIBUTES:
                    raise UsageError(f"unknown thread attribute {arg!r}")
                kinds.append(("attr", arg))
            elif isinstance(arg, Typed):
                width = 2 if arg.dtype == "bfloat16" else np.dtype(arg.dtype).itemsize
                if arg.array.dtype.itemsize != width:
                    raise UsageError(f"a {arg.dtype} buffer needs {width}-byte elements")
                kinds.append(("array", _ctype(arg.dtype)))
            elif isinstance(arg, np.ndarray):
                kinds.append(("array", _ctype(arg.dtype.name)))
            else:
                kinds.append(("scalar", _ctype(np.asarray(arg).dtype.name)))
        exe = self._executable(self._source(inst, _Plan(tuple(kinds))))
        run_dir = self.build_dir / f"run-{os.getpid()}-{abs(hash((host_name, grid))) % 10**8}"
        run_dir.mkdir(exist_ok=True)
        arrays = [a.array if isinstance(a, Typed) else a for a in args]
        for k, arg in enumerate(arrays):
            if not isinstance(arg, str):
                (run_dir / f"{k}.bin").write_bytes(np.ascontiguousarray(arg).tobytes())
        proc = subprocess.run(
            [str(exe), str(run_dir), str(grid)], capture_output=True, text=True, check=False
        )
        if proc.returncode != 0:
            raise UsageError(
                f"{host_name} failed on the CPU (exit {proc.returncode}): {proc.stderr.strip()}"
            )
        outputs = []
        for k, arg in enumerate(arrays):
            if isinstance(arg, np.ndarray):
                data = (run_dir / f"{k}.out").read_bytes()
                outputs.append(np.frombuffer(data, dtype=arg.dtype).reshape(arg.shape).copy())
        return outputs
