"""Names of every project (issue 27 item 2): dtypes spelled as Metal, PyTorch and ggml spell
them, and kernel groups derived from what remains of a name. Checked on real libraries (torch
2.14.1's two MPS libraries, gpt4all 2.8.2's ggml library) against type lists written here from
the languages' own definitions, and on MLX, whose labels must not move."""

from __future__ import annotations

import json
import re
from typing import Any

import pytest
from clirun import run_cli as run
from support.real_wheels import libraries_or_skip

from builder.size.grouping import generic_group, parse_dtypes, primary_dtype

# Metal Shading Language scalar types (spec table 2.1) and their vectors; ggml.h's enum ggml_type.
METAL_SCALARS = ["bool", "char", "uchar", "short", "ushort", "int", "uint", "long", "ulong"]
METAL_SCALARS += ["half", "bfloat", "float"]
METAL_WORDS = {*METAL_SCALARS, *(f"{s}{n}" for s in METAL_SCALARS for n in (2, 3, 4))}
GGML_TYPES = {"f32", "f16", "bf16", "f64", "i8", "i16", "i32", "i64", "q4_0", "q4_1", "q5_0"}
GGML_TYPES |= {"q5_1", "q8_0", "q8_1", "q2_K", "q3_K", "q4_K", "q5_K", "q6_K", "q8_K", "iq2_xxs"}
GGML_TYPES |= {"iq2_xs", "iq2_s", "iq3_xxs", "iq3_s", "iq1_s", "iq1_m", "iq4_nl", "iq4_xs"}


def says_a_type(name: str, words: set[str]) -> bool:
    """Whether ``name`` holds one of ``words`` between underscores (or the ends), or an
    ``*int*_t`` / ``*float*`` word of C's fixed-width spelling."""
    padded = f"_{name}_"
    if any(f"_{w}_" in padded for w in words):
        return True
    return re.search(r"u?int(8|16|32|64)(_t)?|b?float(16|32|64)(_t)?|complex64", name) is not None


@pytest.mark.parametrize(
    ("name", "primary", "group"),
    [
        ("ctc_loss_bfloat_int_int64_t", "bfloat16", "ctc_loss"),
        ("copy_half4_to_float", "float16", "copy"),  # the op: the words before the dtype
        ("kernel_mul_mv_q4_0_f32", "q4_0", "kernel_mul_mv"),
        ("kernel_mul_mm_id_iq2_xxs_f16", "iq2_xxs", "kernel_mul_mm_id"),
        ("kernel_get_rows_q4_K", "q4_K", "kernel_get_rows"),
        ("index_select_ulong_ushort", "uint64", "index_select"),
        ("print_pointer_uint", "uint32", "print_pointer"),  # "int" inside a word is no type
        ("mxfp4_qmv_float_gs_32_b_4", "float32", None),  # MLX's label, as before
    ],
)
def test_labels_follow_what_the_name_says(name: str, primary: str, group: str | None) -> None:
    assert primary_dtype(name) == primary
    if group is not None:  # MLX's names are grouped by its rules, not generically
        assert generic_group(name) == group


def test_vectors_count_as_their_element() -> None:
    assert parse_dtypes("add_half4_uint2_char3") == ["float16", "uint32", "int8"]
    assert parse_dtypes("fft_float2") == ["complex64"]  # MLX's older fft: two floats, complex
    # PyTorch's complex half is two halves; int4/uint4 are the 4-bit integers, not vectors
    assert parse_dtypes("angle_dense_half2_half2") == ["complex32", "complex32"]
    assert parse_dtypes("pack_int4_uint4") == ["int4", "uint4"]


def _report(
    target: str, platform: str, by: str, capsys: pytest.CaptureFixture[str]
) -> list[dict[str, Any]]:
    libraries_or_skip(target, platform)
    code, out, err = run(
        ["report", target, "--platform", platform, "--by", by, "--format", "json"], capsys
    )
    assert code == 0, err
    doc: dict[str, Any] = json.loads(out)
    libraries: list[dict[str, Any]] = doc.get("libraries", [doc])
    return libraries


@pytest.mark.realdata
@pytest.mark.slow
def test_torch_names_have_dtypes_and_few_groups(capsys: pytest.CaptureFixture[str]) -> None:
    """Goals of issue 27: "none" at most 5% of the bytes (was 43.8% and 42.4%) and at most
    2,000 kernel groups (was 9,035), on both of libtorch_cpu.dylib's libraries."""
    by_dtype = _report("torch==2.14.1", "macosx_14_0_arm64", "dtype", capsys)
    by_kernel = _report("torch==2.14.1", "macosx_14_0_arm64", "kernel", capsys)
    assert len(by_dtype) == len(by_kernel) == 2
    for lib, grouped in zip(by_dtype, by_kernel):
        total = sum(f["bytes"] for f in lib["functions"])
        unlabelled = [f for f in lib["functions"] if f["group"] == "none"]
        assert sum(f["bytes"] for f in unlabelled) <= 0.05 * total
        # what stays "none" says no type in any spelling the test knows
        assert not [f["name"] for f in unlabelled if says_a_type(f["name"], METAL_WORDS)]
        assert len(grouped["groups"]) <= 2000


@pytest.mark.realdata
@pytest.mark.slow
def test_ggml_names_are_read_as_ggml_writes_them(capsys: pytest.CaptureFixture[str]) -> None:
    """gpt4all 2.8.2's default.metallib (ggml): every name with a ggml type word is labelled,
    what stays "none" names no type (ggml's float32-only kernels, ``kernel_add``...: the floor
    for labels read from names), and ``kernel_mul_mm_id`` is one group (was five)."""
    [lib] = _report("gpt4all==2.8.2", "macosx_10_15_universal2", "dtype", capsys)
    [grouped] = _report("gpt4all==2.8.2", "macosx_10_15_universal2", "kernel", capsys)
    functions = lib["functions"]
    typed = {f["name"] for f in functions if says_a_type(f["name"], GGML_TYPES | METAL_WORDS)}
    assert {f["name"] for f in functions if f["group"] != "none"} == typed
    assert len(typed) > 0.8 * len(functions)
    mul_mm_id = {
        f["group"] for f in grouped["functions"] if f["name"].startswith("kernel_mul_mm_id")
    }
    assert mul_mm_id == {"kernel_mul_mm_id"}


# MLX's own spellings as its kernels write them (the vocabulary before other projects' names were
# added): canonical words, Metal's and MLX's extra spellings; the short ones only as whole tokens.
_MLX_SPELLINGS = {
    **{w: w for w in ("bool", "int8", "int16", "int32", "int64", "uint8", "uint16", "uint32")},
    **{w: w for w in ("uint64", "float16", "bfloat16", "float32", "complex64", "float64")},
    "int8_t": "int8", "int16_t": "int16", "int32_t": "int32", "int64_t": "int64",
    "uint8_t": "uint8", "uint16_t": "uint16", "uint32_t": "uint32", "uint64_t": "uint64",
    "half": "float16", "bfloat16_t": "bfloat16", "float": "float32", "complex64_t": "complex64",
    "bool_": "bool", "float16_t": "float16", "float2": "complex64", "complex32_t": "complex32",
}  # fmt: skip
_MLX_WORDS = {"float", "half", "bool", "float2"}


def _mlx_label(name: str) -> str:
    """The label MLX's spellings alone give: the first dtype not right after a mask word and not
    bool, else the first not after a mask word, else the first at all, else "none" (an
    independent reading of the rule in docs/report-schema.md)."""
    pattern = re.compile(
        "|".join(re.escape(s) for s in sorted(_MLX_SPELLINGS, key=lambda s: -len(s)))
    )
    found: list[tuple[str, bool]] = []
    for match in pattern.finditer(name):
        text, start, end = match.group(), match.start(), match.end()
        whole = (start == 0 or name[start - 1] == "_") and (end == len(name) or name[end] == "_")
        if text in _MLX_WORDS and not whole:
            continue
        after_mask = name[:start].endswith(("mask", "mask_")) and not name[:start].endswith(
            ("nomask", "nomask_")
        )
        found.append((_MLX_SPELLINGS[text], after_mask))
    unmasked = [word for word, masked in found if not masked]
    computing = [word for word in unmasked if word != "bool"]
    return (computing or unmasked or [w for w, _ in found] or ["none"])[0]


@pytest.mark.realdata
@pytest.mark.parametrize("version", ["0.32.1", "0.32.4"])
def test_mlx_labels_do_not_move(version: str, mlx_metallib: Any) -> None:
    """MLX's --by dtype labels are what MLX's own spellings give: the words of other projects
    (int, uint, f16, q4_0...) change no MLX function's label."""
    from builder.metallib import open_metallib

    with open_metallib(mlx_metallib(version, "macosx_14_0_arm64")) as lib:
        names = [f.name for f in lib.functions]
    assert len(names) > 10_000
    moved = [
        (n, primary_dtype(n), _mlx_label(n)) for n in names if primary_dtype(n) != _mlx_label(n)
    ]
    assert not moved, moved[:5]
