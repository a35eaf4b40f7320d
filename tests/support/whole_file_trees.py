"""Small kernel trees in the shapes of projects that compile whole entry files at run time,
written here (nothing copied from the projects):

- **ggml** (llama-cpp-python 0.3.2's ``ggml-metal``): one big ``.metal`` file that writes its
  kernel templates and instantiates them, and includes a header of the folder above it (``-I ..``);
- **llama** (0.3.36's ``ggml-metal/kernels``): entry files under ``kernels/``, a shared header, and
  ``.metal`` files that other ``.metal`` files include (headers, not entry files);
- **candle** (``candle-metal-kernels``): files whose kernels are written by macros in the file
  itself, sharing a ``#pragma once`` ``utils.metal`` that names no kernel.

Each tree: ``(root, -I folders, {entry file: the kernels it emits})``, counted by hand.
"""

from __future__ import annotations

from pathlib import Path

__all__ = ["SHAPES", "candle_tree", "ggml_tree", "llama_tree"]

Tree = tuple[Path, tuple[Path, ...], dict[str, list[str]]]


def _write(root: Path, files: dict[str, str]) -> None:
    for name, text in files.items():
        (root / name).parent.mkdir(parents=True, exist_ok=True)
        (root / name).write_text(text)


def ggml_tree(base: Path) -> Tree:
    _write(
        base,
        {
            "common-types.h": (
                "#pragma once\n// shared with the CPU code: block layouts\n"
                "typedef struct { half d; char qs[32]; } block_q8;\n"
            ),
            "metal/ops.metal": (
                "#include <metal_stdlib>\n"
                '#include "common-types.h"\n'
                "using namespace metal;\n"
                '/* a comment that names #include "not-a-file.h" */\n'
                "template <typename T>\n"
                "kernel void kernel_add(device const T* a, device T* b, uint i "
                "[[thread_position_in_grid]]) { b[i] += a[i]; }\n"
                "typedef decltype(kernel_add<float>) kernel_add_t;\n"
                'template [[host_name("kernel_add_f32")]] kernel kernel_add_t kernel_add<float>;\n'
                'template [[host_name("kernel_add_f16")]] kernel decltype(kernel_add<half>) '
                "kernel_add<half>;\n"
                "kernel void kernel_get_rows_q8(device const block_q8* src, device float* dst, "
                "uint i [[thread_position_in_grid]]) { dst[i] = float(src[i].d); }\n"
            ),
        },
    )
    return (
        base / "metal",
        (base,),
        {"ops.metal": ["kernel_add_f32", "kernel_add_f16", "kernel_get_rows_q8"]},
    )


def llama_tree(base: Path) -> Tree:
    root = base / "ggml-metal"
    _write(
        root,
        {
            "impl.h": "#pragma once\n#define N_SIMD 32\n",
            "kernels/common.h": '#pragma once\n#include "impl.h"\ninline float sq(float x) '
            "{ return x * x; }\n",
            "kernels/fa_common.metal": (
                '#include "common.h"\n'
                "template <typename T, short D>\n"
                "kernel void kernel_fa(device const T* q, device T* o, uint i "
                "[[thread_position_in_grid]]) { o[i] = T(sq(float(q[i])) * D); }\n"
            ),
            "kernels/fa_f16.metal": (
                '#include "fa_common.metal"\n'
                "typedef decltype(kernel_fa<half, 64>) fa_t;\n"
                'template [[host_name("kernel_fa_f16_h64")]] kernel fa_t kernel_fa<half, 64>;\n'
                'template [[host_name("kernel_fa_f16_h128")]] kernel decltype(kernel_fa<half, 128>)'
                " kernel_fa<half, 128>;\n"
            ),
            "kernels/fa_f32.metal": (
                '#include "fa_common.metal"\n'
                'template [[host_name("kernel_fa_f32_h64")]] kernel decltype(kernel_fa<float, 64>)'
                " kernel_fa<float, 64>;\n"
            ),
            "kernels/norm.metal": (
                '#include "common.h"\n'
                "kernel void kernel_norm(device float* x, uint i [[thread_position_in_grid]]) "
                "{ x[i] = sq(x[i]) / N_SIMD; }\n"
            ),
        },
    )
    return (
        root,
        (base, root),
        {
            "kernels/fa_f16.metal": ["kernel_fa_f16_h64", "kernel_fa_f16_h128"],
            "kernels/fa_f32.metal": ["kernel_fa_f32_h64"],
            "kernels/norm.metal": ["kernel_norm"],
        },
    )


def candle_tree(base: Path) -> Tree:
    root = base / "src"
    unary = "".join(f"UNARY({op}, float, {op}_f32)\nUNARY({op}, half, {op}_f16)\n" for op in "ab")
    _write(
        root,
        {
            "utils.metal": "#pragma once\n#include <metal_stdlib>\nusing namespace metal;\n"
            "METAL_FUNC uint idx(uint i) { return i; }\n",
            "unary.metal": (
                '#include "utils.metal"\n'
                "#define UNARY(FN, T, NAME) \\\n"
                "kernel void NAME(device const T* in, device T* out, uint i "
                "[[thread_position_in_grid]]) { out[idx(i)] = T(FN); }\n"
                "#define a 1\n#define b 2\n" + unary
            ),
            "fill.metal": (
                "#include <metal_stdlib>\nusing namespace metal;\n"
                "template <typename T> METAL_FUNC void fill(device T* out, T v, uint i) "
                "{ out[i] = v; }\n"
                "#define FILL(NAME, T) kernel void NAME(device T* out, constant T& v, uint i "
                "[[thread_position_in_grid]]) { fill<T>(out, v, i); }\n"
                "FILL(fill_f32, float)\nFILL(fill_u8, uchar)\n"
            ),
        },
    )
    return (
        root,
        (),
        {
            "fill.metal": ["fill_f32", "fill_u8"],
            "unary.metal": ["a_f32", "a_f16", "b_f32", "b_f16"],
        },
    )


SHAPES = {"ggml": ggml_tree, "llama": llama_tree, "candle": candle_tree}
