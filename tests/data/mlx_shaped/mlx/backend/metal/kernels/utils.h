// Helpers every kernel header includes, where MLX keeps its utils.h.
#pragma once

#include <metal_stdlib>

#include "mlx/backend/metal/kernels/defines.h"

using namespace metal;

// The memory offset of element `elem` of a strided array of `ndim` dimensions.
template <typename IdxT = int64_t>
inline IdxT elem_to_loc(
    uint elem,
    constant const int* shape,
    constant const int64_t* strides,
    int ndim) {
  IdxT loc = 0;
  for (int i = ndim - 1; i >= 0 && elem > 0; --i) {
    loc += IdxT(elem % uint(shape[i])) * IdxT(strides[i]);
    elem /= uint(shape[i]);
  }
  return loc;
}
