// A kernel template no entry file instantiates, as MLX's indexing/scatter.h: the host writes
// its instantiations at run time, so no metallib holds it and every JIT build embeds this
// header.
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
