// Unary elementwise kernels: out[i] = Op(in[i]), T in, U out.
//   unary_v   contiguous, one element per thread
//   unary_vn  contiguous, N consecutive elements per thread (fewer threads for large arrays)
//   unary_g   input of any rank and strides, contiguous output
#pragma once

#include <metal_stdlib>

#include "common/defines.h"
#include "common/indexing.h"
#include "unary/unary_ops.h"

template <typename T, typename U, typename Op>
[[kernel]] void unary_v(
    device const T* in [[buffer(0)]],
    device U* out [[buffer(1)]],
    constant const size_t& size [[buffer(2)]],
    uint index [[thread_position_in_grid]]) {
  if (index < size) {
    out[index] = static_cast<U>(Op()(in[index]));
  }
}

template <typename T, typename U, typename Op, int N>
[[kernel]] void unary_vn(
    device const T* in [[buffer(0)]],
    device U* out [[buffer(1)]],
    constant const size_t& size [[buffer(2)]],
    uint index [[thread_position_in_grid]]) {
  size_t base = static_cast<size_t>(index) * N;
  Op op;
  if (base + N <= size) {
#pragma unroll
    for (int i = 0; i < N; ++i) {
      out[base + i] = static_cast<U>(op(in[base + i]));
    }
  } else {
    for (size_t i = base; i < size; ++i) {
      out[i] = static_cast<U>(op(in[i]));
    }
  }
}

template <typename T, typename U, typename Op>
[[kernel]] void unary_g(
    device const T* in [[buffer(0)]],
    device U* out [[buffer(1)]],
    constant const int* shape [[buffer(2)]],
    constant const int64_t* strides [[buffer(3)]],
    constant const int& ndim [[buffer(4)]],
    constant const size_t& size [[buffer(5)]],
    uint index [[thread_position_in_grid]]) {
  if (index < size) {
    int64_t loc = elem_to_loc(index, shape, strides, ndim);
    out[index] = static_cast<U>(Op()(in[loc]));
  }
}
