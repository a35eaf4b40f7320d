// Row reductions: one threadgroup per row, each thread folds a strided slice, then the
// simdgroups and the threadgroup combine their partial results.
#pragma once

#include "kpkg/common.h"

namespace kpkg {

constant constexpr uint kMaxSimdgroups = 32;

struct Sum {
  template <typename T>
  static T init() { return T(0); }
  template <typename T>
  static T fold(T a, T b) { return a + b; }
  template <typename T>
  static T simd(T a) { return metal::simd_sum(a); }
};

struct Max {
  template <typename T>
  static T init() { return Limits<T>::lowest(); }
  template <typename T>
  static T fold(T a, T b) { return metal::max(a, b); }
  template <typename T>
  static T simd(T a) { return metal::simd_max(a); }
};

// T is the storage type; partial results are kept in float.
template <typename T, typename Op>
[[kernel]] void row_reduce(
    device const T* x [[buffer(0)]],
    device T* out [[buffer(1)]],
    constant uint& row_size [[buffer(2)]],
    uint row [[threadgroup_position_in_grid]],
    uint lid [[thread_position_in_threadgroup]],
    uint threads [[threads_per_threadgroup]],
    uint simd_lane [[thread_index_in_simdgroup]],
    uint simd_group [[simdgroup_index_in_threadgroup]]) {
  threadgroup float partial[kMaxSimdgroups];
  device const T* in = x + row * row_size;
  float acc = Op::template init<float>();
  for (uint i = lid; i < row_size; i += threads) {
    acc = Op::fold(acc, static_cast<float>(in[i]));
  }
  acc = Op::simd(acc);
  if (simd_lane == 0) {
    partial[simd_group] = acc;
  }
  threadgroup_barrier(metal::mem_flags::mem_threadgroup);
  if (simd_group == 0) {
    const uint groups = (threads + 31) / 32;
    acc = simd_lane < groups ? partial[simd_lane] : Op::template init<float>();
    acc = Op::simd(acc);
    if (simd_lane == 0) {
      out[row] = static_cast<T>(acc);
    }
  }
}

}  // namespace kpkg
