// Copy with conversion from T to U.
//   copy_s           fill: every output element from in[0]
//   copy_v           contiguous to contiguous
//   copy_gd<NDIM>    strided input of fixed rank (1-3) to contiguous output
//   copy_g           strided input of any rank to contiguous output
//   copy_gg          strided input to strided output (e.g. writing into a slice)
#pragma once

#include <metal_stdlib>

#include "common/defines.h"
#include "common/indexing.h"
#include "common/types.h"  // convert<U>(T)

template <typename T, typename U>
[[kernel]] void copy_s(
    device const T* in [[buffer(0)]],
    device U* out [[buffer(1)]],
    constant const size_t& size [[buffer(2)]],
    uint index [[thread_position_in_grid]]) {
  if (index < size) {
    out[index] = convert<U>(in[0]);
  }
}

template <typename T, typename U>
[[kernel]] void copy_v(
    device const T* in [[buffer(0)]],
    device U* out [[buffer(1)]],
    constant const size_t& size [[buffer(2)]],
    uint index [[thread_position_in_grid]]) {
  if (index < size) {
    out[index] = convert<U>(in[index]);
  }
}

template <typename T, typename U, int NDIM>
[[kernel]] void copy_gd(
    device const T* in [[buffer(0)]],
    device U* out [[buffer(1)]],
    constant const int* shape [[buffer(2)]],
    constant const int64_t* in_strides [[buffer(3)]],
    constant const size_t& size [[buffer(4)]],
    uint index [[thread_position_in_grid]]) {
  if (index < size) {
    out[index] = convert<U>(in[elem_to_loc_nd<NDIM>(index, shape, in_strides)]);
  }
}

template <typename T, typename U>
[[kernel]] void copy_g(
    device const T* in [[buffer(0)]],
    device U* out [[buffer(1)]],
    constant const int* shape [[buffer(2)]],
    constant const int64_t* in_strides [[buffer(3)]],
    constant const int& ndim [[buffer(4)]],
    constant const size_t& size [[buffer(5)]],
    uint index [[thread_position_in_grid]]) {
  if (index < size) {
    out[index] = convert<U>(in[elem_to_loc(index, shape, in_strides, ndim)]);
  }
}

template <typename T, typename U>
[[kernel]] void copy_gg(
    device const T* in [[buffer(0)]],
    device U* out [[buffer(1)]],
    constant const int* shape [[buffer(2)]],
    constant const int64_t* in_strides [[buffer(3)]],
    constant const int64_t* out_strides [[buffer(4)]],
    constant const int& ndim [[buffer(5)]],
    constant const size_t& size [[buffer(6)]],
    uint index [[thread_position_in_grid]]) {
  if (index < size) {
    int64_t in_loc = elem_to_loc(index, shape, in_strides, ndim);
    int64_t out_loc = elem_to_loc(index, shape, out_strides, ndim);
    out[out_loc] = convert<U>(in[in_loc]);
  }
}
