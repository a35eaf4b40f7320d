// Kernel templates that no entry file instantiates, as in MLX's indexing/scatter.h: a host
// instantiates them in source it compiles at run time, so no metallib holds them and every
// variant embeds this header.
#pragma once

#include "mlx/backend/metal/kernels/utils.h"

template <typename T, typename IdxT>
[[kernel]] void scatter_rows(
    device const T* updates [[buffer(0)]],
    device const IdxT* rows [[buffer(1)]],
    device T* out [[buffer(2)]],
    constant const int& row_size [[buffer(3)]],
    uint2 index [[thread_position_in_grid]]) {
  out[rows[index.y] * row_size + index.x] = updates[index.y * row_size + index.x];
}

template <typename T>
[[kernel]] void fill_rows(
    device T* out [[buffer(0)]],
    constant const T& value [[buffer(1)]],
    uint index [[thread_position_in_grid]]) {
  out[index] = value;
}
