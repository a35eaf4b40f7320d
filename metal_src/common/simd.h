// SIMD-group and threadgroup reduction helpers for any dtype in the vocabulary.
#pragma once

#include <metal_stdlib>

#include "common/defines.h"
#include "common/types.h"

// simd_shuffle_down for every dtype: Metal shuffles 16/32-bit scalars natively, so 64-bit values
// go as two 32-bit halves, 8-bit values and bool widen to 16 bits, bfloat goes through float.
template <typename T>
inline T shuffle_down(T value, ushort delta) {
  if constexpr (sizeof(T) == 8) {
    ulong bits = as_type<ulong>(value);
    uint lo = metal::simd_shuffle_down(static_cast<uint>(bits), delta);
    uint hi = metal::simd_shuffle_down(static_cast<uint>(bits >> 32), delta);
    return as_type<T>((static_cast<ulong>(hi) << 32) | static_cast<ulong>(lo));
  } else if constexpr (metal::is_same_v<T, bool>) {
    return metal::simd_shuffle_down(static_cast<ushort>(value), delta) != 0;
  } else if constexpr (sizeof(T) == 1) {
    return static_cast<T>(metal::simd_shuffle_down(static_cast<short>(value), delta));
  } else if constexpr (metal::is_same_v<T, bfloat16_t>) {
    return static_cast<T>(metal::simd_shuffle_down(static_cast<float>(value), delta));
  } else {
    return metal::simd_shuffle_down(value, delta);
  }
}

// Tree reduction within a SIMD-group; lane 0 ends up holding the result.
template <typename Op, typename U>
inline U simd_reduce(U value, uint simd_size) {
  Op op;
  for (uint delta = simd_size / 2; delta > 0; delta /= 2) {
    value = op(value, shuffle_down(value, static_cast<ushort>(delta)));
  }
  return value;
}

// Reduction over a whole threadgroup: SIMD-groups reduce, lane 0 of each publishes to `scratch`,
// the first SIMD-group reduces the partials. Thread 0 holds the result.
template <typename Op, typename U>
inline U threadgroup_reduce(
    U value,
    threadgroup U* scratch,
    uint simd_lane,
    uint simd_group,
    uint simd_size,
    uint n_simd_groups) {
  value = simd_reduce<Op>(value, simd_size);
  if (simd_lane == 0) {
    scratch[simd_group] = value;
  }
  metal::threadgroup_barrier(metal::mem_flags::mem_threadgroup);
  if (simd_group == 0) {
    value = simd_lane < n_simd_groups ? scratch[simd_lane] : Op::template init<U>();
    value = simd_reduce<Op>(value, simd_size);
  }
  return value;
}
