// Softmax (LOG = false) or log-softmax (LOG = true) over contiguous rows of `axis_size`,
// one threadgroup per row, arithmetic in float.
//   softmax_block    each thread keeps up to WORK_PER_THREAD elements in registers: one read
//                    and one write per element; needs axis_size <= group_size * WORK_PER_THREAD
//   softmax_looped   any row length: reads the row three times (max, sum, write)
#pragma once

#include <metal_stdlib>

#include "common/defines.h"
#include "common/reduce_ops.h"
#include "common/simd.h"

template <bool LOG>
inline float softmax_out(float x, float row_max, float row_sum) {
  if constexpr (LOG) {
    return (x - row_max) - metal::log(row_sum);
  } else {
    return metal::exp(x - row_max) / row_sum;
  }
}

template <typename T, bool LOG>
[[kernel]] void softmax_block(
    device const T* in [[buffer(0)]],
    device T* out [[buffer(1)]],
    constant const int& axis_size [[buffer(2)]],
    uint row [[threadgroup_position_in_grid]],
    uint lid [[thread_position_in_threadgroup]],
    uint group_size [[threads_per_threadgroup]],
    uint simd_lane [[thread_index_in_simdgroup]],
    uint simd_group [[simdgroup_index_in_threadgroup]],
    uint simd_size [[threads_per_simdgroup]]) {
  threadgroup float scratch[MAX_SIMDGROUPS];
  threadgroup float shared_value[1];
  uint n_simd_groups = (group_size + simd_size - 1) / simd_size;
  size_t offset = static_cast<size_t>(row) * static_cast<size_t>(axis_size);
  float values[WORK_PER_THREAD];
  float local_max = ReduceMax::init<float>();
#pragma unroll
  for (int k = 0; k < WORK_PER_THREAD; ++k) {
    int i = static_cast<int>(lid) * WORK_PER_THREAD + k;
    values[k] = i < axis_size ? static_cast<float>(in[offset + i]) : ReduceMax::init<float>();
    local_max = metal::max(local_max, values[k]);
  }
  float row_max = threadgroup_reduce<ReduceMax>(local_max, scratch, simd_lane, simd_group, simd_size, n_simd_groups);
  if (lid == 0) {
    shared_value[0] = row_max;
  }
  metal::threadgroup_barrier(metal::mem_flags::mem_threadgroup);
  row_max = shared_value[0];
  metal::threadgroup_barrier(metal::mem_flags::mem_threadgroup);
  float local_sum = 0.0f;
#pragma unroll
  for (int k = 0; k < WORK_PER_THREAD; ++k) {
    int i = static_cast<int>(lid) * WORK_PER_THREAD + k;
    local_sum += i < axis_size ? metal::exp(values[k] - row_max) : 0.0f;
  }
  float row_sum = threadgroup_reduce<ReduceSum>(local_sum, scratch, simd_lane, simd_group, simd_size, n_simd_groups);
  if (lid == 0) {
    shared_value[0] = row_sum;
  }
  metal::threadgroup_barrier(metal::mem_flags::mem_threadgroup);
  row_sum = shared_value[0];
#pragma unroll
  for (int k = 0; k < WORK_PER_THREAD; ++k) {
    int i = static_cast<int>(lid) * WORK_PER_THREAD + k;
    if (i < axis_size) {
      out[offset + i] = static_cast<T>(softmax_out<LOG>(values[k], row_max, row_sum));
    }
  }
}

template <typename T, bool LOG>
[[kernel]] void softmax_looped(
    device const T* in [[buffer(0)]],
    device T* out [[buffer(1)]],
    constant const int& axis_size [[buffer(2)]],
    uint row [[threadgroup_position_in_grid]],
    uint lid [[thread_position_in_threadgroup]],
    uint group_size [[threads_per_threadgroup]],
    uint simd_lane [[thread_index_in_simdgroup]],
    uint simd_group [[simdgroup_index_in_threadgroup]],
    uint simd_size [[threads_per_simdgroup]]) {
  threadgroup float scratch[MAX_SIMDGROUPS];
  threadgroup float shared_value[1];
  uint n_simd_groups = (group_size + simd_size - 1) / simd_size;
  device const T* x = in + static_cast<size_t>(row) * static_cast<size_t>(axis_size);
  device T* y = out + static_cast<size_t>(row) * static_cast<size_t>(axis_size);
  float local_max = ReduceMax::init<float>();
  for (int i = static_cast<int>(lid); i < axis_size; i += static_cast<int>(group_size)) {
    local_max = metal::max(local_max, static_cast<float>(x[i]));
  }
  float row_max = threadgroup_reduce<ReduceMax>(local_max, scratch, simd_lane, simd_group, simd_size, n_simd_groups);
  if (lid == 0) {
    shared_value[0] = row_max;
  }
  metal::threadgroup_barrier(metal::mem_flags::mem_threadgroup);
  row_max = shared_value[0];
  metal::threadgroup_barrier(metal::mem_flags::mem_threadgroup);
  float local_sum = 0.0f;
  for (int i = static_cast<int>(lid); i < axis_size; i += static_cast<int>(group_size)) {
    local_sum += metal::exp(static_cast<float>(x[i]) - row_max);
  }
  float row_sum = threadgroup_reduce<ReduceSum>(local_sum, scratch, simd_lane, simd_group, simd_size, n_simd_groups);
  if (lid == 0) {
    shared_value[0] = row_sum;
  }
  metal::threadgroup_barrier(metal::mem_flags::mem_threadgroup);
  row_sum = shared_value[0];
  for (int i = static_cast<int>(lid); i < axis_size; i += static_cast<int>(group_size)) {
    y[i] = static_cast<T>(softmax_out<LOG>(static_cast<float>(x[i]), row_max, row_sum));
  }
}
