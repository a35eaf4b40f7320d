"""Host names: the grammar formats and parses back exactly, and foreign names are refused."""

from __future__ import annotations

import pytest
from hypothesis import given
from hypothesis import strategies as st

from builder.kernels import DTYPES, FAMILIES, ParsedName, format_host_name, parse_host_name

token = st.from_regex(r"[a-z][a-z0-9]{0,7}", fullmatch=True).filter(lambda w: w not in DTYPES)


@given(
    family=st.sampled_from(FAMILIES),
    form=token,
    op=st.none() | token,
    dtypes=st.lists(st.sampled_from(DTYPES), min_size=1, max_size=3),
    params=st.lists(
        st.tuples(st.from_regex(r"[a-z]{1,4}", fullmatch=True), st.integers(0, 999)), max_size=3
    ),
)
def test_format_then_parse_is_identity(family, form, op, dtypes, params) -> None:
    params = [(k, v) for k, v in params if f"{k}{v}" not in DTYPES]
    name = format_host_name(family, form, op, tuple(dtypes), tuple(params))
    assert parse_host_name(name) == ParsedName(family, form, op, tuple(dtypes), tuple(params))


@pytest.mark.parametrize(
    "name",
    [
        "v_Absfloat32",  # MLX unary
        "vv_Addfloat16",  # MLX binary
        "gather_float32_int32_1_2_int",  # MLX gather: no form token
        "all_reduce_sumfloat32",
        "block_softmax_float32",
        "unary_v_abs",  # no dtype
        "unary_v_abs_float32_n04",  # non-canonical parameter spelling
        "unary_v_abs_float32_N4",
        "unary_V_abs_float32",
        "unary__abs_float32",
        "conv_v_abs_float32",  # unknown family
        "unary_v_abs_float32_n4_float16",  # dtype after a parameter
        "",
    ],
)
def test_foreign_or_malformed_names_are_none(name: str) -> None:
    assert parse_host_name(name) is None


def test_known_shapes_parse() -> None:
    assert parse_host_name("binary_vv_eq_bfloat16") == ParsedName(
        "binary", "vv", "eq", ("bfloat16",)
    )
    assert parse_host_name("gather_g_float16_int64_n3") == ParsedName(
        "gather", "g", None, ("float16", "int64"), (("n", 3),)
    )


@pytest.mark.parametrize(
    "args",
    [
        ("nofamily", "v", None, ("float32",), ()),
        ("unary", "has_underscore", None, ("float32",), ()),
        ("unary", "float32", None, ("float32",), ()),  # a form may not be a dtype word
        ("unary", "v", "Abs", ("float32",), ()),
        ("unary", "v", None, (), ()),
        ("unary", "v", None, ("float64",), ()),
        ("unary", "v", None, ("float32",), (("int", 8),)),  # "int8" would read as a dtype
    ],
)
def test_unparseable_names_are_not_formatted(args) -> None:
    with pytest.raises(ValueError):
        format_host_name(*args)
