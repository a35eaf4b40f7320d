// Ternary select: out[i] = cond[.] ? a[.] : b[.], bool condition, T values.
//   ternary_v           all three contiguous
//   ternary_gd<NDIM>    strided inputs of fixed rank (1-3), contiguous output
//   ternary_g           strided inputs of any rank, contiguous output
#pragma once

#include <metal_stdlib>

#include "common/defines.h"
#include "common/indexing.h"

struct Select {
  template <typename T>
  T operator()(bool cond, T a, T b) const { return cond ? a : b; }
};

template <typename T, typename Op>
[[kernel]] void ternary_v(
    device const bool* cond [[buffer(0)]],
    device const T* a [[buffer(1)]],
    device const T* b [[buffer(2)]],
    device T* out [[buffer(3)]],
    constant const size_t& size [[buffer(4)]],
    uint index [[thread_position_in_grid]]) {
  if (index < size) {
    out[index] = Op()(cond[index], a[index], b[index]);
  }
}

template <typename T, typename Op, int NDIM>
[[kernel]] void ternary_gd(
    device const bool* cond [[buffer(0)]],
    device const T* a [[buffer(1)]],
    device const T* b [[buffer(2)]],
    device T* out [[buffer(3)]],
    constant const int* shape [[buffer(4)]],
    constant const int64_t* cond_strides [[buffer(5)]],
    constant const int64_t* a_strides [[buffer(6)]],
    constant const int64_t* b_strides [[buffer(7)]],
    constant const size_t& size [[buffer(8)]],
    uint index [[thread_position_in_grid]]) {
  if (index < size) {
    int64_t c_loc = elem_to_loc_nd<NDIM>(index, shape, cond_strides);
    int64_t a_loc = elem_to_loc_nd<NDIM>(index, shape, a_strides);
    int64_t b_loc = elem_to_loc_nd<NDIM>(index, shape, b_strides);
    out[index] = Op()(cond[c_loc], a[a_loc], b[b_loc]);
  }
}

template <typename T, typename Op>
[[kernel]] void ternary_g(
    device const bool* cond [[buffer(0)]],
    device const T* a [[buffer(1)]],
    device const T* b [[buffer(2)]],
    device T* out [[buffer(3)]],
    constant const int* shape [[buffer(4)]],
    constant const int64_t* cond_strides [[buffer(5)]],
    constant const int64_t* a_strides [[buffer(6)]],
    constant const int64_t* b_strides [[buffer(7)]],
    constant const int& ndim [[buffer(8)]],
    constant const size_t& size [[buffer(9)]],
    uint index [[thread_position_in_grid]]) {
  if (index < size) {
    int64_t c_loc = elem_to_loc(index, shape, cond_strides, ndim);
    int64_t a_loc = elem_to_loc(index, shape, a_strides, ndim);
    int64_t b_loc = elem_to_loc(index, shape, b_strides, ndim);
    out[index] = Op()(cond[c_loc], a[a_loc], b[b_loc]);
  }
}
