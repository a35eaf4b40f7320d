// Reductions of T into U with Op (common/reduce_ops.h).
//   reduce_all        each threadgroup reduces `per_group` consecutive elements to out[group];
//                     the host runs it again on the partials until one value is left
//   reduce_row<D>     one threadgroup per output; the reduced elements are a contiguous row at
//                     the offset of output `group` in a D-rank view of the kept axes
//   reduce_col<D>     one thread per output; reduces `n_reduce` elements spaced `reduce_stride`
//                     apart, the kept axes forming a D-rank view with `reduce_stride` columns
#pragma once

#include <metal_stdlib>

#include "common/defines.h"
#include "common/indexing.h"
#include "common/reduce_ops.h"
#include "common/simd.h"

template <typename T, typename U, typename Op>
[[kernel]] void reduce_all(
    device const T* in [[buffer(0)]],
    device U* out [[buffer(1)]],
    constant const size_t& size [[buffer(2)]],
    constant const size_t& per_group [[buffer(3)]],
    uint group [[threadgroup_position_in_grid]],
    uint lid [[thread_position_in_threadgroup]],
    uint group_size [[threads_per_threadgroup]],
    uint simd_lane [[thread_index_in_simdgroup]],
    uint simd_group [[simdgroup_index_in_threadgroup]],
    uint simd_size [[threads_per_simdgroup]]) {
  threadgroup U scratch[MAX_SIMDGROUPS];
  Op op;
  size_t start = static_cast<size_t>(group) * per_group;
  size_t stop = metal::min(start + per_group, size);
  U acc = Op::template init<U>();
  for (size_t i = start + lid; i < stop; i += group_size) {
    acc = op(acc, convert<U>(in[i]));
  }
  uint n_simd_groups = (group_size + simd_size - 1) / simd_size;
  acc = threadgroup_reduce<Op>(acc, scratch, simd_lane, simd_group, simd_size, n_simd_groups);
  if (lid == 0) {
    out[group] = acc;
  }
}

template <typename T, typename U, typename Op, int D>
[[kernel]] void reduce_row(
    device const T* in [[buffer(0)]],
    device U* out [[buffer(1)]],
    constant const size_t& row_size [[buffer(2)]],
    constant const int* outer_shape [[buffer(3)]],
    constant const int64_t* outer_strides [[buffer(4)]],
    uint group [[threadgroup_position_in_grid]],
    uint lid [[thread_position_in_threadgroup]],
    uint group_size [[threads_per_threadgroup]],
    uint simd_lane [[thread_index_in_simdgroup]],
    uint simd_group [[simdgroup_index_in_threadgroup]],
    uint simd_size [[threads_per_simdgroup]]) {
  threadgroup U scratch[MAX_SIMDGROUPS];
  Op op;
  device const T* row = in + elem_to_loc_nd<D>(group, outer_shape, outer_strides);
  U acc = Op::template init<U>();
  // Each thread reads WORK_PER_THREAD consecutive elements per step for wider loads.
  size_t step = static_cast<size_t>(group_size) * WORK_PER_THREAD;
  for (size_t base = static_cast<size_t>(lid) * WORK_PER_THREAD; base < row_size; base += step) {
#pragma unroll
    for (int k = 0; k < WORK_PER_THREAD; ++k) {
      if (base + k < row_size) {
        acc = op(acc, convert<U>(row[base + k]));
      }
    }
  }
  uint n_simd_groups = (group_size + simd_size - 1) / simd_size;
  acc = threadgroup_reduce<Op>(acc, scratch, simd_lane, simd_group, simd_size, n_simd_groups);
  if (lid == 0) {
    out[group] = acc;
  }
}

template <typename T, typename U, typename Op, int D>
[[kernel]] void reduce_col(
    device const T* in [[buffer(0)]],
    device U* out [[buffer(1)]],
    constant const size_t& n_reduce [[buffer(2)]],
    constant const size_t& reduce_stride [[buffer(3)]],
    constant const int* outer_shape [[buffer(4)]],
    constant const int64_t* outer_strides [[buffer(5)]],
    constant const size_t& n_outputs [[buffer(6)]],
    uint index [[thread_position_in_grid]]) {
  if (index >= n_outputs) {
    return;
  }
  Op op;
  size_t column = index % reduce_stride;
  device const T* base = in + elem_to_loc_nd<D>(index / reduce_stride, outer_shape, outer_strides) + column;
  U acc = Op::template init<U>();
  for (size_t r = 0; r < n_reduce; ++r) {
    acc = op(acc, convert<U>(base[r * reduce_stride]));
  }
  out[index] = acc;
}
