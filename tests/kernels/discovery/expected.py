"""What each MLX-style entry file emits, worked out by hand from tests/data/mlx_style.

Each name below was derived by reading the entry file's macros, not by running discovery:
e.g. ``unary_layouts(Abs, float16, half)`` expands ``"v_" #op #tname #tname`` to
``"v_" "Abs" "float16" "float16"``, which C++ joins into ``v_Absfloat16float16``.
"""

from __future__ import annotations

UNARY = {
    "v_Absfloat16float16",
    "v2_Absfloat16float16",
    "gn1_Absfloat16float16",
    "v_Absfloat32float32",
    "v2_Absfloat32float32",
    "gn1_Absfloat32float32",
    "v_Absbfloat16bfloat16",
    "v2_Absbfloat16bfloat16",
    "gn1_Absbfloat16bfloat16",
    "v_Sinfloat16float16",
    "v2_Sinfloat16float16",
    "gn1_Sinfloat16float16",
    "v_Sinfloat32float32",
    "v2_Sinfloat32float32",
    "gn1_Sinfloat32float32",
    "v_Sinbfloat16bfloat16",
    "v2_Sinbfloat16bfloat16",
    "gn1_Sinbfloat16bfloat16",
    "v_Expfloat32float32",
    "v2_Expfloat32float32",
    "gn1_Expfloat32float32",
}
BINARY = {
    "ss_Addfloat16",
    "vv_Addfloat16",
    "ss_Multiplyfloat16",
    "vv_Multiplyfloat16",
    "ss_Addfloat32",
    "vv_Addfloat32",
    "ss_Multiplyfloat32",
    "vv_Multiplyfloat32",
    "gn2_Addfloat32",
}
ARANGE = {"arangefloat32", "arangefloat16", "arangeint32"}
PLAIN = {
    "fill_ones",
    "scale_by_two",
    "clamp_unit",
    "renamed_kernel",
    "copy_values_float32",
    "copy_values_int32",
    "after_pragma",
}
TILES = {
    "tile_copy_float32_bm32_bn32_tfalse",
    "tile_copy_float32_bm64_bn16_ttrue",
    "tile_copy_bfloat16_bm32_bn32_tfalse",
    "tile_copy_bfloat16_bm64_bn16_ttrue",
}
# fft.metal instantiates fft_pass (written in fft.h) three times; make_twiddles, a kernel fft.h
# writes with a body, is emitted by fft.metal, which includes it.
FFT = {"fft_pass_float32_n4", "fft_pass_float32_n8", "fft_pass_float16_n4", "make_twiddles"}
VERSIONED_DEFAULT = {"before_msl32", "macos_kernel"}  # __METAL_VERSION__ 310, macOS
VERSIONED_320 = {"v_Cosfloat32float32", "msl32_only", "macos_kernel"}

BY_FILE = {
    "arange_subset.metal": ARANGE,
    "binary_subset.metal": BINARY,
    "fft.metal": FFT,
    "plain_kernels.metal": PLAIN,
    "tiles/tile_copy.metal": TILES,
    "unary_subset.metal": UNARY,
    "versioned.metal": VERSIONED_DEFAULT,
}
# Instantiations that mirror kernels mlx-metal 0.32.0 ships (same names, same templates).
MIRRORED = UNARY | BINARY | ARANGE | {"v_Cosfloat32float32"}
# Kernels of our own: no MLX library has them.
OWN = PLAIN | TILES | FFT | {"before_msl32", "macos_kernel", "msl32_only", "extra_kernel"}
# Where each kernel's code is written, read off the files: a template's definition, or the
# function itself. Anything not listed is written in a header outside the tree (MLX's).
WRITTEN_IN = {
    **{name: "fft.h" for name in FFT},
    **{name: "plain_kernels.metal" for name in PLAIN},
    **{name: "tiles/tile_copy.metal" for name in TILES},
    **{
        name: "versioned.metal"
        for name in ("before_msl32", "macos_kernel", "msl32_only", "extra_kernel")
    },
}
# Entry files that write kernel templates themselves: they stay AOT in every split.
OWN_TEMPLATES = {"plain_kernels.metal": ["copy_values"], "tiles/tile_copy.metal": ["tile_copy"]}
# Kernel templates no entry file instantiates (indexing/scatter_rows.h is included by none).
RUNTIME_ONLY = [
    {"template": "scatter_rows", "source": "indexing/scatter_rows.h"},
    {"template": "fill_rows", "source": "indexing/scatter_rows.h"},
]

# (name, template, args) for a few kernels, one per spelling.
DETAILS = {
    "v_Absfloat16float16": ("unary_v", ("half", "half", "Abs", "1")),
    "gn1_Expfloat32float32": ("unary_g", ("float", "float", "Exp", "1", "int")),
    "gn2_Addfloat32": ("binary_g", ("float", "float", "Add", "(1+1)", "int")),
    "arangeint32": ("arange", ("int32_t",)),
    "tile_copy_bfloat16_bm64_bn16_ttrue": ("tile_copy", ("bfloat16_t", "64", "16", "true")),
    "copy_values_float32": ("copy_values", ("float",)),
    "fill_ones": (None, ()),
    "renamed_kernel": (None, ()),
}
# The code each kernel comes from, read off the files: ("template", name) for an instantiation,
# ("function", name) for a kernel written with a body (its own name, not its host name).
_PREFIXES = {
    "v_": "unary_v",
    "v2_": "unary_v2",
    "gn1_": "unary_g",
    "ss_": "binary_ss",
    "vv_": "binary_vv",
    "gn2_": "binary_g",
    "arange": "arange",
    "copy_values": "copy_values",
    "tile_copy_": "tile_copy",
    "fft_pass_": "fft_pass",
}


def code_of(name: str) -> tuple[str, str]:
    """("template" | "function", identifier) of a kernel of the MLX-style tree."""
    if name == "renamed_kernel":
        return ("function", "internal_name")
    for prefix, template in sorted(_PREFIXES.items(), key=lambda p: -len(p[0])):
        if name.startswith(prefix):
            return ("template", template)
    return ("function", name)
