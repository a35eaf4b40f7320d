// Binary kernel templates: both inputs contiguous, or the first one a scalar.
#pragma once

#include "mlx/backend/metal/kernels/utils.h"

template <typename T, typename U, typename Op>
[[kernel]] void binary_vv(
    device const T* a [[buffer(0)]],
    device const T* b [[buffer(1)]],
    device U* c [[buffer(2)]],
    uint index [[thread_position_in_grid]]) {
  c[index] = static_cast<U>(Op()(a[index], b[index]));
}

template <typename T, typename U, typename Op>
[[kernel]] void binary_sv(
    device const T* a [[buffer(0)]],
    device const T* b [[buffer(1)]],
    device U* c [[buffer(2)]],
    uint index [[thread_position_in_grid]]) {
  c[index] = static_cast<U>(Op()(a[0], b[index]));
}
