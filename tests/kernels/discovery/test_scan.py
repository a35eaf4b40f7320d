"""The scanner on preprocessed text written by hand: every spelling that emits a function, the
ones that do not, and the fast path giving what the general parser gives."""

from __future__ import annotations

import pytest
from support.deadline import deadline

from builder.kernels.cxx_text import normalize_arg
from builder.kernels.kernel_scan import KernelRecord, ScanError, scan_kernels


def Emitted(name: str, template: str | None, args: tuple[str, ...]) -> KernelRecord:
    return KernelRecord(name, "", template, args)


def names(text: str) -> list[str]:
    both = scan_kernels(text), scan_kernels(text, fast=False)
    assert both[0] == both[1]
    return [e.name for e in both[0]]


def test_mlx_instantiation_form() -> None:
    text = (
        'template [[host_name("v_" "Abs" "float16" "float16")]] [[kernel]] '
        "decltype(unary_v<half, half, Abs, 1>) unary_v<half, half, Abs, 1>;"
        ' template [[host_name( "row_" "and")]] [[kernel]] decltype(row<bool, And<bool>, 4>) '
        "row<bool, And<bool>, 4>;\n"
    )
    assert scan_kernels(text) == [
        Emitted("v_Absfloat16float16", "unary_v", ("half", "half", "Abs", "1")),
        Emitted("row_and", "row", ("bool", "And<bool>", "4")),
    ]
    assert scan_kernels(text, fast=False) == scan_kernels(text)


def test_full_signature_instantiation_and_deduced_arguments() -> None:
    text = """
template [[host_name("conv_" "f32")]] [[kernel]] void conv<float, (2 > 1), metal::vec<float, 4>>(
    const device float* in [[buffer(0)]], uint3 gid [[thread_position_in_grid]]);
template [[host_name("deduced")]] [[kernel]] void f(device float* x [[buffer(0)]]);
"""
    assert scan_kernels(text) == [
        Emitted("conv_f32", "conv", ("float", "(2>1)", "metal::vec<float, 4>")),
        Emitted("deduced", "f", ()),
    ]


def test_plain_kernels_in_every_spelling() -> None:
    text = """
[[kernel]] void a(device float* x [[buffer(0)]]) { x[0] = 1; }
kernel void b(device float* x) { }
[[kernel, max_total_threads_per_threadgroup(1024)]] void c(device float* x) { }
[[max_total_threads_per_threadgroup(64), kernel]] void d() { }
[[host_name("e" "_renamed")]] kernel void e(device float* x) { }
vertex float4 v(uint vid [[vertex_id]]) { return float4(0); }
fragment half4 f(float4 p [[stage_in]]) { return half4(0); }
[[visible]] float g(float x) { return x; }
#pragma METAL internals : enable
[[kernel]] void h() { }
namespace inner { kernel void i() { } }
"""
    assert names(text) == ["a", "b", "c", "d", "e_renamed", "v", "f", "g", "h", "i"]


def test_what_emits_nothing() -> None:
    text = """
template <typename T> [[kernel]] void tdef(device T* x) { }
template <typename T, int N = (3 > 2)> kernel void tdef2(device T* x) { }
[[kernel]] void proto(device float* x);
extern template [[host_name("ext")]] [[kernel]] void tdef<float>(device float* x);
template [[kernel]] void tdef<half>(device half* x);
inline float helper(float kernel_size) { return kernel_size; }
struct S { int my_kernel; };
constant char* note = "kernel void in_string() {}";
constant char* other = "[[host_name(\\"no\\")]]";
"""
    assert names(text) == []


def test_specialization_with_host_name() -> None:
    text = 'template <> [[host_name("spec")]] [[kernel]] void t<int>(device int* x) { }\n'
    assert scan_kernels(text) == [Emitted("spec", "t", ("int",))]
    assert names("template <> [[kernel]] void t<int>(device int* x) { }") == []


def test_literals_are_decoded_one_by_one_then_joined() -> None:
    text = (
        'template [[host_name("a\\x5f" "f" "\\101" "\\\\" "q\\"")]] [[kernel]] '
        "decltype(k<int>) k<int>;"
    )
    assert names(text) == ['a_fA\\q"']
    text = 'template [[host_name(u8"wide" L"er")]] [[kernel]] decltype(k<int>) k<int>;'
    assert names(text) == ["wideer"]


def test_a_name_twice_is_kept_once() -> None:
    text = "kernel void a() { }\nkernel void a() { }\n"
    assert names(text) == ["a"]


def test_non_literal_host_name_raises() -> None:
    with pytest.raises(ScanError, match=r"got: \(NAME\)"):
        scan_kernels("template [[host_name(NAME)]] [[kernel]] decltype(k<int>) k<int>;")


def test_fast_path_needs_a_declaration_start() -> None:
    # After "extern" the one-line form must not be taken for an instantiation.
    text = 'extern template [[host_name("x")]] [[kernel]] decltype(k<int>) k<int>;'
    assert names(text) == []


def test_normalize_arg() -> None:
    assert normalize_arg(" metal::vec< float ,4 > ") == "metal::vec<float, 4>"
    assert normalize_arg("unsigned   int") == "unsigned int"
    assert normalize_arg("( N > 2 )") == "(N>2)"
    assert normalize_arg("A<B<C> >") == "A<B<C>>"


def test_unterminated_constructs_do_not_blow_up() -> None:
    """Unclosed attributes, literals and declarations: nothing emitted. A pattern that
    backtracks on them would not return at these sizes: the deadline makes that a failure, not
    a hang (it bounds no speed; how long the scan takes is benchmarks/bench_scan.py's)."""
    text = "[[kernel " + "x" * 200_000 + "\nkernel void f(" + '"' + "y" * 200_000
    with deadline(120):
        assert names(text) == []
        assert names("template [[host_name(" + '"a" ' * 20_000) == []
