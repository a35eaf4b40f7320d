// Non-template kernels in every spelling, and things that emit nothing.
#include "mlx/backend/metal/kernels/utils.h"

// A helper: not a kernel.
inline float twice(float x) {
  return 2.0f * x;
}

[[kernel]] void fill_ones(
    device float* out [[buffer(0)]],
    uint index [[thread_position_in_grid]]) {
  out[index] = 1.0f;
}

// The Metal function qualifier, as most non-MLX projects write kernels.
kernel void scale_by_two(
    device float* data [[buffer(0)]],
    uint index [[thread_position_in_grid]]) {
  data[index] = twice(data[index]);
}

[[kernel, max_total_threads_per_threadgroup(1024)]] void clamp_unit(
    device float* data [[buffer(0)]],
    uint index [[thread_position_in_grid]]) {
  data[index] = metal::clamp(data[index], 0.0f, 1.0f);
}

// A host name given to a non-template kernel replaces its own name.
[[host_name("renamed" "_kernel")]] kernel void internal_name(
    device float* data [[buffer(0)]],
    uint index [[thread_position_in_grid]]) {
  data[index] = -data[index];
}

// A prototype and a template that is never instantiated: neither is emitted.
[[kernel]] void declared_only(device float* data [[buffer(0)]]);

template <typename T>
[[kernel]] void never_instantiated(
    device T* data [[buffer(0)]],
    uint index [[thread_position_in_grid]]) {
  data[index] = T(0);
}

template <typename T>
[[kernel]] void copy_values(
    device const T* in [[buffer(0)]],
    device T* out [[buffer(1)]],
    uint index [[thread_position_in_grid]]) {
  out[index] = in[index];
}

// "\x5f" is '_': the host name is decoded as C++ decodes the literal.
instantiate_kernel("copy_values\x5f" "float32", copy_values, float)
instantiate_kernel("copy_values_" "int32", copy_values, int32_t)

#pragma METAL internals : enable
[[kernel]] void after_pragma(
    device uint* data [[buffer(0)]],
    uint index [[thread_position_in_grid]]) {
  data[index] = index;
}
