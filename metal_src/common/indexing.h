// Element index -> memory offset for strided (non-contiguous) arrays.
#pragma once

#include <metal_stdlib>

// Offset of row-major element `elem` of an array with `ndim` dims of `shape`/`strides`.
inline int64_t elem_to_loc(
    size_t elem,
    constant const int* shape,
    constant const int64_t* strides,
    int ndim) {
  int64_t loc = 0;
  for (int i = ndim - 1; i >= 0 && elem > 0; --i) {
    size_t dim = static_cast<size_t>(shape[i]);
    loc += static_cast<int64_t>(elem % dim) * strides[i];
    elem /= dim;
  }
  return loc;
}

// The same with the rank fixed at compile time so the loop unrolls (the g1/g2/g3 forms).
template <int NDIM>
inline int64_t elem_to_loc_nd(
    size_t elem,
    constant const int* shape,
    constant const int64_t* strides) {
  int64_t loc = 0;
#pragma unroll
  for (int i = NDIM - 1; i >= 0; --i) {
    size_t dim = static_cast<size_t>(shape[i]);
    loc += static_cast<int64_t>(elem % dim) * strides[i];
    elem /= dim;
  }
  return loc;
}
