// Gather: out[i, j] = src[slice j at the position given by index row i].
//
// NIDX index arrays (IdxT, n_indices each) index the source along `axes`; every index row
// selects a slice of `slice_sizes` (1 along indexed axes). One thread per output element,
// i = index / slice_size, j = index % slice_size.
#pragma once

#include <metal_stdlib>

#include "common/defines.h"
#include "common/gather_index.h"
#include "common/indexing.h"

template <typename T, typename IdxT, int NIDX>
[[kernel]] void gather(
    device const T* src [[buffer(0)]],
    device const IdxT* indices [[buffer(1)]],
    device T* out [[buffer(2)]],
    constant const int* src_shape [[buffer(3)]],
    constant const int64_t* src_strides [[buffer(4)]],
    constant const int& src_ndim [[buffer(5)]],
    constant const int* slice_sizes [[buffer(6)]],
    constant const int* axes [[buffer(7)]],
    constant const size_t& n_indices [[buffer(8)]],
    constant const size_t& slice_size [[buffer(9)]],
    uint index [[thread_position_in_grid]]) {
  size_t i = index / slice_size;
  size_t j = index % slice_size;
  if (i >= n_indices) {
    return;
  }
  int64_t base = indexed_offset<IdxT, NIDX>(indices, n_indices, i, src_shape, src_strides, axes);
  int64_t within = elem_to_loc(j, slice_sizes, src_strides, src_ndim);
  out[index] = src[base + within];
}
