"""Grouping on names: dtype parsing, the MLX rule set, rule files, the generic fallback."""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path

import pytest

from builder.errors import UsageError
from builder.size.grouping import (
    OTHER,
    Sources,
    builtin_rules,
    generic_group,
    group_names,
    load_rules,
    parse_dtypes,
    parse_rules,
    primary_dtype,
)


@pytest.mark.parametrize(
    ("name", "dtypes"),
    [
        ("v2_Sinhfloat16float16", ["float16", "float16"]),
        ("gn4large_copyfloat32int16", ["float32", "int16"]),
        ("vv_DivModuint32", ["uint32"]),  # not read as int32
        ("argmin_bool_", ["bool"]),
        ("contig_scan_inclusive_sum_bool__int32", ["bool", "int32"]),
        ("affine_qmv_float16_t_gs_64_b_8_batch_0", ["float16"]),
        ("sdpa_vector_2pass_1_bfloat16_t_128_128", ["bfloat16"]),  # not float16
        ("affine_qmv_float_gs_64_b_4", ["float32"]),
        ("rope_single_freqs_float16", ["float16"]),
        ("v_Logcomplex64complex64", ["complex64", "complex64"]),
        ("four_step_mem_256_float2_float2_0_false", ["complex64", "complex64"]),
        ("fft_mem_512_complex32_t_complex32_t", ["complex32", "complex32"]),  # not int32
        ("rader_fft_mem_256_complex64_t_complex64_t", ["complex64", "complex64"]),
        ("rbits", []),
        ("floatify_thing", []),  # "float" only counts as a whole token
        ("v_Floorfloat32float32", ["float32", "float32"]),
    ],
)
def test_parse_dtypes(name: str, dtypes: list[str]) -> None:
    assert parse_dtypes(name) == dtypes
    # bool wins only alone: MLX's scan of bools sums in int32
    computing = [d for d in dtypes if d != "bool"] or dtypes
    assert primary_dtype(name) == (computing[0] if dtypes else "none")


# Names spelled after MLX's host-name grammar (one per family the rule set must know).
MLX_EXAMPLES = {
    "gg1_dynamic_copyint64int64": "copy",
    "v2_copyfloat16float32": "copy",
    "gn4large_Selectint16": "ternary",
    "vs2_Selectuint32": "ternary",
    "vv_DivModint32": "binary",
    "gn4large_Addfloat32": "binary",
    "g1_ArcTan2float16": "binary",
    "ss_LessEqualbool_": "binary",
    "gn4large_Absfloat32float32": "unary",
    "v2_ArcTanbfloat16bfloat16": "unary",
    "vn_FromFP8uint8float32": "unary",
    "col_reduce_2pass_2_32_32_reduce_sumint16": "reduce",
    "init_reduce_maxfloat32": "reduce",
    "argmax_int8": "arg_reduce",
    "contig_scan_inclusive_sum_bool__int32": "scan",
    "carg_block_sort_float16_uint32_bn128_tn4": "sort",
    "merge_mbsort_float32_uint32_bn512_tn8": "sort",
    "steel_gemm_splitk_nn_float16_float32_bm16_bn16_bk16_wm2_wn2_MN_taligned_K_taligned": "gemm",
    "steel_gather_mm_rhs_nt_float16_float16_bm16_bn64_bk32_wm1_wn2": "gemm",
    "gemv_float32_bm1_bn8_sm1_sn32_tm4_tn4_nc0_axpby0": "gemv",
    "gemv_t_outmask_nomask_opmask_bool__float16_bm1_bn1_sm8_sn4_tm8_tn1_nc1": "gemv",
    "affine_qmv_float16_t_gs_64_b_8_batch_0_pr_0_hgs_0_r_4": "quantized",
    "qmv_fast_float16_t_gs_64_b_4_batch_0": "quantized",
    "mxfp4_qmm_t_splitk_float16_t_gs_32_b_4_alN_true": "quantized_fp",
    "sdpa_vector_2pass_1_gqa_8_float16_t_128_128": "attention",
    "steel_attention_float32_bq32_bk32_bd64_wm4_wn1_maskbool_": "attention",
    "implicit_gemm_conv_2d_float32_bm32_bn8_bk16_wm4_wn1_channel_4_filter_l": "conv",
    "winograd_conv_2d_input_transform_float32_bc32": "conv",
    "four_step_mem_256_float2_float2_0_false": "fft",
    "bluestein_fft_mem_4096_float_float2": "fft",
    "rms_loopedbfloat16": "norm",
    "vjp_layer_normfloat32": "norm",
    "looped_softmax_precise_float16": "softmax",
    "block_logsumexp_float16": "logsumexp",
    "rope_single_freqs_float16": "rope",
    "rbitsc": "random",
    "arangebfloat16": "arange",
    "seq_gated_delta_float_128_128_24_24_16": "gated_delta",
    "fence_wait": "fence",
}


@pytest.mark.parametrize(("name", "family"), sorted(MLX_EXAMPLES.items()))
def test_mlx_rules(name: str, family: str) -> None:
    assert builtin_rules("mlx").group(name) == family


def test_kernel_grouping_picks_mlx_rules_for_mlx_names() -> None:
    names = list(MLX_EXAMPLES)
    grouping = group_names(names)
    assert grouping.method == "rules:builtin:mlx"
    assert grouping.labels == [MLX_EXAMPLES[n] for n in names]


def test_generic_fallback_for_unknown_libraries() -> None:
    names = ["blur_float16_r3", "blur_float32_r5", "sharpen_half", "tonemap_aces_bm64"]
    grouping = group_names(names)
    assert grouping.method == "generic"
    assert grouping.labels == ["blur", "blur", "sharpen", "tonemap_aces"]
    assert generic_group("steel_gemm_fused_nn_float16_float16_bm64_bn64") == "steel_gemm_fused_nn"


@pytest.mark.parametrize(
    ("name", "op", "stem"),
    [  # torch's names: the op keeps its digits, layout words fold into it
        ("atan2_dense_scalar_lhs_cast_half_half", "atan2", "atan2_dense_scalar_lhs_cast"),
        ("bessel_j0_forward_strided_castout_half", "bessel_j0_forward", None),
        ("modified_bessel_k1_forward_dense_castout_ilp_half", "modified_bessel_k1_forward", None),
        ("log10_dense_float_short", "log10", "log10_dense"),
        ("i0_strided_castout_half", "i0", "i0_strided_castout"),
        ("expm1_dense_scalar_float2_float2", "expm1", "expm1_dense_scalar"),
        ("silu_backward_dense_ilp4_float_float", "silu_backward", "silu_backward_dense_ilp4"),
        ("div_true_inner_contiguous_float_uchar", "div_true", "div_true_inner_contiguous"),
        ("inner_contiguous_scatter_u32", "scatter", "inner_contiguous_scatter"),
        ("sort_block_long_tptg512_stable", "sort_block", "sort_block_stable"),
        ("cumprod_vec_block_carry_3_bfloat", "cumprod", "cumprod_vec_block_carry"),
        ("index_select_8bit", "index_select", "index_select"),
        # MLX's and ggml's parameters after the op: numbers, bm64, gs_32, b_4
        ("mxfp4_qmv_float_gs_32_b_4", "mxfp4_qmv", "mxfp4_qmv"),
        ("kernel_flash_attn_ext_vec_f16_h128", "kernel_flash_attn_ext", None),
        ("qr_householder_simd_8_1_g8", "qr_householder_simd", "qr_householder_simd"),
        ("atan2", "atan2", "atan2"),  # a name of one token keeps it
    ],
)
def test_ops_and_stems(name: str, op: str, stem: str | None) -> None:
    assert generic_group(name) == op
    if stem is not None:
        assert group_names([name], "stem").labels == [stem]


def test_rule_file_first_match_wins(tmp_path: Path) -> None:
    path = tmp_path / "my.rules"
    path.write_text("# comment\n\nspecial  blur_float16\nblur  blur_\nedges  .*edge\n")
    rules = load_rules(path)
    names = ["blur_float16_r3", "blur_float32_r5", "find_edges", "unknown"]
    grouping = group_names(names, rules=rules)
    assert grouping.labels == ["special", "blur", "edges", OTHER]
    assert grouping.method == f"rules:{path}"


def test_rule_file_errors(tmp_path: Path) -> None:
    with pytest.raises(UsageError, match=r":2: bad regex"):
        parse_rules("ok  a\nbad  (unclosed\n", "x.rules")
    with pytest.raises(UsageError, match="GROUP REGEX"):
        parse_rules("lonely\n", "x.rules")
    with pytest.raises(UsageError, match="no rules"):
        parse_rules("# nothing\n", "x.rules")
    with pytest.raises(UsageError, match="cannot read rule file"):
        load_rules(tmp_path / "missing.rules")


def test_rules_with_clashing_group_names_still_work() -> None:
    rules = parse_rules("a  (?P<x>foo)\nb  (?P<x>bar)\n", "t")
    assert [rules.group(n) for n in ("foo1", "bar1", "baz")] == ["a", "b", None]


def test_by_dtype_function_and_source() -> None:
    names = ["v_copyfloat16float32", "rbits"]
    assert group_names(names, "dtype").labels == ["float16", "none"]
    assert group_names(names, "function").labels == names
    with pytest.raises(UsageError, match="--by source needs the kernel tree"):
        group_names(names, "source")
    grouped = group_names(names, "source", sources=Sources({"rbits": "random.metal"}, "manifest"))
    assert grouped.labels == [OTHER, "random.metal"] and grouped.method == "manifest"
    with pytest.raises(UsageError, match="--by must be"):
        group_names(names, "colour")


@pytest.mark.parametrize(
    ("name", "dtype"),
    [
        ("gemv_t_outmask_nomask_opmask_bool__float16_bm1_bn1_sm8_sn4_tm8_tn1_nc1", "float16"),
        ("gemv_outmask_bool__opmask_nomask_float32_bm2_bn1_sm2_sn16_tm1_tn4_nc1", "float32"),
        ("steel_gemm_block_outmask_float32_opmask_nomask_tn_bfloat16_float32_bm64", "bfloat16"),
        ("steel_attention_float16_bq32_bk16_bd128_wm4_wn1_maskbool_", "float16"),
        # the only dtype follows "mask_": it is the kernel's own
        ("sdpa_blocked_causal_mask_bfloat16", "bfloat16"),
        ("sdpa_blocked_causal_mask_float16", "float16"),
        # torch's mask type glued to "mask", a short spelling: read, and skipped
        ("sdpa_vector_float_64_64_maskhalf", "float32"),
        ("index_fill_dense_from_mask_half", "float16"),  # "mask_" then the data's type
        ("k_maskhalf", "float16"),  # the only dtype is a mask's
    ],
)
def test_primary_dtype_skips_mask_types(name: str, dtype: str) -> None:
    assert primary_dtype(name) == dtype
    assert dtype in parse_dtypes(name)


@pytest.mark.realdata
def test_by_dtype_on_real_library_leaves_only_typeless_kernels_in_none(
    mlx_metallib: Callable[[str, str], Path],
) -> None:
    """mlx-metal 0.32.4 names fft kernels with ``complex32_t`` and sdpa mask kernels with the
    dtype right after ``mask_``; all of those have a dtype. The kernels left in "none" are the
    ones whose names carry no type at all (worked out by reading the 17,248 names)."""
    from builder.metallib import open_metallib

    with open_metallib(mlx_metallib("0.32.4", "macosx_14_0_arm64")) as lib:
        names = lib.columns().names
    untyped = {name for name in names if primary_dtype(name) == "none"}
    assert untyped == {"rbits", "rbitsc", "gather_mm_offsets", "generate_bluestein_twiddles"}
    assert primary_dtype("fft_mem_512_complex32_t_complex32_t") == "complex32"
