"""Kernel math on the CPU (through the shim) against numpy: wrong results, not just wrong syntax.

Each kernel runs one thread per threadgroup (see tests/support/cpu.py), which is exact for our
kernels because none of them assumes a threadgroup size.
"""

from __future__ import annotations

import math
import shutil
from pathlib import Path

import numpy as np
import pytest
from support.cpu import CpuRunner, Typed, bfloat16_bits, bfloat16_values

TID = "thread_position_in_grid"
GROUP_ATTRS = [
    "threadgroup_position_in_grid",
    "thread_position_in_threadgroup",
    "threads_per_threadgroup",
    "thread_index_in_simdgroup",
    "simdgroup_index_in_threadgroup",
    "threads_per_simdgroup",
]


@pytest.fixture(scope="module")
def cpu(tmp_path_factory: pytest.TempPathFactory) -> CpuRunner:
    return CpuRunner(tmp_path_factory.mktemp("cpu"))


def size(n: int):
    return np.uint64(n)


def unary(cpu: CpuRunner, name: str, x, out_dtype=None):
    out = np.zeros_like(x, dtype=out_dtype or x.dtype)
    return cpu.run(name, [x, out, size(x.size), TID], x.size)[1]


def binary(cpu: CpuRunner, name: str, a, b, out_dtype=None):
    out = np.zeros(a.shape, dtype=out_dtype or a.dtype)
    return cpu.run(name, [a, b, out, size(a.size), TID], a.size)[2]


RNG = np.random.default_rng(7)
X32 = RNG.uniform(-3, 3, 257).astype(np.float32)
POS32 = RNG.uniform(0.05, 4, 257).astype(np.float32)


@pytest.mark.parametrize(
    ("op", "x", "reference"),
    [
        ("exp", X32, np.exp),
        ("log", POS32, np.log),
        ("sqrt", POS32, np.sqrt),
        ("rsqrt", POS32, lambda v: 1 / np.sqrt(v)),
        ("sin", X32, np.sin),
        ("tanh", X32, np.tanh),
        ("sigmoid", X32, lambda v: 1 / (1 + np.exp(-v))),
        ("erf", np.linspace(-4, 4, 401, dtype=np.float32), np.vectorize(math.erf)),
        ("floor", X32, np.floor),
        ("round", np.array([0.5, 1.5, 2.5, -0.5, -1.5, 2.4], np.float32), np.round),
        ("sign", np.array([-2, 0, 3.5, -0.0], np.float32), np.sign),
    ],
)
def test_unary_float32(cpu: CpuRunner, op: str, x, reference) -> None:
    got = unary(cpu, f"unary_v_{op}_float32", x)
    np.testing.assert_allclose(got, reference(x).astype(np.float32), rtol=2e-6, atol=3e-7)


def test_unary_variants_and_dtypes(cpu: CpuRunner) -> None:
    h = X32.astype(np.float16)
    np.testing.assert_allclose(unary(cpu, "unary_v_exp_float16", h), np.exp(h), rtol=1e-3)
    i8 = np.array([-128, -5, 0, 7, 127], np.int8)
    np.testing.assert_array_equal(unary(cpu, "unary_v_abs_int8", i8), np.abs(i8))  # -128 wraps
    u8 = np.array([0, 1, 200], np.uint8)
    np.testing.assert_array_equal(
        unary(cpu, "unary_v_neg_uint8", u8), (-u8.astype(np.int32)).astype(np.uint8)
    )
    lnot = unary(cpu, "unary_v_lnot_float32", np.array([0, 1.5, -0.0], np.float32), np.bool_)
    np.testing.assert_array_equal(lnot, [True, False, True])
    # several elements per thread, with a ragged tail: ceil(10 / 4) threads
    x = np.arange(10, dtype=np.float32) - 4.5
    out = cpu.run("unary_vn_square_float32_n4", [x, np.zeros_like(x), size(10), TID], 3)[1]
    np.testing.assert_array_equal(out, x * x)
    # general strided input: a transposed 3x4 view
    base = np.arange(12, dtype=np.int32).reshape(3, 4)
    shape, strides = np.array([4, 3], np.int32), np.array([1, 4], np.int64)
    out = cpu.run(
        "unary_g_neg_int32",
        [base, np.zeros(12, np.int32), shape, strides, np.int32(2), size(12), TID],
        12,
    )[1]
    np.testing.assert_array_equal(out, -base.T.ravel())


@pytest.mark.parametrize(
    ("op", "dtype", "reference"),
    [
        ("add", np.int8, lambda a, b: (a.astype(np.int32) + b).astype(np.int8)),
        ("mul", np.uint16, lambda a, b: (a.astype(np.uint32) * b).astype(np.uint16)),
        ("div", np.int32, lambda a, b: np.fix(a / b).astype(np.int32)),
        ("rem", np.int32, np.fmod),
        ("rem", np.float32, np.fmod),
        ("max", np.float32, np.maximum),
        ("pow", np.float32, lambda a, b: np.power(np.abs(a), b)),
        ("atan2", np.float32, np.arctan2),
        ("logaddexp", np.float32, np.logaddexp),
        ("bxor", np.uint8, np.bitwise_xor),
        ("shr", np.int64, np.right_shift),
    ],
)
def test_binary(cpu: CpuRunner, op: str, dtype, reference) -> None:
    info = np.iinfo(dtype) if np.issubdtype(dtype, np.integer) else None
    if info is not None:
        lo, hi = (0, 8) if op == "shr" else (max(info.min, -100), min(info.max, 100))
        a = RNG.integers(max(info.min, -1000), min(info.max, 1000), 64).astype(dtype)
        b = RNG.integers(lo, hi, 64).astype(dtype)
        b[b == 0] = 3
    else:
        a, b = RNG.uniform(-3, 3, (2, 64)).astype(dtype)
    if op == "pow":
        a = np.abs(a)
    got = binary(cpu, f"binary_vv_{op}_{np.dtype(dtype).name}", a, b)
    np.testing.assert_allclose(got, reference(a, b).astype(dtype), rtol=3e-6, atol=1e-6)


def test_binary_comparison_scalar_and_broadcast(cpu: CpuRunner) -> None:
    a, b = RNG.uniform(-1, 1, (2, 50)).astype(np.float32)
    np.testing.assert_array_equal(binary(cpu, "binary_vv_lt_float32", a, b, np.bool_), a < b)
    out = cpu.run("binary_sv_sub_float32", [a[:1], b, np.zeros(50, np.float32), size(50), TID], 50)[
        2
    ]
    np.testing.assert_array_equal(out, a[0] - b)
    # (3, 1) + (1, 4) broadcast through zero strides, rank-2 fixed and general variants
    col = np.arange(3, dtype=np.float32)
    row = np.arange(4, dtype=np.float32) * 10
    shape = np.array([3, 4], np.int32)
    sa, sb = np.array([1, 0], np.int64), np.array([0, 1], np.int64)
    expect = (col[:, None] + row[None, :]).ravel()
    outs = cpu.run(
        "binary_g2_add_float32",
        [col, row, np.zeros(12, np.float32), shape, sa, sb, size(12), TID],
        12,
    )
    np.testing.assert_array_equal(outs[2], expect)
    outs = cpu.run(
        "binary_gn_add_float32",
        [col, row, np.zeros(12, np.float32), shape, sa, sb, np.int32(2), size(12), TID],
        12,
    )
    np.testing.assert_array_equal(outs[2], expect)


def test_ternary_select(cpu: CpuRunner) -> None:
    cond = RNG.integers(0, 2, 40).astype(np.bool_)
    a, b = RNG.integers(-50, 50, (2, 40)).astype(np.int16)
    out = cpu.run(
        "ternary_v_select_int16", [cond, a, b, np.zeros(40, np.int16), size(40), TID], 40
    )[3]
    np.testing.assert_array_equal(out, np.where(cond, a, b))


def test_copy_cast_strided(cpu: CpuRunner) -> None:
    src = RNG.uniform(-100, 100, (4, 5)).astype(np.float32)
    shape, strides = np.array([5, 4], np.int32), np.array([1, 5], np.int64)
    out = cpu.run(
        "copy_g2_float32_int16", [src, np.zeros(20, np.int16), shape, strides, size(20), TID], 20
    )[1]
    np.testing.assert_array_equal(out, src.T.ravel().astype(np.int16))
    out = cpu.run(
        "copy_v_int32_bool",
        [np.array([0, 3, -1], np.int32), np.zeros(3, np.bool_), size(3), TID],
        3,
    )[1]
    np.testing.assert_array_equal(out, [False, True, True])
    h = np.array([1.5, -2.25, 65504], np.float16)
    out = cpu.run("copy_v_float16_float32", [h, np.zeros(3, np.float32), size(3), TID], 3)[1]
    np.testing.assert_array_equal(out, h.astype(np.float32))


def test_arange(cpu: CpuRunner) -> None:
    out = cpu.run(
        "arange_v_float32",
        [np.float32(-1), np.float32(0.25), np.zeros(9, np.float32), size(9), TID],
        9,
    )
    np.testing.assert_allclose(out[0], -1 + 0.25 * np.arange(9))


def test_gather_and_scatter(cpu: CpuRunner) -> None:
    src = np.arange(15, dtype=np.float32).reshape(5, 3)
    idx = np.array([4, 0, -1], np.int32)
    shape, strides = np.array([5, 3], np.int32), np.array([3, 1], np.int64)
    args = [
        src,
        idx,
        np.zeros(9, np.float32),
        shape,
        strides,
        np.int32(2),
        np.array([1, 3], np.int32),
        np.array([0], np.int32),
        size(3),
        size(3),
        TID,
    ]
    out = cpu.run("gather_g_float32_int32_n1", args, 9)[2]
    np.testing.assert_array_equal(out.reshape(3, 3), src[idx])

    # scatter-add with repeated indices into int16 (a 2-byte element inside a 4-byte CAS word)
    dst = np.zeros(7, np.int16)
    idx = np.array([1, 1, 4, 6, 1], np.int64)
    upd = np.array([1, 2, 30, 400, -5], np.int16)
    args = [
        upd,
        idx,
        dst,
        np.array([7], np.int32),
        np.array([1], np.int64),
        np.int32(1),
        np.array([1], np.int32),
        np.array([0], np.int32),
        size(5),
        size(1),
        TID,
    ]
    got = cpu.run("scatter_g_sum_int16_int64_n1", args, 5)[2]
    expect = np.zeros(7, np.int16)
    np.add.at(expect, idx, upd)
    np.testing.assert_array_equal(got, expect)
    args[2] = np.full(7, 3, np.uint8)
    args[0] = np.array([1, 9, 5, 2, 4], np.uint8)
    got = cpu.run("scatter_g_max_uint8_int64_n1", args, 5)[2]
    np.testing.assert_array_equal(got, [3, 9, 3, 3, 5, 3, 3])


@pytest.mark.parametrize(
    ("name", "dtype", "reference"),
    [
        ("reduce_all_sum_float32", np.float32, np.sum),
        ("reduce_all_max_int16", np.int16, np.max),
        ("reduce_all_prod_int64", np.int64, np.prod),
    ],
)
def test_reduce_all_in_two_passes(cpu: CpuRunner, name: str, dtype, reference) -> None:
    x = (RNG.integers(1, 4, 20) if dtype == np.int64 else RNG.uniform(-50, 50, 1000)).astype(dtype)
    per_group = 64
    groups = -(-x.size // per_group)
    partials = cpu.run(
        name, [x, np.zeros(groups, dtype), size(x.size), size(per_group), *GROUP_ATTRS], groups
    )[1]
    total = cpu.run(
        name, [partials, np.zeros(1, dtype), size(groups), size(groups), *GROUP_ATTRS], 1
    )[1]
    np.testing.assert_allclose(total[0], reference(x), rtol=1e-5)


def test_reduce_bool_outputs(cpu: CpuRunner) -> None:
    x = np.array([1.0, 2.0, 0.0, 4.0], np.float32)
    out = cpu.run(
        "reduce_all_and_float32", [x, np.zeros(1, np.bool_), size(4), size(4), *GROUP_ATTRS], 1
    )[1]
    assert not out[0]
    out = cpu.run(
        "reduce_all_or_float32", [x, np.zeros(1, np.bool_), size(4), size(4), *GROUP_ATTRS], 1
    )[1]
    assert out[0]


def test_reduce_row_and_col(cpu: CpuRunner) -> None:
    x = RNG.uniform(-1, 1, (2, 3, 7)).astype(np.float32)
    # rows: the last axis; kept axes (2, 3) as a rank-2 view
    out = cpu.run(
        "reduce_row_sum_float32_d2",
        [
            x,
            np.zeros(6, np.float32),
            size(7),
            np.array([2, 3], np.int32),
            np.array([21, 7], np.int64),
            *GROUP_ATTRS,
        ],
        6,
    )[1]
    np.testing.assert_allclose(out, x.sum(axis=2).ravel(), rtol=1e-5)
    # columns: reduce axis 1 (3 elements, 7 apart); kept axis 0 is the rank-1 outer view
    out = cpu.run(
        "reduce_col_min_float32_d1",
        [
            x,
            np.zeros(14, np.float32),
            size(3),
            size(7),
            np.array([2], np.int32),
            np.array([21], np.int64),
            size(14),
            TID,
        ],
        14,
    )[1]
    np.testing.assert_array_equal(out, x.min(axis=1).ravel())


@pytest.mark.parametrize("log", [False, True])
def test_softmax(cpu: CpuRunner, log: bool) -> None:
    op = "logsoftmax" if log else "softmax"
    x = RNG.uniform(-5, 5, (3, 37)).astype(np.float32)
    shifted = x - x.max(axis=1, keepdims=True)
    expect = shifted - np.log(np.exp(shifted).sum(axis=1, keepdims=True))
    expect = expect if log else np.exp(expect)
    attrs = GROUP_ATTRS
    out = cpu.run(f"softmax_looped_{op}_float32", [x, np.zeros_like(x), np.int32(37), *attrs], 3)[1]
    np.testing.assert_allclose(out, expect, rtol=1e-5, atol=1e-6)
    small = x[:, :4].copy()
    s = small - small.max(axis=1, keepdims=True)
    ref = s - np.log(np.exp(s).sum(axis=1, keepdims=True))
    out = cpu.run(
        f"softmax_block_{op}_float32", [small, np.zeros_like(small), np.int32(4), *attrs], 3
    )[1]
    np.testing.assert_allclose(out, ref if log else np.exp(ref), rtol=1e-5, atol=1e-6)


def test_unknown_kernel(cpu: CpuRunner, tmp_path: Path) -> None:
    from builder.errors import UsageError

    with pytest.raises(UsageError, match="no kernel named"):
        cpu.run("unary_v_exp_int8", [], 1)


def test_wrong_math_is_caught(tmp_path: Path) -> None:
    """The point of running kernels: a copy whose exp computes exp2 compiles but disagrees."""
    tree = tmp_path / "src"
    from builder.resources import metal_src_dir

    shutil.copytree(metal_src_dir(), tree)
    ops = tree / "unary" / "unary_ops.h"
    ops.write_text(
        ops.read_text().replace(
            "UNARY_FLOAT_OP(Exp, metal::exp(x))", "UNARY_FLOAT_OP(Exp, metal::exp2(x))"
        )
    )
    broken = CpuRunner(tmp_path / "build", source_dir=tree)
    got = unary(broken, "unary_v_exp_float32", X32)
    assert not np.allclose(got, np.exp(X32), rtol=1e-3)
    np.testing.assert_allclose(got, np.exp2(X32), rtol=1e-6)


def test_bfloat16_paths(cpu: CpuRunner) -> None:
    """bfloat16 goes through the shim's own bfloat type: elementwise, cast, reduction."""
    x = RNG.uniform(-2, 2, 33).astype(np.float32)
    xb = bfloat16_bits(x)
    xv = bfloat16_values(xb)  # the values the kernel actually sees
    out = cpu.run(
        "unary_v_exp_bfloat16",
        [Typed(xb, "bfloat16"), Typed(np.zeros(33, np.uint16), "bfloat16"), size(33), TID],
        33,
    )
    np.testing.assert_allclose(bfloat16_values(out[1]), np.exp(xv), rtol=2**-8)
    out = cpu.run(
        "copy_v_bfloat16_float16",
        [Typed(xb, "bfloat16"), np.zeros(33, np.float16), size(33), TID],
        33,
    )
    np.testing.assert_array_equal(out[1], xv.astype(np.float16))
    y = bfloat16_bits(np.array([1.0, 2.0, 3.0, 10.0], np.float32))
    out = cpu.run(
        "reduce_all_sum_bfloat16",
        [
            Typed(y, "bfloat16"),
            Typed(np.zeros(1, np.uint16), "bfloat16"),
            size(4),
            size(4),
            *GROUP_ATTRS,
        ],
        1,
    )
    assert bfloat16_values(out[1])[0] == 16.0
    lt = cpu.run(
        "binary_vv_lt_bfloat16",
        [
            Typed(xb, "bfloat16"),
            Typed(xb[::-1].copy(), "bfloat16"),
            np.zeros(33, np.bool_),
            size(33),
            TID,
        ],
        33,
    )[2]
    np.testing.assert_array_equal(lt, xv < xv[::-1])


def test_complex64(cpu: CpuRunner) -> None:
    a = (RNG.uniform(-2, 2, 24) + 1j * RNG.uniform(-2, 2, 24)).astype(np.complex64)
    b = (RNG.uniform(-2, 2, 24) + 1j * RNG.uniform(-2, 2, 24)).astype(np.complex64)
    b[3] = 1e-30 + 4j  # Smith's division: a tiny real part is no problem
    for op, reference in [("mul", np.multiply), ("div", np.divide), ("sub", np.subtract)]:
        np.testing.assert_allclose(
            binary(cpu, f"binary_vv_{op}_complex64", a, b), reference(a, b), rtol=1e-5
        )
    b[::2] = a[::2]
    np.testing.assert_array_equal(binary(cpu, "binary_vv_eq_complex64", a, b, np.bool_), a == b)
    np.testing.assert_allclose(unary(cpu, "unary_v_square_complex64", a), a * a, rtol=1e-5)
    out = cpu.run("copy_v_complex64_float16", [a, np.zeros(24, np.float16), size(24), TID], 24)[1]
    np.testing.assert_array_equal(out, a.real.astype(np.float16))
    outs = cpu.run(
        "copy_v_int16_complex64",
        [np.arange(-3, 3, dtype=np.int16), np.zeros(6, np.complex64), size(6), TID],
        6,
    )
    np.testing.assert_array_equal(outs[1], np.arange(-3, 3).astype(np.complex64))


def test_gather_with_two_index_arrays(cpu: CpuRunner) -> None:
    """out[i, :] = src[rows[i], cols[i], :] with uint32 indices (two index arrays, axes 0 and 1)."""
    src = np.arange(60, dtype=np.int64).reshape(4, 5, 3)
    rows = np.array([3, 0, 2, 3], np.uint32)
    cols = np.array([4, 1, 0, 4], np.uint32)
    indices = np.concatenate([rows, cols])
    args = [
        src,
        indices,
        np.zeros(12, np.int64),
        np.array([4, 5, 3], np.int32),
        np.array([15, 3, 1], np.int64),
        np.int32(3),
        np.array([1, 1, 3], np.int32),
        np.array([0, 1], np.int32),
        size(4),
        size(3),
        TID,
    ]
    out = cpu.run("gather_g_int64_uint32_n2", args, 12)[2]
    np.testing.assert_array_equal(out.reshape(4, 3), src[rows, cols])
