// Unary kernel templates: contiguous and strided (general) layouts.
#pragma once

#include "mlx/backend/metal/kernels/utils.h"

template <typename T, typename U, typename Op>
[[kernel]] void unary_v(
    device const T* in [[buffer(0)]],
    device U* out [[buffer(1)]],
    uint index [[thread_position_in_grid]]) {
  out[index] = static_cast<U>(Op()(in[index]));
}

template <typename T, typename U, typename Op>
[[kernel]] void unary_g(
    device const T* in [[buffer(0)]],
    device U* out [[buffer(1)]],
    constant const int* in_shape [[buffer(2)]],
    constant const int64_t* in_strides [[buffer(3)]],
    constant const int& ndim [[buffer(4)]],
    uint index [[thread_position_in_grid]]) {
  int64_t idx = elem_to_loc(index, in_shape, in_strides, ndim);
  out[index] = static_cast<U>(Op()(in[idx]));
}
