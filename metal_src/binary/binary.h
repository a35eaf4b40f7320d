// Binary elementwise kernels: out[i] = Op(a[.], b[.]), T inputs, U output.
//   binary_ss/sv/vs/vv  each operand a scalar (s, element 0) or contiguous (v)
//   binary_gd<NDIM>     both inputs strided with a fixed rank (1-3), contiguous output
//   binary_g            both inputs of any rank and strides, contiguous output
#pragma once

#include <metal_stdlib>

#include "binary/binary_ops.h"
#include "common/defines.h"
#include "common/indexing.h"

template <typename T, typename U, typename Op>
[[kernel]] void binary_ss(
    device const T* a [[buffer(0)]],
    device const T* b [[buffer(1)]],
    device U* out [[buffer(2)]],
    uint index [[thread_position_in_grid]]) {
  out[index] = static_cast<U>(Op()(a[0], b[0]));
}

template <typename T, typename U, typename Op>
[[kernel]] void binary_sv(
    device const T* a [[buffer(0)]],
    device const T* b [[buffer(1)]],
    device U* out [[buffer(2)]],
    constant const size_t& size [[buffer(3)]],
    uint index [[thread_position_in_grid]]) {
  if (index < size) {
    out[index] = static_cast<U>(Op()(a[0], b[index]));
  }
}

template <typename T, typename U, typename Op>
[[kernel]] void binary_vs(
    device const T* a [[buffer(0)]],
    device const T* b [[buffer(1)]],
    device U* out [[buffer(2)]],
    constant const size_t& size [[buffer(3)]],
    uint index [[thread_position_in_grid]]) {
  if (index < size) {
    out[index] = static_cast<U>(Op()(a[index], b[0]));
  }
}

template <typename T, typename U, typename Op>
[[kernel]] void binary_vv(
    device const T* a [[buffer(0)]],
    device const T* b [[buffer(1)]],
    device U* out [[buffer(2)]],
    constant const size_t& size [[buffer(3)]],
    uint index [[thread_position_in_grid]]) {
  if (index < size) {
    out[index] = static_cast<U>(Op()(a[index], b[index]));
  }
}

template <typename T, typename U, typename Op, int NDIM>
[[kernel]] void binary_gd(
    device const T* a [[buffer(0)]],
    device const T* b [[buffer(1)]],
    device U* out [[buffer(2)]],
    constant const int* shape [[buffer(3)]],
    constant const int64_t* a_strides [[buffer(4)]],
    constant const int64_t* b_strides [[buffer(5)]],
    constant const size_t& size [[buffer(6)]],
    uint index [[thread_position_in_grid]]) {
  if (index < size) {
    int64_t a_loc = elem_to_loc_nd<NDIM>(index, shape, a_strides);
    int64_t b_loc = elem_to_loc_nd<NDIM>(index, shape, b_strides);
    out[index] = static_cast<U>(Op()(a[a_loc], b[b_loc]));
  }
}

template <typename T, typename U, typename Op>
[[kernel]] void binary_g(
    device const T* a [[buffer(0)]],
    device const T* b [[buffer(1)]],
    device U* out [[buffer(2)]],
    constant const int* shape [[buffer(3)]],
    constant const int64_t* a_strides [[buffer(4)]],
    constant const int64_t* b_strides [[buffer(5)]],
    constant const int& ndim [[buffer(6)]],
    constant const size_t& size [[buffer(7)]],
    uint index [[thread_position_in_grid]]) {
  if (index < size) {
    int64_t a_loc = elem_to_loc(index, shape, a_strides, ndim);
    int64_t b_loc = elem_to_loc(index, shape, b_strides, ndim);
    out[index] = static_cast<U>(Op()(a[a_loc], b[b_loc]));
  }
}
